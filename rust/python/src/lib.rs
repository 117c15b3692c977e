//! `grpo_fast._core`: the Python binding of `grpo-fast-core`.
//!
//! This crate only converts: it takes numpy arrays and Python objects apart,
//! runs the core with the GIL released (see [`errors::run`]), and hands the
//! results back as numpy arrays. No algorithm lives here.

mod advantage;
mod errors;
mod verify;

use pyo3::prelude::*;

#[pymodule]
mod _core {
    use pyo3::prelude::*;

    #[pymodule_export]
    use crate::advantage::{compute_advantages, group_ids, AdvantageResult};
    #[pymodule_export]
    use crate::threads::{get_num_threads, set_num_threads};
    #[pymodule_export]
    use crate::verify::{extract_answer, extract_gold, parse, verify, verify_batch, PyRewardSet};

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add("__version__", env!("CARGO_PKG_VERSION"))
    }
}

mod threads {
    use pyo3::prelude::*;

    /// Set the number of worker threads of the Rust core (next call on).
    #[pyfunction]
    pub fn set_num_threads(n: usize) -> PyResult<()> {
        grpo_fast_core::parallel::set_num_threads(n).map_err(crate::errors::to_pyerr)
    }

    /// The number of worker threads the next parallel call will use.
    #[pyfunction]
    pub fn get_num_threads() -> usize {
        grpo_fast_core::parallel::num_threads()
    }
}

#[allow(unused_imports)]
use _core as _;
