//! Answer extraction, verification and reward specs.
//!
//! Strings are read in place: the binding keeps a strong reference to every
//! `str` it borrows, and CPython never moves or frees the UTF-8 buffer of a
//! live `str`, so the borrowed slices stay valid while the GIL is released.

use grpo_fast_core::extract::{self, ExtractOptions, Extracted, Rule};
use grpo_fast_core::reward::{self, Golds, RewardSet, Scores, Spec};
use grpo_fast_core::verify::{self as core_verify, Verdict, VerifyOptions};
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use crate::errors::{invalid, run, to_pyerr};

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default()
}

/// Extraction options from the façade's keyword arguments.
pub fn extract_options(
    rules: Option<Vec<String>>,
    max_length: Option<usize>,
    tail_length: Option<usize>,
) -> PyResult<ExtractOptions> {
    let defaults = ExtractOptions::default();
    let rules = match rules {
        None => extract::DEFAULT_RULES.to_vec(),
        Some(names) => names
            .iter()
            .map(|n| {
                Rule::from_name(n).ok_or_else(|| {
                    invalid(format!(
                        "unknown extraction rule {n:?}; expected one of {}",
                        Rule::NAMES
                    ))
                })
            })
            .collect::<PyResult<Vec<Rule>>>()?,
    };
    Ok(ExtractOptions {
        rules,
        max_len: max_length.unwrap_or(defaults.max_len),
        tail_len: tail_length.unwrap_or(defaults.tail_len),
        ..defaults
    })
}

/// The items of a list of `str`, kept alive by `owners`.
pub fn str_list<'a, 'py>(
    what: &str,
    list: &'a Bound<'py, PyAny>,
    owners: &'a mut Vec<Bound<'py, PyString>>,
) -> PyResult<Vec<&'a str>> {
    let list = list.cast::<PyList>().map_err(|_| {
        invalid(format!(
            "{what} must be a list of str, not {}",
            type_name(list)
        ))
    })?;
    owners.reserve(list.len());
    for (i, item) in list.iter().enumerate() {
        let s = item.cast_into::<PyString>().map_err(|e| {
            invalid(format!(
                "{what}[{i}] is {}; expected a str",
                type_name(e.into_inner().as_any())
            ))
        })?;
        owners.push(s);
    }
    owners.iter().map(|s| s.to_str()).collect()
}

/// Golds: one `str` for all, or a list of `str | None`.
pub fn golds_of<'a, 'py>(
    golds: &'a Bound<'py, PyAny>,
    owners: &'a mut Vec<Option<Bound<'py, PyString>>>,
) -> PyResult<Vec<Option<&'a str>>> {
    if let Ok(s) = golds.cast::<PyString>() {
        owners.push(Some(s.clone()));
    } else if golds.is_none() {
        owners.push(None);
    } else {
        let list = golds.cast::<PyList>().map_err(|_| {
            invalid(format!(
                "golds must be a str or a list of str (None for no gold), not {}",
                type_name(golds)
            ))
        })?;
        for (i, item) in list.iter().enumerate() {
            if item.is_none() {
                owners.push(None);
                continue;
            }
            let s = item.cast_into::<PyString>().map_err(|e| {
                invalid(format!(
                    "golds[{i}] is {}; expected a str or None",
                    type_name(e.into_inner().as_any())
                ))
            })?;
            owners.push(Some(s));
        }
    }
    owners
        .iter()
        .map(|s| s.as_ref().map(|s| s.to_str()).transpose())
        .collect()
}

fn golds_view<'a>(is_one: bool, golds: &'a [Option<&'a str>]) -> Golds<'a> {
    if is_one {
        Golds::One(golds[0])
    } else {
        Golds::Each(golds)
    }
}

fn extracted(e: Option<Extracted<'_>>) -> Option<(Vec<String>, &'static str)> {
    e.map(|e| {
        (
            e.parts.iter().map(|p| (*p).to_owned()).collect(),
            e.rule.name(),
        )
    })
}

/// `(parts, rule)` of the final answer of a completion, or None.
#[pyfunction]
#[pyo3(signature = (text, rules, max_length, tail_length))]
pub fn extract_answer(
    py: Python<'_>,
    text: &str,
    rules: Option<Vec<String>>,
    max_length: Option<usize>,
    tail_length: Option<usize>,
) -> PyResult<Option<(Vec<String>, &'static str)>> {
    let opts = extract_options(rules, max_length, tail_length)?;
    run(py, || Ok(extracted(extract::extract_answer(text, &opts))))
}

/// `(parts, rule)` of a gold answer (a bare gold is the answer itself), or None.
#[pyfunction]
#[pyo3(signature = (text, rules, max_length, tail_length))]
pub fn extract_gold(
    py: Python<'_>,
    text: &str,
    rules: Option<Vec<String>>,
    max_length: Option<usize>,
    tail_length: Option<usize>,
) -> PyResult<Option<(Vec<String>, &'static str)>> {
    let opts = extract_options(rules, max_length, tail_length)?;
    run(py, || Ok(extracted(extract::extract_gold(text, &opts))))
}

fn get<'py, T: FromPyObjectOwned<'py>>(params: &Bound<'py, PyDict>, key: &str) -> PyResult<T> {
    let value = params
        .get_item(key)?
        .ok_or_else(|| invalid(format!("reward spec is missing {key:?}")))?;
    value
        .extract::<T>()
        .map_err(|_| invalid(format!("reward spec parameter {key:?} has the wrong type")))
}

fn spec_of(kind: &str, params: &Bound<'_, PyDict>) -> PyResult<Spec> {
    let extract = |p: &Bound<'_, PyDict>| {
        extract_options(
            get(p, "rules")?,
            get(p, "max_length")?,
            get(p, "tail_length")?,
        )
    };
    match kind {
        "exact" => Ok(Spec::Exact {
            extract: if get::<bool>(params, "extract")? {
                Some(extract(params)?)
            } else {
                None
            },
            case_sensitive: get(params, "case_sensitive")?,
        }),
        "math" => Ok(Spec::Math(verify_options(
            get(params, "rel_tol")?,
            get(params, "allow_set_relation_comp")?,
            extract(params)?,
        )?)),
        "choice" => Ok(Spec::Choice(extract(params)?)),
        "format" => Spec::format(&get::<String>(params, "pattern")?, get(params, "dot_all")?)
            .map_err(to_pyerr),
        "overlong" => {
            let max_len: u32 = get(params, "max_length")?;
            let cache_len: u32 = get(params, "cache_length")?;
            Spec::overlong(max_len, cache_len).map_err(to_pyerr)
        }
        other => Err(invalid(format!(
            "unknown reward kind {other:?}; expected math, exact, choice, format or overlong"
        ))),
    }
}

/// Weighted reward specs, compiled once (regexes included) and applied to
/// whole batches; the façade `grpo_fast.rewards` builds it.
#[pyclass(frozen, name = "RewardSet", module = "grpo_fast._core")]
pub struct PyRewardSet {
    inner: RewardSet,
}

#[pymethods]
impl PyRewardSet {
    #[new]
    fn new(specs: Vec<(String, Bound<'_, PyDict>, f32)>) -> PyResult<Self> {
        let specs = specs
            .iter()
            .map(|(kind, params, weight)| Ok((spec_of(kind, params)?, *weight)))
            .collect::<PyResult<Vec<(Spec, f32)>>>()?;
        Ok(PyRewardSet {
            inner: RewardSet { specs },
        })
    }

    /// `(total [N], columns [n_specs, N])`, float32.
    #[pyo3(signature = (completions, golds, lengths))]
    #[allow(clippy::type_complexity)]
    fn score<'py>(
        &self,
        py: Python<'py>,
        completions: &Bound<'py, PyAny>,
        golds: &Bound<'py, PyAny>,
        lengths: Option<PyReadonlyArray1<'py, i64>>,
    ) -> PyResult<(Bound<'py, PyArray1<f32>>, Bound<'py, PyArray2<f32>>)> {
        let mut owners = Vec::new();
        let texts = str_list("completions", completions, &mut owners)?;
        let mut gold_owners = Vec::new();
        let gold_strs = golds_of(golds, &mut gold_owners)?;
        let is_one = !golds.is_instance_of::<PyList>();
        let lengths: Option<Vec<u32>> = match &lengths {
            None => None,
            Some(arr) => {
                let slice = arr
                    .as_slice()
                    .map_err(|_| invalid("lengths must be contiguous"))?;
                Some(
                    slice
                        .iter()
                        .enumerate()
                        .map(|(i, &l)| {
                            u32::try_from(l).map_err(|_| {
                                invalid(format!(
                                    "lengths[{i}] is {l}; expected a token count in 0..2**32"
                                ))
                            })
                        })
                        .collect::<PyResult<Vec<u32>>>()?,
                )
            }
        };
        let set: &RewardSet = &self.inner;
        let Scores { total, columns } = run(py, || {
            set.score(&texts, golds_view(is_one, &gold_strs), lengths.as_deref())
        })?;
        let n = total.len();
        let flat: Vec<f32> = columns.into_iter().flatten().collect();
        let grid = Array2::from_shape_vec((set.specs.len(), n), flat)
            .map_err(|e| invalid(format!("internal shape error: {e}")))?;
        Ok((total.into_pyarray(py), grid.into_pyarray(py)))
    }

    fn __len__(&self) -> usize {
        self.inner.specs.len()
    }
}

fn verify_options(
    rel_tol: f64,
    allow_set_relation_comp: bool,
    extract: ExtractOptions,
) -> PyResult<VerifyOptions> {
    if !(rel_tol >= 0.0 && rel_tol.is_finite()) {
        return Err(invalid(format!(
            "rel_tol must be a finite number >= 0, not {rel_tol}"
        )));
    }
    Ok(VerifyOptions {
        extract,
        rel_tol,
        allow_set_relation_comp,
        ..VerifyOptions::default()
    })
}

type VerdictTuple = (bool, String, Option<String>, Option<String>);

fn verdict_tuple(v: Verdict) -> VerdictTuple {
    (v.matched, v.reason, v.gold, v.pred)
}

/// `(matched, reason, gold, pred)` of one pair; the façade
/// `grpo_fast.verify` documents the arguments.
#[pyfunction]
#[pyo3(signature = (gold, pred, rel_tol, allow_set_relation_comp, rules, max_length, tail_length))]
#[allow(clippy::too_many_arguments)]
pub fn verify(
    py: Python<'_>,
    gold: &str,
    pred: &str,
    rel_tol: f64,
    allow_set_relation_comp: bool,
    rules: Option<Vec<String>>,
    max_length: Option<usize>,
    tail_length: Option<usize>,
) -> PyResult<VerdictTuple> {
    let opts = verify_options(
        rel_tol,
        allow_set_relation_comp,
        extract_options(rules, max_length, tail_length)?,
    )?;
    run(py, || {
        Ok(verdict_tuple(core_verify::verify(gold, pred, &opts)))
    })
}

/// 1.0 / 0.0 per pair, across the core's threads.
#[pyfunction]
#[pyo3(signature = (golds, preds, rel_tol, allow_set_relation_comp, rules, max_length, tail_length))]
#[allow(clippy::too_many_arguments)]
pub fn verify_batch<'py>(
    py: Python<'py>,
    golds: &Bound<'py, PyAny>,
    preds: &Bound<'py, PyAny>,
    rel_tol: f64,
    allow_set_relation_comp: bool,
    rules: Option<Vec<String>>,
    max_length: Option<usize>,
    tail_length: Option<usize>,
) -> PyResult<Bound<'py, PyArray1<f32>>> {
    let opts = verify_options(
        rel_tol,
        allow_set_relation_comp,
        extract_options(rules, max_length, tail_length)?,
    )?;
    let mut owners = Vec::new();
    let texts = str_list("preds", preds, &mut owners)?;
    let mut gold_owners = Vec::new();
    let gold_strs = golds_of(golds, &mut gold_owners)?;
    let is_one = !golds.is_instance_of::<PyList>();
    let out = run(py, || {
        reward::verify_batch(golds_view(is_one, &gold_strs), &texts, &opts)
    })?;
    Ok(out.into_pyarray(py))
}

/// `(canonical, kind, reason)` of a gold-style text (`canonical` and `kind`
/// are None when it has no value; `reason` says why).
#[pyfunction]
#[pyo3(signature = (text, rules, max_length, tail_length))]
pub fn parse(
    py: Python<'_>,
    text: &str,
    rules: Option<Vec<String>>,
    max_length: Option<usize>,
    tail_length: Option<usize>,
) -> PyResult<(Option<String>, Option<&'static str>, String)> {
    let opts = VerifyOptions {
        extract: extract_options(rules, max_length, tail_length)?,
        ..VerifyOptions::default()
    };
    run(py, || {
        Ok(match core_verify::parse_answer(text, &opts) {
            Ok(v) => (Some(v.to_string()), Some(v.kind()), "ok".to_owned()),
            Err(e) => (None, None, e.to_string()),
        })
    })
}
