//! Verification of one (gold, completion) pair: extract both answers, parse
//! them, compare. Every way of not matching says why in [`Verdict::reason`].

use crate::extract::{extract_answer, extract_gold, over_limit, ExtractOptions};
use crate::math::{self, CompareOptions, Limits, ParseOptions, Rejection, Value};

#[derive(Debug, Clone, PartialEq)]
pub struct VerifyOptions {
    pub extract: ExtractOptions,
    /// Relative tolerance for a decimal against a value it can only
    /// approximate; exact values always compare exactly.
    pub rel_tol: f64,
    /// Let a set or interval gold accept an inequality prediction.
    pub allow_set_relation_comp: bool,
    pub limits: Limits,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            extract: ExtractOptions::default(),
            rel_tol: 1e-6,
            allow_set_relation_comp: false,
            limits: Limits::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub matched: bool,
    /// `"match"`, `"no match"`, `"no answer found"`, `"no gold answer"`,
    /// `"over budget: ..."`, `"unparseable answer: ..."`, ...
    pub reason: String,
    /// The canonical rendering of the parsed gold and prediction.
    pub gold: Option<String>,
    pub pred: Option<String>,
}

fn verdict(
    matched: bool,
    reason: impl Into<String>,
    gold: Option<&Value>,
    pred: Option<&Value>,
) -> Verdict {
    Verdict {
        matched,
        reason: reason.into(),
        gold: gold.map(ToString::to_string),
        pred: pred.map(ToString::to_string),
    }
}

/// The parts of an extracted answer as one value (several boxes form one
/// collection answer).
fn parse_parts(parts: &[&str], opts: &ParseOptions) -> Result<Value, Rejection> {
    let mut values = Vec::with_capacity(parts.len());
    for part in parts {
        values.push(math::parse(part, opts)?);
    }
    if values.is_empty() {
        return Err(Rejection::Empty);
    }
    Ok(Value::collection(values))
}

/// The value of a gold-style text (its marked answer, or the text itself
/// when it has no marker), as `grpo_fast.parse` shows it.
pub fn parse_answer(text: &str, opts: &VerifyOptions) -> Result<Value, Rejection> {
    if over_limit(text, &opts.extract) {
        return Err(Rejection::OverBudget(
            "text longer than the extraction limit".into(),
        ));
    }
    let Some(g) = extract_gold(text, &opts.extract) else {
        return Err(Rejection::Empty);
    };
    parse_parts(
        &g.parts,
        &ParseOptions {
            limits: opts.limits.clone(),
        },
    )
}

/// Whether `pred` (a completion) answers `gold` (a gold answer or solution).
pub fn verify(gold: &str, pred: &str, opts: &VerifyOptions) -> Verdict {
    let popts = ParseOptions {
        limits: opts.limits.clone(),
    };
    let copts = CompareOptions {
        rel_tol: opts.rel_tol,
        allow_set_relation_comp: opts.allow_set_relation_comp,
        limits: opts.limits.clone(),
    };
    if over_limit(gold, &opts.extract) {
        return verdict(
            false,
            "over budget: gold longer than the extraction limit",
            None,
            None,
        );
    }
    let Some(g) = extract_gold(gold, &opts.extract) else {
        return verdict(false, "no gold answer", None, None);
    };
    let g = match parse_parts(&g.parts, &popts) {
        Ok(v) => v,
        Err(Rejection::OverBudget(why)) => {
            return verdict(false, format!("over budget: gold: {why}"), None, None)
        }
        Err(e) => return verdict(false, format!("unparseable gold: {e}"), None, None),
    };
    if over_limit(pred, &opts.extract) {
        return verdict(
            false,
            "over budget: completion longer than the extraction limit",
            Some(&g),
            None,
        );
    }
    let Some(p) = extract_answer(pred, &opts.extract) else {
        return verdict(false, "no answer found", Some(&g), None);
    };
    let p = match parse_parts(&p.parts, &popts) {
        Ok(v) => v,
        Err(Rejection::Empty) => return verdict(false, "empty answer", Some(&g), None),
        Err(Rejection::OverBudget(why)) => {
            return verdict(false, format!("over budget: {why}"), Some(&g), None)
        }
        Err(e) => return verdict(false, format!("unparseable answer: {e}"), Some(&g), None),
    };
    match math::compare(&g, &p, &copts) {
        Ok(true) => verdict(true, "match", Some(&g), Some(&p)),
        Ok(false) => verdict(false, "no match", Some(&g), Some(&p)),
        Err(e) => verdict(false, e.to_string(), Some(&g), Some(&p)),
    }
}

/// Why a text was not read: the binding decides this before converting a
/// Python `str` to UTF-8, so that a hostile one costs nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unread {
    /// Longer than the extraction limit (known from its length alone).
    TooLong,
    /// Not valid Unicode (a Python `str` holding a lone surrogate).
    NotUnicode,
}

/// A text, or why it was not read.
pub type Text<'a> = std::result::Result<&'a str, Unread>;

/// [`verify`] where either side may be unread. An unread side is a
/// non-match, reported like an unusable one: the gold's problem first.
pub fn verify_text(gold: Text<'_>, pred: Text<'_>, opts: &VerifyOptions) -> Verdict {
    let gold = match gold {
        Ok(g) => g,
        Err(Unread::TooLong) => {
            return verdict(
                false,
                "over budget: gold longer than the extraction limit",
                None,
                None,
            )
        }
        Err(Unread::NotUnicode) => return verdict(false, "not valid unicode: gold", None, None),
    };
    let why = match pred {
        Ok(p) => return verify(gold, p, opts),
        Err(Unread::TooLong) => "over budget: completion longer than the extraction limit",
        Err(Unread::NotUnicode) => "not valid unicode",
    };
    // The gold is judged as usual (its own reason wins); the empty
    // prediction stands in for the unread one and can never match.
    let v = verify(gold, "", opts);
    if v.gold.is_none() {
        return v;
    }
    Verdict {
        matched: false,
        reason: why.to_owned(),
        pred: None,
        ..v
    }
}
