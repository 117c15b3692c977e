//! `grpo_fast._core`: the Python binding of `grpo-fast-core`.
//!
//! This crate only converts: it takes numpy arrays and Python objects apart,
//! runs the core with the GIL released (see [`errors::run`]), and hands the
//! results back as numpy arrays. No algorithm lives here.

mod advantage;
mod errors;
mod options;
mod sandbox;
mod steps;
mod text;
mod verify;

use pyo3::prelude::*;

#[pymodule]
mod _core {
    use pyo3::prelude::*;

    #[pymodule_export]
    use crate::advantage::{compute_advantages, group_ids, AdvantageResult};
    #[pymodule_export]
    use crate::options::{PyExtractOptions, PyVerifyOptions};
    #[pymodule_export]
    use crate::sandbox::{sandbox_isolation, sandbox_run, RunOutcome};
    #[pymodule_export]
    use crate::steps::{check_steps, process_advantages, PyStepOptions};
    #[pymodule_export]
    use crate::threads::{get_num_threads, set_num_threads};
    #[pymodule_export]
    use crate::verify::{
        extract_answer, extract_gold, parse, verify, verify_batch, verify_match, PyRewardSet,
        PyRewardSpec,
    };

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add("__version__", env!("CARGO_PKG_VERSION"))?;
        crate::names::add(m)
    }
}

/// The name tables of the core, as tuples of str (`grpo_fast.names`
/// re-exports them; nothing in Python keeps its own copy).
mod names {
    use grpo_fast_core::advantage::{Estimator, Params, Scale};
    use grpo_fast_core::extract::{Rule, DEFAULT_RULES};
    use grpo_fast_core::reward::RewardKind;
    use grpo_fast_core::steps::{SplitKind, CORRECT, UNCHECKED, WRONG};
    use pyo3::prelude::*;
    use pyo3::types::PyTuple;
    use strum::VariantNames;

    pub fn add(m: &Bound<'_, PyModule>) -> PyResult<()> {
        let py = m.py();
        let default_rules: Vec<&str> = DEFAULT_RULES.iter().map(|r| r.name()).collect();
        for (name, names) in [
            ("ESTIMATORS", Estimator::VARIANTS),
            ("SCALES", Scale::VARIANTS),
            ("RULES", <Rule as VariantNames>::VARIANTS),
            ("DEFAULT_RULES", default_rules.as_slice()),
            ("REWARD_KINDS", RewardKind::VARIANTS),
            ("STEP_SPLITS", SplitKind::VARIANTS),
        ] {
            m.add(name, PyTuple::new(py, names)?)?;
        }
        // The advantage epsilon (std + eps), the core's default: every Python signature reads it.
        m.add("ADVANTAGE_EPS", Params::default().eps)?;
        m.add("STEP_CORRECT", CORRECT)?;
        m.add("STEP_WRONG", WRONG)?;
        m.add("STEP_UNCHECKED", UNCHECKED)?;
        Ok(())
    }
}

mod threads {
    use grpo_fast_core::parallel::{self, MAX_THREADS};
    use pyo3::prelude::*;

    /// Set the number of worker threads of the Rust core (next call on), an
    /// int in [1, 1024].
    #[pyfunction]
    pub fn set_num_threads(n: &Bound<'_, PyAny>) -> PyResult<()> {
        let n = crate::options::count("num_threads", n, 1, MAX_THREADS as u64)?;
        parallel::set_num_threads(n as usize).map_err(crate::errors::to_pyerr)
    }

    /// The number of worker threads the next parallel call will use.
    #[pyfunction]
    pub fn get_num_threads() -> usize {
        grpo_fast_core::parallel::num_threads()
    }
}

#[allow(unused_imports)]
use _core as _;
