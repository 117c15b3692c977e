//! Verification of one (gold, completion) pair: extract both answers, parse
//! them, compare. Every way of not matching says why in [`Verdict::reason`].

use crate::extract::{
    answer_region, extract_answer, extract_gold, over_limit, ExtractOptions, Hedge,
};
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
        let why = answer_region(pred, &opts.extract)
            .err()
            .unwrap_or("no answer found");
        return verdict(false, why, Some(&g), None);
    };
    if p.hedge == Some(Hedge::Negated) {
        return verdict(
            false,
            format!("hedge: {}", Hedge::Negated.describe()),
            Some(&g),
            None,
        );
    }
    let hedge = p.hedge;
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
        Ok(false) => verdict(false, no_match_reason(&g, &p, hedge), Some(&g), Some(&p)),
        Err(e) => verdict(false, e.to_string(), Some(&g), Some(&p)),
    }
}

/// Why two parsed answers that differ do: a collection answer (several
/// boxes, or values offered as alternatives) against a single-valued gold
/// is a hedge (VERIFY_SEMANTICS.md rule 3), decided by the comparison of
/// collections itself; anything else is a plain "no match".
fn no_match_reason(gold: &Value, pred: &Value, hedge: Option<Hedge>) -> String {
    let single_gold = !matches!(gold.kind(), "list" | "set");
    if single_gold && pred.kind() == "list" {
        let what = match hedge {
            Some(h) => h.describe(),
            None => "several answers",
        };
        return format!("hedge: {what} against a single-valued gold");
    }
    "no match".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(gold: &str, pred: &str) -> Verdict {
        verify(gold, pred, &VerifyOptions::default())
    }

    #[test]
    fn hedges_earn_nothing_with_a_reason() {
        for (gold, pred) in [
            ("3", "the answer is 1, 2, or 3"),
            ("C", "The answer is (A) or (C)"),
            ("3", "Answer: 4 or 3"),
            ("3", "#### 4 or 3"),
            ("3", "the answer is not 3"),
            ("391", "\\boxed{381 or 391}"),
            ("391", "\\boxed{381} \\boxed{391} \\boxed{401}"),
            ("2", "Answer: x = 2 or x = -2"),
        ] {
            let got = v(gold, pred);
            assert!(!got.matched, "{pred}: {got:?}");
            assert!(got.reason.starts_with("hedge: "), "{pred}: {got:?}");
        }
        // A collection answer still answers a multi-valued gold.
        assert!(v("2, -2", "Answer: x = 2 or x = -2").matched);
        assert!(v("3", "Answer: 3 or 3").matched);
        assert!(v("5", "Answer: 5, not 3").matched);
        assert!(!v("3", "Answer: 5, not 3").matched);
    }

    #[test]
    fn escaped_dollar_bold_think_and_special_tokens() {
        for (gold, pred) in [
            ("18", "The final answer is $\\$18$. I hope it is correct."),
            ("18", "The answer is $\\$18$."),
            ("18", "Answer: $\\$18$"),
            ("42", "**42**"),
            ("42", "**$42$**"),
            ("5", "<think>\\boxed{3}</think> so \\boxed{5}"),
            ("72", "#### 72<|im_end|>"),
            ("72", "Answer: 72<eos>"),
            ("42", "The answer is 42</s>"),
            ("42", "\\boxed{42}<|endoftext|><|endoftext|>"),
            ("72", "#### 72<|eot_id|><pad><pad>"),
        ] {
            let got = v(gold, pred);
            assert!(got.matched, "{pred}: {got:?}");
        }
        let got = v("3", "<think>so \\boxed{3}");
        assert!(!got.matched);
        assert_eq!(got.reason, crate::extract::UNCLOSED_THINK);
        assert_eq!(
            v("3", "<think>\\boxed{3}</think>").reason,
            "no answer found"
        );
        let off = VerifyOptions {
            extract: ExtractOptions {
                think: false,
                ..ExtractOptions::default()
            },
            ..VerifyOptions::default()
        };
        assert!(verify("3", "<think>so \\boxed{3}", &off).matched);
    }
}
