//! Answer extraction, verification and reward specs.
//!
//! Every text is read through [`crate::text`]: checked against the length
//! limit before it is converted, and a `str` that is not valid Unicode is a
//! non-match, never an exception of a batch call.

use grpo_fast_core::extract::{self, Extracted};
use grpo_fast_core::reward::{self, Cosine, Golds, RewardSet, Scores, Spec};
use grpo_fast_core::verify::{self as core_verify, Text, Verdict, VerifyOptions};
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyString};

use crate::errors::{invalid, run, run_sized, to_pyerr};
use crate::options::{count, flag, flags, PyExtractOptions, PyVerifyOptions};
use crate::text::{self, shown, type_name, Held};

fn extracted(e: Option<Extracted<'_>>) -> Option<(Vec<String>, &'static str)> {
    e.map(|e| {
        (
            e.parts.iter().map(|p| (*p).to_owned()).collect(),
            e.rule.name(),
        )
    })
}

/// `(parts, rule)` of the final answer of a completion, or None (also for a
/// text over the length limit or not valid Unicode).
#[pyfunction]
pub fn extract_answer(
    py: Python<'_>,
    text: &Bound<'_, PyAny>,
    options: PyRef<'_, PyExtractOptions>,
) -> PyResult<Option<(Vec<String>, &'static str)>> {
    let opts = &options.inner;
    let held = text::one("completion", text, opts.max_len)?;
    let Ok(text) = held.text() else {
        return Ok(None);
    };
    // The parts as a reader sees them: markup blanked inside an answer
    // (`{\\color{blue} 36}`) is not returned.
    run(py, || {
        Ok(extract::visible(text, opts).ok().and_then(|shown| {
            // As written: a foreign word folded inside it (rule 13) is returned.
            let found = extract::find_visible(&shown, opts, extract::Hints::default()).ok();
            extracted(found.map(|mut e| {
                for p in &mut e.parts {
                    *p = shown.as_written(p);
                }
                e
            }))
        }))
    })
}

/// `(parts, rule)` of a gold answer (a bare gold is the answer itself), or None.
#[pyfunction]
pub fn extract_gold(
    py: Python<'_>,
    text: &Bound<'_, PyAny>,
    options: PyRef<'_, PyExtractOptions>,
) -> PyResult<Option<(Vec<String>, &'static str)>> {
    let opts = &options.inner;
    let held = text::one("gold", text, opts.max_len)?;
    let Ok(text) = held.text() else {
        return Ok(None);
    };
    run(py, || Ok(extracted(extract::extract_gold(text, opts))))
}

/// `(canonical, kind, reason)` of a gold-style text (`canonical` and `kind`
/// are None when it has no value; `reason` says why).
#[pyfunction]
pub fn parse(
    py: Python<'_>,
    text: &Bound<'_, PyAny>,
    options: PyRef<'_, PyExtractOptions>,
) -> PyResult<(Option<String>, Option<&'static str>, String)> {
    let opts = VerifyOptions {
        extract: options.inner.clone(),
        ..VerifyOptions::default()
    };
    let held = text::one("text", text, opts.extract.max_len)?;
    let text = match held.text() {
        Ok(t) => t,
        Err(core_verify::Unread::TooLong) => {
            return Ok((
                None,
                None,
                "over budget: text longer than the extraction limit".into(),
            ))
        }
        Err(core_verify::Unread::NotUnicode) => {
            return Ok((None, None, "not valid unicode".into()))
        }
    };
    run(py, || {
        Ok(match core_verify::parse_answer(text, &opts) {
            Ok(v) => (Some(v.to_string()), Some(v.kind()), "ok".to_owned()),
            Err(e) => (None, None, e.to_string()),
        })
    })
}

type VerdictTuple = (bool, String, Option<String>, Option<String>);

fn verdict_tuple(v: Verdict) -> VerdictTuple {
    (v.matched, v.reason, v.gold, v.pred)
}

/// The bytes one pair's verification reads: a pair of a few thousand bytes
/// takes a few µs, and releasing the GIL around it cost more than that saves
/// (TRL calls `verify` once per completion).
fn text_bytes(gold: Text<'_>, pred: Text<'_>, prompt: Option<&str>) -> usize {
    gold.map_or(0, str::len) + pred.map_or(0, str::len) + prompt.map_or(0, str::len)
}

/// `(matched, reason, gold, pred)` of one pair; the façade
/// `grpo_fast.verify` documents the arguments.
#[pyfunction]
#[pyo3(signature = (gold, pred, options, truncated=None, prompt=None))]
pub fn verify(
    py: Python<'_>,
    gold: &Bound<'_, PyAny>,
    pred: &Bound<'_, PyAny>,
    options: PyRef<'_, PyVerifyOptions>,
    truncated: Option<&Bound<'_, PyAny>>,
    prompt: Option<String>,
) -> PyResult<VerdictTuple> {
    let opts = &options.inner;
    let truncated = flag("truncated", truncated, false)?;
    let gold = text::one("gold", gold, opts.extract.max_len)?;
    let pred = text::one("pred", pred, opts.extract.max_len)?;
    let (g, p) = (gold.text(), pred.text());
    run_sized(py, text_bytes(g, p, prompt.as_deref()), || {
        Ok(verdict_tuple(core_verify::verify_text(
            g,
            p,
            truncated,
            prompt.as_deref(),
            opts,
        )))
    })
}

/// Whether one pair matches: [`verify`]'s `matched`, with nothing rendered
/// (the façade's `grpo_fast.verify`).
#[pyfunction]
#[pyo3(signature = (gold, pred, options, truncated=None, prompt=None))]
pub fn verify_match(
    py: Python<'_>,
    gold: &Bound<'_, PyAny>,
    pred: &Bound<'_, PyAny>,
    options: PyRef<'_, PyVerifyOptions>,
    truncated: Option<&Bound<'_, PyAny>>,
    prompt: Option<String>,
) -> PyResult<bool> {
    let opts = &options.inner;
    let truncated = flag("truncated", truncated, false)?;
    let gold = text::one("gold", gold, opts.extract.max_len)?;
    let pred = text::one("pred", pred, opts.extract.max_len)?;
    let (g, p) = (gold.text(), pred.text());
    run_sized(py, text_bytes(g, p, prompt.as_deref()), || {
        Ok(core_verify::matches_text(
            g,
            p,
            truncated,
            prompt.as_deref(),
            opts,
        ))
    })
}

/// 1.0 / 0.0 per pair, across the core's threads; a pair with a side that
/// is not read (over the limit, not valid Unicode) is 0.0.
#[pyfunction]
#[pyo3(signature = (golds, preds, options, truncated=None, prompts=None))]
pub fn verify_batch<'py>(
    py: Python<'py>,
    golds: &Bound<'py, PyAny>,
    preds: &Bound<'py, PyAny>,
    options: PyRef<'py, PyVerifyOptions>,
    truncated: Option<&Bound<'py, PyAny>>,
    prompts: Option<Vec<String>>,
) -> PyResult<Bound<'py, PyArray1<f32>>> {
    let opts = &options.inner;
    let limit = opts.extract.max_len;
    let held = text::list("preds", preds, limit)?;
    let truncated = flags("truncated", truncated, held.len())?;
    let gold_held = text::Golds::new(golds, limit)?;
    let texts: Vec<Text<'_>> = held.iter().map(Held::text).collect();
    let gold_texts = gold_held.texts();
    // An unread side cannot match: it is "" to the core (never a match)
    // and its output is set to 0 below.
    let preds: Vec<&str> = texts.iter().map(|t| t.unwrap_or("")).collect();
    let golds: Vec<Option<&str>> = gold_texts
        .iter()
        .map(|g| g.map(|t| t.unwrap_or("")))
        .collect();
    let view = if gold_held.one {
        Golds::One(golds[0])
    } else {
        Golds::Each(&golds)
    };
    let mut out = run(py, || {
        let prompts: Option<Vec<&str>> = prompts
            .as_ref()
            .map(|p| p.iter().map(String::as_str).collect());
        reward::verify_batch(view, &preds, truncated.as_deref(), prompts.as_deref(), opts)
    })?;
    let unread_gold = |i: usize| {
        let g = if gold_held.one {
            &gold_texts[0]
        } else {
            &gold_texts[i]
        };
        matches!(g, Some(Err(_)))
    };
    for (i, v) in out.iter_mut().enumerate() {
        if texts[i].is_err() || unread_gold(i) {
            *v = 0.0;
        }
    }
    Ok(out.into_pyarray(py))
}

/// One reward spec, compiled (regexes included); the façade's spec classes
/// (`grpo_fast.rewards.MathReward`, ...) build it.
#[pyclass(frozen, module = "grpo_fast._core", name = "RewardSpec")]
pub struct PyRewardSpec {
    spec: Spec,
}

#[pymethods]
impl PyRewardSpec {
    /// 1 when the answer is mathematically equal to the gold.
    #[staticmethod]
    fn math(options: PyRef<'_, PyVerifyOptions>) -> Self {
        Self {
            spec: Spec::Math(options.inner.clone()),
        }
    }

    /// 1 when the extracted answer (None: the whole completion) equals the gold.
    #[staticmethod]
    #[pyo3(signature = (case_sensitive, extract=None))]
    fn exact(case_sensitive: bool, extract: Option<PyRef<'_, PyExtractOptions>>) -> Self {
        Self {
            spec: Spec::Exact {
                extract: extract.map(|o| o.inner.clone()),
                case_sensitive,
            },
        }
    }

    /// 1 when the choice letter equals the gold's.
    #[staticmethod]
    fn choice(extract: PyRef<'_, PyExtractOptions>) -> Self {
        Self {
            spec: Spec::Choice(extract.inner.clone()),
        }
    }

    /// 1 when the regex matches the completion.
    #[staticmethod]
    fn format(pattern: &Bound<'_, PyAny>, dot_all: bool) -> PyResult<Self> {
        let pattern = pattern
            .cast::<PyString>()
            .map_err(|_| invalid(format!("pattern must be a str, not {}", type_name(pattern))))?;
        let spec = Spec::format(&pattern.to_cow()?, dot_all).map_err(to_pyerr)?;
        Ok(Self { spec })
    }

    /// DAPO's soft overlong punishment of the token length.
    #[staticmethod]
    fn overlong(max_length: &Bound<'_, PyAny>, cache_length: &Bound<'_, PyAny>) -> PyResult<Self> {
        let max_len = count("max_length", max_length, 0, u64::from(u32::MAX))? as u32;
        let cache_len = count("cache_length", cache_length, 0, u64::from(u32::MAX))? as u32;
        let spec = Spec::overlong(max_len, cache_len).map_err(to_pyerr)?;
        Ok(Self { spec })
    }

    /// Correctness (as `math`) scaled by the token length on a cosine schedule.
    #[staticmethod]
    fn cosine(
        options: PyRef<'_, PyVerifyOptions>,
        max_length: &Bound<'_, PyAny>,
        min_value_wrong: &Bound<'_, PyAny>,
        max_value_wrong: &Bound<'_, PyAny>,
        min_value_correct: &Bound<'_, PyAny>,
        max_value_correct: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let max_len = count("max_length", max_length, 1, u64::from(u32::MAX))? as u32;
        let values = [
            finite("min_value_wrong", min_value_wrong)?,
            finite("max_value_wrong", max_value_wrong)?,
            finite("min_value_correct", min_value_correct)?,
            finite("max_value_correct", max_value_correct)?,
        ];
        let cosine = Cosine::new(options.inner.clone(), max_len, values).map_err(to_pyerr)?;
        Ok(Self {
            spec: Spec::Cosine(Box::new(cosine)),
        })
    }

    /// The n-gram repetition penalty over the completion's words.
    #[staticmethod]
    fn repetition(ngram_size: &Bound<'_, PyAny>, max_penalty: &Bound<'_, PyAny>) -> PyResult<Self> {
        let ngram = count("ngram_size", ngram_size, 1, 1 << 20)? as usize;
        let max_penalty = finite("max_penalty", max_penalty)?;
        if max_penalty > 0.0 {
            return Err(invalid(format!(
                "max_penalty must be <= 0 (a penalty), not {max_penalty}"
            )));
        }
        let spec = Spec::repetition(ngram, max_penalty).map_err(to_pyerr)?;
        Ok(Self { spec })
    }

    /// The spec's kind (one of `REWARD_KINDS`).
    #[getter]
    fn kind(&self) -> &'static str {
        self.spec.kind().into()
    }

    fn __repr__(&self) -> String {
        format!("RewardSpec({})", self.kind())
    }
}

/// A finite float32 option (a bool is a mistake, not 0 or 1).
fn finite(name: &str, value: &Bound<'_, PyAny>) -> PyResult<f32> {
    value
        .extract::<f64>()
        .ok()
        .filter(|x| !value.is_instance_of::<PyBool>() && (*x as f32).is_finite())
        .map(|x| x as f32)
        .ok_or_else(|| {
            invalid(format!(
                "{name} must be a finite number, not {}",
                shown(value)
            ))
        })
}

/// Weighted reward specs applied to whole batches; the façade
/// `grpo_fast.rewards.Rewards` builds it.
#[pyclass(frozen, name = "RewardSet", module = "grpo_fast._core")]
pub struct PyRewardSet {
    inner: RewardSet,
}

#[pymethods]
impl PyRewardSet {
    #[new]
    fn new(specs: Vec<(PyRef<'_, PyRewardSpec>, f64)>) -> PyResult<Self> {
        let specs = specs
            .iter()
            .enumerate()
            .map(|(i, (s, w))| {
                let weight = *w as f32;
                if !weight.is_finite() {
                    return Err(invalid(format!(
                        "specs[{i}].weight must be a finite float32, not {w}"
                    )));
                }
                Ok((s.spec.clone(), weight))
            })
            .collect::<PyResult<Vec<(Spec, f32)>>>()?;
        Ok(PyRewardSet {
            inner: RewardSet { specs },
        })
    }

    /// `(total [N], columns [n_specs, N])`, float32.
    #[pyo3(signature = (completions, golds, lengths, truncated=None, prompts=None))]
    #[allow(clippy::type_complexity)]
    fn score<'py>(
        &self,
        py: Python<'py>,
        completions: &Bound<'py, PyAny>,
        golds: &Bound<'py, PyAny>,
        lengths: Option<PyReadonlyArray1<'py, i64>>,
        truncated: Option<&Bound<'py, PyAny>>,
        prompts: Option<Vec<String>>,
    ) -> PyResult<(Bound<'py, PyArray1<f32>>, Bound<'py, PyArray2<f32>>)> {
        let set: &RewardSet = &self.inner;
        let held = text::list("completions", completions, set.read_limit())?;
        let truncated = flags("truncated", truncated, held.len())?;
        // Golds are read in full (an exact-match gold has no length limit);
        // one that is not valid Unicode is no usable gold.
        let gold_held = text::Golds::new(golds, usize::MAX)?;
        let texts: Vec<Option<&str>> = held.iter().map(|h| h.text().ok()).collect();
        let gold_texts: Vec<Option<&str>> = gold_held
            .texts()
            .into_iter()
            .map(|g| g.and_then(Result::ok))
            .collect();
        let view = if gold_held.one {
            Golds::One(gold_texts[0])
        } else {
            Golds::Each(&gold_texts)
        };
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
        let Scores { total, columns } = run(py, || {
            let prompts: Option<Vec<&str>> = prompts
                .as_ref()
                .map(|p| p.iter().map(String::as_str).collect());
            set.score_texts(
                &texts,
                view,
                lengths.as_deref(),
                truncated.as_deref(),
                prompts.as_deref(),
            )
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
