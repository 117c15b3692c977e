//! Process supervision: the step checker and token advantages from step
//! rewards.

use grpo_fast_core::process::{self, ProcessParams, StepRewards};
use grpo_fast_core::steps::{self, Split, SplitKind, StepOptions};
use grpo_fast_core::{names, CoreError};
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::advantage::groups_of;
use crate::errors::{invalid, run, to_pyerr};
use crate::options::{count, length, name_arg, tolerance};
use crate::text::{self, type_name, Held};

/// How completions are split into steps and claims compared
/// (`grpo_fast.check_steps` documents the fields; None takes the default).
#[pyclass(frozen, module = "grpo_fast._core", name = "StepOptions")]
pub struct PyStepOptions {
    inner: StepOptions,
    kind: SplitKind,
    pattern: Option<String>,
}

#[pymethods]
impl PyStepOptions {
    #[new]
    #[pyo3(signature = (split=None, pattern=None, rel_tol=None, max_length=None))]
    fn new(
        split: Option<&Bound<'_, PyAny>>,
        pattern: Option<&Bound<'_, PyAny>>,
        rel_tol: Option<&Bound<'_, PyAny>>,
        max_length: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let d = StepOptions::default();
        let kind = match split {
            None => SplitKind::Lines,
            Some(v) => name_arg("split", v)?,
        };
        let pattern: Option<String> = match pattern {
            None => None,
            Some(p) => Some(
                p.cast::<PyString>()
                    .map_err(|_| invalid(format!("pattern must be a str, not {}", type_name(p))))?
                    .to_cow()?
                    .into_owned(),
            ),
        };
        let rel_tol = tolerance("rel_tol", rel_tol, d.compare.rel_tol)?;
        let max_len = length("max_length", max_length, d.max_len)?;
        let split = Split::new(kind, pattern.as_deref()).map_err(to_pyerr)?;
        let mut compare = d.compare.clone();
        compare.rel_tol = rel_tol;
        Ok(Self {
            inner: StepOptions {
                split,
                max_len,
                compare,
                ..d
            },
            kind,
            pattern,
        })
    }

    #[getter]
    fn split(&self) -> &'static str {
        self.kind.into()
    }

    #[getter]
    fn pattern(&self) -> Option<String> {
        self.pattern.clone()
    }

    #[getter]
    fn rel_tol(&self) -> f64 {
        self.inner.compare.rel_tol
    }

    #[getter]
    fn max_length(&self) -> usize {
        self.inner.max_len
    }

    fn __repr__(&self) -> String {
        format!(
            "StepOptions(split={:?}, pattern={:?}, rel_tol={}, max_length={})",
            self.split(),
            self.pattern,
            self.inner.compare.rel_tol,
            self.inner.max_len
        )
    }
}

/// `(offsets, starts, ends, labels)` of the steps of each completion, across
/// the core's threads with the GIL released; a completion over the length
/// limit or not valid Unicode has no steps.
#[pyfunction]
#[allow(clippy::type_complexity)]
pub fn check_steps<'py>(
    py: Python<'py>,
    completions: &Bound<'py, PyAny>,
    options: PyRef<'py, PyStepOptions>,
) -> PyResult<(
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i8>>,
)> {
    let opts = &options.inner;
    let held = text::list("completions", completions, opts.max_len)?;
    let texts: Vec<Option<&str>> = held.iter().map(|h| Held::text(h).ok()).collect();
    let out = run(py, || Ok(steps::check_batch(&texts, opts)))?;
    let widen = |v: Vec<u64>| v.into_iter().map(|x| x as i64).collect::<Vec<i64>>();
    Ok((
        widen(out.offsets).into_pyarray(py),
        widen(out.starts).into_pyarray(py),
        widen(out.ends).into_pyarray(py),
        out.labels.into_pyarray(py),
    ))
}

fn slice<'a, T: numpy::Element>(what: &str, arr: &'a PyReadonlyArray1<'_, T>) -> PyResult<&'a [T]> {
    arr.as_slice()
        .map_err(|_| invalid(format!("{what} must be contiguous")))
}

/// `(advantages [N, width], step_advantages [S], mean, std, num_valid)`;
/// the façade `grpo_fast.compute_process_advantages` documents the arguments.
#[pyfunction]
#[pyo3(signature = (step_rewards, step_ends, offsets, group_ids, lengths, width, outcome, scale, eps, unbiased, process_weight))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn process_advantages<'py>(
    py: Python<'py>,
    step_rewards: PyReadonlyArray1<'py, f32>,
    step_ends: PyReadonlyArray1<'py, i64>,
    offsets: PyReadonlyArray1<'py, i64>,
    group_ids: &Bound<'py, PyAny>,
    lengths: PyReadonlyArray1<'py, i64>,
    width: &Bound<'py, PyAny>,
    outcome: Option<PyReadonlyArray1<'py, f32>>,
    scale: &Bound<'py, PyAny>,
    eps: f64,
    unbiased: bool,
    process_weight: f64,
) -> PyResult<(
    Bound<'py, PyArray2<f32>>,
    Bound<'py, PyArray1<f32>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<i64>>,
)> {
    let width = count("width", width, 0, u32::MAX as u64)? as usize;
    let scale_name = scale
        .cast::<PyString>()
        .map_err(|_| invalid(format!("scale must be a str, not {}", type_name(scale))))?;
    let params = ProcessParams {
        scale: names::parse("scale", &scale_name.to_cow()?).map_err(to_pyerr)?,
        eps,
        unbiased,
        process_weight,
    };
    let groups = groups_of(py, group_ids)?;
    let steps = StepRewards {
        rewards: slice("step_rewards", &step_rewards)?,
        ends: slice("step_ends", &step_ends)?,
        offsets: slice("offsets", &offsets)?,
    };
    let lengths = slice("lengths", &lengths)?;
    let outcome = match &outcome {
        Some(o) => Some(slice("outcome", o)?),
        None => None,
    };
    let n = groups.len();
    let out = run(py, || {
        process::process_advantages(&steps, &groups, lengths, width, outcome, &params)
    })?;
    let grid = Array2::from_shape_vec((n, width), out.advantages)
        .map_err(|e| to_pyerr(CoreError::InvalidParameter(format!("internal shape: {e}"))))?;
    Ok((
        grid.into_pyarray(py),
        out.step_advantages.into_pyarray(py),
        out.mean.into_pyarray(py),
        out.std.into_pyarray(py),
        out.num_valid
            .into_iter()
            .map(i64::from)
            .collect::<Vec<i64>>()
            .into_pyarray(py),
    ))
}
