//! Verification of one (gold, completion) pair: extract both answers, parse
//! them, compare. Every way of not matching says why in [`Verdict::reason`].

use crate::extract::{
    copied_from, extract_gold, find_visible, is_arithmetic, over_limit, visible, ExtractOptions,
    Extracted, Hedge, Hints, OfferKind, OfferValue, Quantity,
};
use crate::math::{self, CompareOptions, Limits, ParseOptions, Rejection, Value};

mod forms;

use forms::{
    after_choice_label, gold_choice, pred_choice, prose_word_count, prose_words, MAX_ANSWER_WORDS,
    UNSCORABLE_PROSE,
};

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
    /// The gold is a choice letter (`C`, `(C)`): a completion's letter is
    /// compared without case (`\boxed{c}`, `DDDDD`, `(C) 4.2 m`).
    choice: Option<char>,
    /// The gold is text of several words (`New York`), normalised: it is
    /// compared whole, never as its first word.
    words: Option<String>,
    /// The gold holds several values (a list, a set, a union): alternatives
    /// offered together may form it.
    multi: bool,
    /// `compare(value, value)`, computed the first time a completion's answer
    /// is the gold's text itself (the usual correct answer).
    self_match: std::cell::OnceCell<Result<bool, Rejection>>,
    /// Answers already parsed and compared with this gold, by their text:
    /// the completions of a group often end in the same few answers. Each
    /// slot is written once, so a remembered value is lent, not copied
    /// (boxed: an empty slot is one pointer).
    answers: [std::cell::OnceCell<Box<SeenAnswer>>; SEEN_ANSWERS],
}

/// An answer's parts as written, the options it was compared under, its
/// value and its comparison with the gold.
#[derive(Debug)]
struct SeenAnswer {
    parts: Vec<Box<str>>,
    opts: CompareOptions,
    value: Value,
    result: Result<bool, Rejection>,
}

/// How many answers a gold remembers (a group rarely has more distinct ones).
const SEEN_ANSWERS: usize = 8;

impl Gold {
    /// The value of `parts` and its comparison with the gold: remembered
    /// for an answer seen before, else parsed and compared.
    fn compared<'g>(
        &'g self,
        parts: &[&str],
        copts: &CompareOptions,
        popts: &ParseOptions,
    ) -> Result<(std::borrow::Cow<'g, Value>, Result<bool, Rejection>), Rejection> {
        use std::borrow::Cow;
        let same = |seen: &SeenAnswer| {
            seen.opts == *copts
                && seen.parts.len() == parts.len()
                && seen.parts.iter().zip(parts).all(|(a, b)| **a == **b)
        };
        let mut free = None;
        for slot in &self.answers {
            match slot.get() {
                Some(seen) if same(seen) => {
                    return Ok((Cow::Borrowed(&seen.value), seen.result.clone()))
                }
                Some(_) => {}
                None => {
                    free = Some(slot);
                    break;
                }
            }
        }
        let value = parse_parts(parts, popts)?;
        let result = math::compare(&self.value, &value, copts);
        let Some(slot) = free else {
            return Ok((Cow::Owned(value), result));
        };
        let seen = slot.get_or_init(|| {
            Box::new(SeenAnswer {
                parts: parts.iter().map(|p| Box::from(*p)).collect(),
                opts: copts.clone(),
                value,
                result: result.clone(),
            })
        });
        Ok((Cow::Borrowed(&seen.value), result))
    }
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
        // A short gold (`380`, `\frac{3}{4}`: most golds) is its own
        // answer (as `extract_gold` finds), parsed once.
        let bare = gold.trim();
        let short = (opts.limits == Limits::default())
            .then(|| math::short_value(bare))
            .flatten();
        let parts = match short {
            Some(_) => vec![bare],
            None => match extract_gold(gold, &opts.extract) {
                Some(g) => g.parts,
                None => return Err(verdict(false, "no gold answer", None, None)),
            },
        };
        let popts = ParseOptions {
            limits: opts.limits.clone(),
        };
        let one = (parts.len() == 1).then(|| parts[0]);
        let words = one.and_then(prose_words);
        let parsed = match (&words, short) {
            // Text of several words is compared whole (its value is shown
            // as the text); a sentence is no answer.
            (Some(w), _) if w.split(' ').count() > MAX_ANSWER_WORDS => {
                return Err(verdict(false, UNSCORABLE_PROSE, None, None))
            }
            (Some(w), _) => math::parse(&format!("\\text{{{w}}}"), &popts),
            (None, Some(v)) => Ok(Value::collection(vec![v])),
            (None, None) => parse_parts(&parts, &popts),
        };
        let value = match parsed {
            // Several words read as one name (`the red one` as `the`): no answer.
            Ok(v)
                if words.is_none()
                    && v.kind() == "text"
                    && one.is_some_and(|p| prose_word_count(p) > 1) =>
            {
                return Err(verdict(false, UNSCORABLE_PROSE, None, None))
            }
            Ok(v) => v,
            Err(Rejection::OverBudget(why)) => {
                return Err(verdict(
                    false,
                    format!("over budget: gold: {why}"),
                    None,
                    None,
                ))
            }
            Err(e) => return Err(verdict(false, format!("unparseable gold: {e}"), None, None)),
        };
        Ok(Gold {
            multi: matches!(value.kind(), "list" | "set" | "union"),
            value,
            parts: parts.iter().map(|p| Box::from(*p)).collect(),
            choice: one.and_then(gold_choice),
            words,
            self_match: std::cell::OnceCell::new(),
            answers: Default::default(),
        })
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
    verify_cut(gold, pred, false, None, opts)
}

/// [`verify`] of a completion that may have been cut off at the token
/// limit (`truncated`: see [`Hints::truncated`]), to the prompt it answers
/// when the caller has it (an arithmetic expression copied from the prompt is
/// no answer: docs/verify_semantics.md, rule 2).
pub fn verify_cut(
    gold: &str,
    pred: &str,
    truncated: bool,
    prompt: Option<&str>,
    opts: &VerifyOptions,
) -> Verdict {
    match &*cached_gold(gold, opts) {
        Ok(g) => verify_gold(g, pred, truncated, prompt, opts),
        Err(v) => v.clone(),
    }
}

/// [`verify_cut`]'s `matched`, or `None` when the gold has no usable answer
/// (nothing is rendered: the batch path).
pub fn verify_match(
    gold: &str,
    pred: &str,
    truncated: bool,
    prompt: Option<&str>,
    opts: &VerifyOptions,
) -> Option<bool> {
    match &*cached_gold(gold, opts) {
        Ok(g) => Some(judge(g, pred, truncated, prompt, opts).matched),
        Err(_) => None,
    }
}

/// Whether `pred` answers a prepared gold.
pub fn verify_gold(
    g: &Gold,
    pred: &str,
    truncated: bool,
    prompt: Option<&str>,
    opts: &VerifyOptions,
) -> Verdict {
    let o = judge(g, pred, truncated, prompt, opts);
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

fn judge<'g>(
    g: &'g Gold,
    pred: &str,
    truncated: bool,
    prompt: Option<&str>,
    opts: &VerifyOptions,
) -> Outcome<'g> {
    use std::borrow::Cow;
    let gv = &g.value;
    let hints = Hints {
        truncated,
        choice: g.choice.is_some(),
    };
    // Read in what a reader sees: hidden text neither pays nor voids.
    let shown = match visible(pred, &opts.extract) {
        Ok(s) => s,
        Err(why) => return outcome(false, why, None),
    };
    let e = match find_visible(&shown, &opts.extract, hints) {
        Ok(e) => e,
        Err(why) => return outcome(false, why, None),
    };
    // Alternatives are judged as a collection below; every other hedge voids.
    if let Some(h) = e.hedge.filter(|h| *h != Hedge::Alternatives) {
        return outcome(false, format!("hedge: {}", h.describe()), None);
    }
    // The question's own expression is no answer (`\boxed{79+85}` for
    // "What is 79 + 85?"); only an arithmetic answer pays for the look.
    if let Some(prompt) = prompt {
        if e.parts
            .iter()
            .any(|p| is_arithmetic(p) && copied_from(prompt, p))
        {
            let why = format!("hedge: {}", Hedge::Unevaluated.describe());
            return outcome(false, why, None);
        }
    }
    let copts = CompareOptions {
        rel_tol: opts.rel_tol,
        allow_set_relation_comp: opts.allow_set_relation_comp,
        limits: opts.limits.clone(),
    };
    let popts = ParseOptions {
        limits: opts.limits.clone(),
    };
    // `7 hours 30 minutes` answers 7.5 or 450, never 30 or 7 (a gold in
    // words, `7 hours 30 minutes`, is compared as words below).
    if let (Some(q), None) = (e.quantity, &g.words) {
        return by_quantity(g, &e, q, &copts, &popts);
    }
    let single = (e.parts.len() == 1).then(|| e.parts[0]);
    // A choice letter against a choice gold, in any case.
    if let (Some(want), Some(part), None) = (g.choice, single, e.hedge) {
        if let Some(got) = pred_choice(part) {
            return settle(g, &e, got == want, None, &copts, &popts);
        }
    }
    // Text of several words, on either side, is compared whole (never as
    // its first word).
    let pred_words = single.and_then(prose_words);
    if g.words.is_some() || pred_words.is_some() {
        if let Some(w) = pred_words {
            let same = g.words.as_ref() == Some(&w);
            let shown = math::parse(&format!("\\text{{{w}}}"), &popts).ok();
            return settle(g, &e, same, shown.map(Cow::Owned), &copts, &popts);
        }
    }
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
        match g.compared(&e.parts, &copts, &popts) {
            Ok(found) => found,
            Err(err) => {
                // `(C) 42` against 42: the option's text answers.
                if let Some(m) = by_option_text(g, &e, &copts, &popts) {
                    return m;
                }
                return match err {
                    Rejection::Empty => outcome(false, "empty answer", None),
                    Rejection::OverBudget(why) => {
                        outcome(false, format!("over budget: {why}"), None)
                    }
                    // `$3$ (or $4$)`: alternatives that do not parse as one value.
                    err if e.hedge.is_some() => {
                        let h = e.hedge.map_or("", |h| h.describe());
                        outcome(false, format!("hedge: {h} ({err})"), None)
                    }
                    err => outcome(false, format!("unparseable answer: {err}"), None),
                };
            }
        }
    };
    match result {
        Ok(true) => settle(g, &e, true, Some(pv), &copts, &popts),
        Ok(false) => {
            if let Some(m) = by_option_text(g, &e, &copts, &popts) {
                return m;
            }
            let why = no_match_reason(gv, &pv, e.hedge);
            outcome(false, why, Some(pv))
        }
        Err(e) => outcome(false, e.to_string(), Some(pv)),
    }
}

/// A compound quantity against a gold value: a match when the gold is the
/// quantity in its first (largest) or its last (smallest) unit
/// (docs/verify_semantics.md rule 15).
fn by_quantity<'g>(
    g: &'g Gold,
    e: &Extracted<'_>,
    q: Quantity,
    copts: &CompareOptions,
    popts: &ParseOptions,
) -> Outcome<'g> {
    let mut shown = None;
    for (n, d) in [q.in_first, q.in_last].into_iter().flatten() {
        let Ok(v) = math::parse(&format!("\\frac{{{n}}}{{{d}}}"), popts) else {
            continue;
        };
        if math::compare(&g.value, &v, copts) == Ok(true) {
            return settle(g, e, true, Some(std::borrow::Cow::Owned(v)), copts, popts);
        }
        shown.get_or_insert(v);
    }
    outcome(
        false,
        "no match: a compound quantity answers only in its first or its last unit",
        shown.map(std::borrow::Cow::Owned),
    )
}

/// The verdict of an answer `same` as the gold or not: a match stands only
/// when every value the completion offers besides it (alternatives against
/// a single-valued gold, restatements, candidates after the final answer)
/// equals the gold too.
fn settle<'g>(
    g: &'g Gold,
    e: &Extracted<'_>,
    same: bool,
    pv: Option<std::borrow::Cow<'g, Value>>,
    copts: &CompareOptions,
    popts: &ParseOptions,
) -> Outcome<'g> {
    if !same {
        return outcome(false, "no match", pv);
    }
    match differing_offer(g, e, copts, popts) {
        Some(kind) => {
            let what = match kind {
                OfferKind::Alternative => Hedge::Alternatives.describe(),
                OfferKind::Restated => "a restatement that is another value",
                OfferKind::After => Hedge::Proposed.describe(),
                OfferKind::Denied => "the answer is taken back after it is given",
            };
            outcome(false, format!("hedge: {what}"), pv)
        }
        None => outcome(true, "match", pv),
    }
}

/// The kind of the first offered value that is not the gold, if any.
fn differing_offer(
    g: &Gold,
    e: &Extracted<'_>,
    copts: &CompareOptions,
    popts: &ParseOptions,
) -> Option<OfferKind> {
    let mut buf = String::new();
    e.offers.iter().find_map(|o| {
        if o.kind == OfferKind::Alternative && g.multi {
            return None; // the alternatives are the collection the gold is
        }
        let text = match o.value {
            OfferValue::Text(t) => t,
            OfferValue::Int(n) => {
                buf = n.to_string();
                &buf
            }
        };
        let same = offer_is_gold(g, o.kind, text, copts, popts)?;
        // A denied value voids the answer it equals; any other must equal it.
        (same == (o.kind == OfferKind::Denied)).then_some(o.kind)
    })
}

/// Whether an offered value is the gold (`None`: it cannot be told).
fn offer_is_gold(
    g: &Gold,
    kind: OfferKind,
    text: &str,
    copts: &CompareOptions,
    popts: &ParseOptions,
) -> Option<bool> {
    if let Some(want) = g.choice {
        match pred_choice(text) {
            Some(c) => return Some(c == want),
            // `\boxed{C}, i.e. 42`: a value restating a letter cannot be told.
            None if kind == OfferKind::Restated => return None,
            None => {}
        }
    }
    if let Some(w) = &g.words {
        return Some(prose_words(text).as_ref() == Some(w));
    }
    Some(
        math::parse(text, popts)
            .ok()
            .is_some_and(|v| math::compare(&g.value, &v, copts) == Ok(true)),
    )
}

/// `(C) 42` against a gold value: the option's text after the letter.
fn by_option_text<'g>(
    g: &'g Gold,
    e: &Extracted<'_>,
    copts: &CompareOptions,
    popts: &ParseOptions,
) -> Option<Outcome<'g>> {
    if e.parts.len() != 1 || e.hedge.is_some() || g.choice.is_some() {
        return None;
    }
    let rest = after_choice_label(e.parts[0])?;
    let v = math::parse(rest, popts).ok()?;
    (math::compare(&g.value, &v, copts) == Ok(true))
        .then(|| settle(g, e, true, Some(std::borrow::Cow::Owned(v)), copts, popts))
}

/// Why two parsed answers that differ do: a collection answer (several
/// boxes, or values offered as alternatives) against a single-valued gold
/// is a hedge (docs/verify_semantics.md rule 3), decided by the comparison of
/// collections itself; anything else is a plain "no match".
fn no_match_reason(gold: &Value, pred: &Value, hedge: Option<Hedge>) -> String {
    let single_gold = !matches!(gold.kind(), "list" | "set");
    if single_gold && (pred.kind() == "list" || hedge.is_some()) {
        let what = match hedge {
            Some(h) => h.describe(),
            None => "several answers",
        };
        return format!("hedge: {what} against a single-valued gold");
    }
    "no match".into()
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
pub fn verify_text(
    gold: Text<'_>,
    pred: Text<'_>,
    truncated: bool,
    prompt: Option<&str>,
    opts: &VerifyOptions,
) -> Verdict {
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
        Ok(p) => return verify_cut(gold, p, truncated, prompt, opts),
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

/// [`verify_text`]'s `matched`, without rendering the answers or the
/// reason (the per-item `grpo_fast.verify` path): an unread side, or a gold
/// with no usable answer, is a non-match.
pub fn matches_text(
    gold: Text<'_>,
    pred: Text<'_>,
    truncated: bool,
    prompt: Option<&str>,
    opts: &VerifyOptions,
) -> bool {
    match (gold, pred) {
        (Ok(g), Ok(p)) => verify_match(g, p, truncated, prompt, opts).unwrap_or(false),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
