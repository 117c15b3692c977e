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

/// A gold, extracted and parsed once: what every completion of its group is
/// compared with.
#[derive(Debug)]
pub struct Gold {
    value: Value,
    /// The extracted parts, for the identical-answer shortcut.
    parts: Vec<Box<str>>,
    /// `compare(value, value)`, computed the first time a completion's answer
    /// is the gold's text itself (the usual correct answer).
    self_match: std::cell::OnceCell<Result<bool, Rejection>>,
}

impl Gold {
    /// Extract and parse a gold; `Err` is the verdict of every completion
    /// against it.
    pub fn new(gold: &str, opts: &VerifyOptions) -> Result<Gold, Verdict> {
        if over_limit(gold, &opts.extract) {
            return Err(verdict(
                false,
                "over budget: gold longer than the extraction limit",
                None,
                None,
            ));
        }
        let Some(g) = extract_gold(gold, &opts.extract) else {
            return Err(verdict(false, "no gold answer", None, None));
        };
        let popts = ParseOptions {
            limits: opts.limits.clone(),
        };
        match parse_parts(&g.parts, &popts) {
            Ok(value) => Ok(Gold {
                value,
                parts: g.parts.iter().map(|p| Box::from(*p)).collect(),
                self_match: std::cell::OnceCell::new(),
            }),
            Err(Rejection::OverBudget(why)) => Err(verdict(
                false,
                format!("over budget: gold: {why}"),
                None,
                None,
            )),
            Err(e) => Err(verdict(false, format!("unparseable gold: {e}"), None, None)),
        }
    }
}

/// Golds at most this long are remembered between calls (see [`verify`]).
const CACHED_GOLD_LEN: usize = 4096;

type CachedGold = (Box<str>, VerifyOptions, std::rc::Rc<Result<Gold, Verdict>>);

thread_local! {
    /// The last gold verified on this thread: a group's G completions share
    /// one gold, which is then extracted and parsed once, not G times.
    static LAST_GOLD: std::cell::RefCell<Option<CachedGold>> = const { std::cell::RefCell::new(None) };
}

/// The prepared gold of `gold`, from this thread's cache when the last call
/// had the same gold and options.
fn cached_gold(gold: &str, opts: &VerifyOptions) -> std::rc::Rc<Result<Gold, Verdict>> {
    if gold.len() > CACHED_GOLD_LEN {
        return std::rc::Rc::new(Gold::new(gold, opts));
    }
    let cached = LAST_GOLD.with(|c| {
        c.borrow()
            .as_ref()
            .filter(|(text, o, _)| **text == *gold && o == opts)
            .map(|(_, _, g)| g.clone())
    });
    cached.unwrap_or_else(|| {
        let g = std::rc::Rc::new(Gold::new(gold, opts));
        LAST_GOLD.with(|c| *c.borrow_mut() = Some((gold.into(), opts.clone(), g.clone())));
        g
    })
}

/// Whether `pred` (a completion) answers `gold` (a gold answer or solution).
///
/// The parsed gold of the last call on this thread is kept (golds up to 4 KiB),
/// so consecutive completions of one gold (a GRPO group, through
/// `verify_batch` or one call each) parse it once; the verdict is the same.
pub fn verify(gold: &str, pred: &str, opts: &VerifyOptions) -> Verdict {
    match &*cached_gold(gold, opts) {
        Ok(g) => verify_gold(g, pred, opts),
        Err(v) => v.clone(),
    }
}

/// [`verify`]'s `matched`, or `None` when the gold has no usable answer
/// (nothing is rendered: the batch path).
pub fn verify_match(gold: &str, pred: &str, opts: &VerifyOptions) -> Option<bool> {
    match &*cached_gold(gold, opts) {
        Ok(g) => Some(judge(g, pred, opts).matched),
        Err(_) => None,
    }
}

/// Whether `pred` answers a prepared gold.
pub fn verify_gold(g: &Gold, pred: &str, opts: &VerifyOptions) -> Verdict {
    let o = judge(g, pred, opts);
    Verdict {
        matched: o.matched,
        reason: o.reason.into_owned(),
        gold: Some(g.value.to_string()),
        pred: o.pred.map(|p| p.to_string()),
    }
}

/// A judgement before rendering.
struct Outcome<'g> {
    matched: bool,
    reason: std::borrow::Cow<'static, str>,
    pred: Option<std::borrow::Cow<'g, Value>>,
}

fn outcome<'g>(
    matched: bool,
    reason: impl Into<std::borrow::Cow<'static, str>>,
    pred: Option<std::borrow::Cow<'g, Value>>,
) -> Outcome<'g> {
    Outcome {
        matched,
        reason: reason.into(),
        pred,
    }
}

fn judge<'g>(g: &'g Gold, pred: &str, opts: &VerifyOptions) -> Outcome<'g> {
    use std::borrow::Cow;
    let gv = &g.value;
    if over_limit(pred, &opts.extract) {
        return outcome(
            false,
            "over budget: completion longer than the extraction limit",
            None,
        );
    }
    let Some(e) = extract_answer(pred, &opts.extract) else {
        let why = answer_region(pred, &opts.extract)
            .err()
            .unwrap_or("no answer found");
        return outcome(false, why, None);
    };
    if e.hedge == Some(Hedge::Negated) {
        return outcome(false, format!("hedge: {}", Hedge::Negated.describe()), None);
    }
    let copts = CompareOptions {
        rel_tol: opts.rel_tol,
        allow_set_relation_comp: opts.allow_set_relation_comp,
        limits: opts.limits.clone(),
    };
    // The answer written exactly as the gold: the same parse, so the same
    // value; whether a value equals itself is decided once per gold.
    let same_text =
        e.parts.len() == g.parts.len() && e.parts.iter().zip(&g.parts).all(|(a, b)| *a == &**b);
    let (pv, result) = if same_text {
        let r = g
            .self_match
            .get_or_init(|| math::compare(gv, gv, &copts))
            .clone();
        (Cow::Borrowed(gv), r)
    } else {
        let popts = ParseOptions {
            limits: opts.limits.clone(),
        };
        let parsed = match parse_parts(&e.parts, &popts) {
            Ok(v) => v,
            Err(Rejection::Empty) => return outcome(false, "empty answer", None),
            Err(Rejection::OverBudget(why)) => {
                return outcome(false, format!("over budget: {why}"), None)
            }
            // `$3$ (or $4$)`: alternatives that do not parse as one value.
            Err(err) if e.hedge.is_some() => {
                let h = e.hedge.map_or("", |h| h.describe());
                return outcome(false, format!("hedge: {h} ({err})"), None);
            }
            Err(err) => return outcome(false, format!("unparseable answer: {err}"), None),
        };
        let r = math::compare(gv, &parsed, &copts);
        (Cow::Owned(parsed), r)
    };
    match result {
        Ok(true) => outcome(true, "match", Some(pv)),
        Ok(false) => {
            let why = no_match_reason(gv, &pv, e.hedge);
            outcome(false, why, Some(pv))
        }
        Err(e) => outcome(false, e.to_string(), Some(pv)),
    }
}

/// Why two parsed answers that differ do: a collection answer (several
/// boxes, or values offered as alternatives) against a single-valued gold
/// is a hedge (docs/verify_semantics.md rule 3), decided by the comparison of
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

    #[test]
    fn the_cached_gold_gives_the_uncached_verdict() {
        let pairs = [
            ("\\frac12", "so \\boxed{\\frac12}"),
            ("\\frac12", "so \\boxed{0.5}"),
            ("\\frac12", "so \\boxed{\\frac13}"),
            ("0/0", "\\boxed{0/0}"),
            ("0/0", "\\boxed{1}"),
            ("", "\\boxed{1}"),
            ("\\frac{", "\\boxed{\\frac{}"),
            ("(2,2), (6,2)", "\\boxed{(2,2), (6,2)}"),
            ("(2,2), (6,2)", "\\boxed{(6,2)} and \\boxed{(2,2)}"),
            ("x^2+2x+1", "\\boxed{x^2+2x+1}"),
            ("x^2+2x+1", "\\boxed{(x+1)^2}"),
        ];
        let o = VerifyOptions::default();
        let tight = VerifyOptions {
            rel_tol: 0.0,
            ..VerifyOptions::default()
        };
        for opts in [&o, &tight] {
            for round in 0..2 {
                for (gold, pred) in pairs {
                    let fresh = match Gold::new(gold, opts) {
                        Ok(g) => verify_gold(&g, pred, opts),
                        Err(v) => v,
                    };
                    // Twice in a row (a cache hit) and after another gold.
                    assert_eq!(verify(gold, pred, opts), fresh, "{gold} / {pred} ({round})");
                    assert_eq!(verify(gold, pred, opts), fresh, "{gold} / {pred} ({round})");
                    let m = verify_match(gold, pred, opts);
                    assert_eq!(m, fresh.gold.as_ref().map(|_| fresh.matched));
                }
            }
        }
        // The identical-text shortcut keeps the comparison's judgement: an
        // undefined value matches nothing, itself included.
        assert!(!v("0/0", "\\boxed{0/0}").matched);
        assert!(v("x^2+2x+1", "\\boxed{x^2+2x+1}").matched);
        // Options are part of the cache key.
        assert!(v("\\sqrt2", "\\boxed{1.41421356}").matched);
        let none = VerifyOptions {
            extract: ExtractOptions {
                rules: vec![crate::extract::Rule::Gsm8k],
                ..ExtractOptions::default()
            },
            ..VerifyOptions::default()
        };
        assert!(!verify("\\sqrt2", "\\boxed{1.41421356}", &none).matched);
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
