//! The options that cross the boundary, as typed objects: each checks its
//! values once, in its constructor, and the defaults are the core's
//! (`ExtractOptions::default()`, `VerifyOptions::default()`).

use grpo_fast_core::extract::{ExtractOptions, Rule};
use grpo_fast_core::names;
use grpo_fast_core::verify::VerifyOptions;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyString};

use crate::errors::{invalid, to_pyerr};
use crate::text::{shown, type_name};

/// An integer option in `[min, max]`; every failure (a negative, a huge
/// int such as `2**70`, a non-int, a bool) is an `InvalidInputError`, never
/// an `OverflowError` or `TypeError`.
pub fn count(name: &str, value: &Bound<'_, PyAny>, min: u64, max: u64) -> PyResult<u64> {
    let n = if value.is_instance_of::<PyBool>() {
        None
    } else {
        value
            .extract::<u64>()
            .ok()
            .filter(|n| (min..=max).contains(n))
    };
    n.ok_or_else(|| {
        let expected = if max == u64::MAX {
            format!("an int >= {min} (below 2**64)")
        } else {
            format!("an int in [{min}, {max}]")
        };
        invalid(format!("{name} must be {expected}, not {}", shown(value)))
    })
}

/// The variant of `T` named by a Python `str` (aliases included).
pub fn name_arg<T: std::str::FromStr + strum::VariantNames>(
    what: &'static str,
    obj: &Bound<'_, PyAny>,
) -> PyResult<T> {
    let name = obj.cast::<PyString>().map_err(|_| {
        invalid(format!(
            "{what} must be a str, one of {}; not {}",
            T::VARIANTS.join(", "),
            type_name(obj)
        ))
    })?;
    names::parse(what, &name.to_cow()?).map_err(to_pyerr)
}

pub fn length(name: &str, value: Option<&Bound<'_, PyAny>>, default: usize) -> PyResult<usize> {
    match value {
        None => Ok(default),
        Some(v) => Ok(count(name, v, 0, usize::MAX as u64)? as usize),
    }
}

fn rules_of(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<Rule>>> {
    let Some(value) = value else {
        return Ok(None);
    };
    let not_names = || {
        invalid(format!(
            "rules must be a sequence of rule names, not {}",
            type_name(value)
        ))
    };
    if value.is_instance_of::<PyString>() {
        return Err(not_names());
    }
    let items = value.try_iter().map_err(|_| not_names())?;
    let mut rules = Vec::new();
    for item in items {
        let item = item?;
        let name = item.cast::<PyString>().map_err(|_| not_names())?;
        rules.push(names::parse::<Rule>("extraction rule", &name.to_cow()?).map_err(to_pyerr)?);
    }
    Ok(Some(rules))
}

/// A bool option: `True` / `False` (numpy's too); a truthy `"no"` or `0.5`
/// is a mistake, not a yes.
pub fn flag(name: &str, value: Option<&Bound<'_, PyAny>>, default: bool) -> PyResult<bool> {
    let Some(v) = value else {
        return Ok(default);
    };
    if let Ok(b) = v.cast::<PyBool>() {
        return Ok(b.is_true());
    }
    let t = v.get_type();
    let numpy_bool = t
        .module()
        .is_ok_and(|m| m.to_cow().is_ok_and(|m| m == "numpy"))
        && t.name()
            .is_ok_and(|n| n.to_cow().is_ok_and(|n| n == "bool" || n == "bool_"));
    if numpy_bool {
        return v.is_truthy();
    }
    Err(invalid(format!(
        "{name} must be True or False, not {}",
        shown(v)
    )))
}

/// A tolerance option: a finite number >= 0 (a bool is a mistake, not 0 or 1).
pub fn tolerance(name: &str, value: Option<&Bound<'_, PyAny>>, default: f64) -> PyResult<f64> {
    let Some(v) = value else {
        return Ok(default);
    };
    v.extract::<f64>()
        .ok()
        .filter(|x| !v.is_instance_of::<PyBool>() && x.is_finite() && *x >= 0.0)
        .ok_or_else(|| {
            invalid(format!(
                "{name} must be a finite number >= 0, not {}",
                shown(v)
            ))
        })
}

fn extract_options(
    rules: Option<&Bound<'_, PyAny>>,
    max_length: Option<&Bound<'_, PyAny>>,
    tail_length: Option<&Bound<'_, PyAny>>,
    think: Option<&Bound<'_, PyAny>>,
) -> PyResult<ExtractOptions> {
    let d = ExtractOptions::default();
    Ok(ExtractOptions {
        rules: rules_of(rules)?.unwrap_or(d.rules.clone()),
        max_len: length("max_length", max_length, d.max_len)?,
        tail_len: length("tail_length", tail_length, d.tail_len)?,
        think: flag("think", think, d.think)?,
        ..d
    })
}

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

fn rule_names(rules: &[Rule]) -> Vec<&'static str> {
    rules.iter().map(|r| r.name()).collect()
}

/// Where and how far to look for an answer (`grpo_fast.extract_answer`
/// documents the fields; None takes the default).
#[pyclass(frozen, module = "grpo_fast._core", name = "ExtractOptions")]
pub struct PyExtractOptions {
    pub inner: ExtractOptions,
}

#[pymethods]
impl PyExtractOptions {
    #[new]
    #[pyo3(signature = (rules=None, max_length=None, tail_length=None, think=None))]
    fn new(
        rules: Option<&Bound<'_, PyAny>>,
        max_length: Option<&Bound<'_, PyAny>>,
        tail_length: Option<&Bound<'_, PyAny>>,
        think: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        Ok(Self {
            inner: extract_options(rules, max_length, tail_length, think)?,
        })
    }

    #[getter]
    fn rules(&self) -> Vec<&'static str> {
        rule_names(&self.inner.rules)
    }

    #[getter]
    fn max_length(&self) -> usize {
        self.inner.max_len
    }

    #[getter]
    fn tail_length(&self) -> usize {
        self.inner.tail_len
    }

    #[getter]
    fn think(&self) -> bool {
        self.inner.think
    }

    fn __repr__(&self) -> String {
        format!(
            "ExtractOptions(rules={:?}, max_length={}, tail_length={}, think={})",
            self.rules(),
            self.inner.max_len,
            self.inner.tail_len,
            py_bool(self.inner.think)
        )
    }
}

/// How a prediction is compared with a gold (`grpo_fast.verify` documents
/// the fields; None takes the default).
#[pyclass(frozen, module = "grpo_fast._core", name = "VerifyOptions")]
pub struct PyVerifyOptions {
    pub inner: VerifyOptions,
}

#[pymethods]
impl PyVerifyOptions {
    #[new]
    #[pyo3(signature = (rel_tol=None, allow_set_relation_comp=None, rules=None, max_length=None, tail_length=None, think=None))]
    fn new(
        rel_tol: Option<&Bound<'_, PyAny>>,
        allow_set_relation_comp: Option<&Bound<'_, PyAny>>,
        rules: Option<&Bound<'_, PyAny>>,
        max_length: Option<&Bound<'_, PyAny>>,
        tail_length: Option<&Bound<'_, PyAny>>,
        think: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let d = VerifyOptions::default();
        let rel_tol = tolerance("rel_tol", rel_tol, d.rel_tol)?;
        let allow_set_relation_comp = match allow_set_relation_comp {
            None => d.allow_set_relation_comp,
            Some(v) => v.is_truthy()?,
        };
        Ok(Self {
            inner: VerifyOptions {
                extract: extract_options(rules, max_length, tail_length, think)?,
                rel_tol,
                allow_set_relation_comp,
                ..d
            },
        })
    }

    #[getter]
    fn rel_tol(&self) -> f64 {
        self.inner.rel_tol
    }

    #[getter]
    fn allow_set_relation_comp(&self) -> bool {
        self.inner.allow_set_relation_comp
    }

    #[getter]
    fn rules(&self) -> Vec<&'static str> {
        rule_names(&self.inner.extract.rules)
    }

    #[getter]
    fn max_length(&self) -> usize {
        self.inner.extract.max_len
    }

    #[getter]
    fn tail_length(&self) -> usize {
        self.inner.extract.tail_len
    }

    #[getter]
    fn think(&self) -> bool {
        self.inner.extract.think
    }

    fn __repr__(&self) -> String {
        format!(
            "VerifyOptions(rel_tol={}, allow_set_relation_comp={}, rules={:?}, max_length={}, tail_length={}, think={})",
            self.inner.rel_tol,
            py_bool(self.inner.allow_set_relation_comp),
            self.rules(),
            self.inner.extract.max_len,
            self.inner.extract.tail_len,
            py_bool(self.inner.extract.think)
        )
    }
}

/// Per-item flags: `None`, one bool for every item, or a sequence of bools
/// (a list, a tuple or a 1-D numpy array), one per item (the core checks
/// the length).
pub fn flags(
    name: &str,
    value: Option<&Bound<'_, PyAny>>,
    n: usize,
) -> PyResult<Option<Vec<bool>>> {
    let Some(v) = value.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    if v.is_instance_of::<PyString>() {
        return Err(invalid(format!(
            "{name} must be a bool or a sequence of bools, not {}",
            shown(v)
        )));
    }
    if let Ok(b) = flag(name, Some(v), false) {
        return Ok(b.then(|| vec![true; n]));
    }
    let items = v.try_iter().map_err(|_| {
        invalid(format!(
            "{name} must be a bool or a sequence of bools, not {}",
            shown(v)
        ))
    })?;
    let mut out = Vec::new();
    for (i, item) in items.enumerate() {
        out.push(flag(&format!("{name}[{i}]"), Some(&item?), false)?);
    }
    Ok(Some(out))
}
