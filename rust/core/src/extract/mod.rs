//! Finding the final answer in a completion.
//!
//! One pass of an Aho-Corasick automaton over the text records every marker
//! (`\boxed`, `<answer>`, `the final answer is`, `####`, `answer:`,
//! `answer is`); the rules then read the recorded positions in priority
//! order, so the cost is linear in the input length whatever the rule list.
//! What counts as the answer is decided in docs/verify_semantics.md ("Which answer
//! counts"): explicit markers first (all boxes together, otherwise the last
//! occurrence of a marker), then the last mathematical value near the end.
//!
//! One file per concept: [`region`] (special tokens, reasoning blocks),
//! [`hidden`] (text a reader does not see), [`markers`] (the line markers
//! and their values), [`boxes`], [`hedges`] (what an answer's words say
//! about its values, ranges included), [`quantity`] (compound quantities:
//! `7 hours 30 minutes` is one answer), [`retract`] (an answer taken back
//! after it is given), [`attributed`] (a value of an example, a template or
//! someone else: rule 16), [`fallback`] (the no-marker rules) and [`scan`]
//! (the rules in priority order).

use strum::{EnumString, IntoStaticStr, VariantArray, VariantNames};

mod attributed;
mod boxes;
mod cases;
mod clause;
mod fallback;
mod foreign;
mod hedges;
mod hidden;
mod markers;
mod quantity;
mod region;
mod retract;
mod scan;
mod stated;
#[cfg(test)]
mod tests;
mod tokens;
mod words;

pub(crate) use fallback::MAX_LETTER_RUN;
pub use quantity::Quantity;
use region::strip_special_tokens;
pub use region::{answer_region, UNCLOSED_THINK};
use scan::Scan;
pub(crate) use stated::{copied_from, is_arithmetic};

/// Which rule found an answer; its name is the `snake_case` of the variant
/// (see `crate::names`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, EnumString, IntoStaticStr, VariantNames, VariantArray,
)]
#[strum(serialize_all = "snake_case")]
pub enum Rule {
    /// `\boxed{…}` / `\fbox{…}` (nested braces; every box is one part).
    Boxed,
    /// `<answer>…</answer>` (the last pair).
    AnswerTag,
    /// `Final Answer: The final answer is X` (Minerva / MATH prompting).
    FinalAnswer,
    /// GSM8K's `#### X`.
    Gsm8k,
    /// `Answer: X` / `**Answer:** X`.
    AnswerColon,
    /// `the answer is X`.
    AnswerIs,
    /// The last of bold, choice letter, `$…$` span and number near the end.
    /// Only ever a rule to try; an answer reports the rule that found it.
    LastValue,
    /// `**X**`.
    Bold,
    /// A choice letter: `(C)` or a lone capital letter ending the text.
    Choice,
    /// `$…$`, `$$…$$`, `\(…\)` or `\[…\]`.
    MathSpan,
    /// The last number (`-1,234.5`, `3/4`, `12%`).
    LastNumber,
    /// A text without markers that is itself an answer (`\frac{0}{1}`,
    /// `1 000`, `x \ge 2`: no prose, one short line). For a gold, any text
    /// without markers is the answer itself.
    Bare,
}

impl Rule {
    /// The rule's name, as the Python API spells it.
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// Every rule, in the default priority (plus the parts of `LastValue` and `Bare`).
    pub const ALL: &'static [Rule] = <Rule as VariantArray>::VARIANTS;

    /// The rule called `name` (see [`Rule::name`]).
    pub fn from_name(name: &str) -> Option<Rule> {
        name.parse().ok()
    }

    /// The rules that read a completion without a marker: a cut-off
    /// completion is not read by them (see [`find_answer`]).
    fn is_fallback(self) -> bool {
        matches!(
            self,
            Rule::Bare
                | Rule::LastValue
                | Rule::Bold
                | Rule::Choice
                | Rule::MathSpan
                | Rule::LastNumber
        )
    }

    fn is_marker(self) -> bool {
        matches!(
            self,
            Rule::Boxed
                | Rule::AnswerTag
                | Rule::FinalAnswer
                | Rule::Gsm8k
                | Rule::AnswerColon
                | Rule::AnswerIs
        )
    }
}

/// What to look for and how far.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractOptions {
    /// Rules in priority order; the first that finds something wins.
    pub rules: Vec<Rule>,
    /// Texts longer than this many bytes are not searched (see [`over_limit`]).
    pub max_len: usize,
    /// How near the end (in bytes) a value must end for the no-marker rules.
    pub tail_len: usize,
    /// Bold text longer than this many bytes is prose, not an answer.
    pub max_bold_len: usize,
    /// A completion longer than this many bytes is never a bare answer.
    pub max_bare_len: usize,
    /// Reasoning is not the answer: with `</think>` present only the text
    /// after the last one is searched, and a completion whose last tag is an
    /// opening `<think>` (cut off mid-thought) has no answer. `false` searches
    /// the whole text.
    pub think: bool,
}

/// The default rule priority of docs/verify_semantics.md.
pub const DEFAULT_RULES: [Rule; 8] = [
    Rule::Boxed,
    Rule::AnswerTag,
    Rule::FinalAnswer,
    Rule::Gsm8k,
    Rule::AnswerColon,
    Rule::AnswerIs,
    Rule::Bare,
    Rule::LastValue,
];

/// Default input limit: 256 KiB, about 64k tokens. The worst input of that
/// size (`\boxed{` repeated) takes a few milliseconds.
pub const DEFAULT_MAX_LEN: usize = 1 << 18;

impl Default for ExtractOptions {
    fn default() -> Self {
        ExtractOptions {
            rules: DEFAULT_RULES.to_vec(),
            max_len: DEFAULT_MAX_LEN,
            tail_len: 500,
            max_bold_len: 200,
            max_bare_len: 200,
            think: true,
        }
    }
}

/// An answer found in a text: one part per `\boxed{}`, else one part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted<'a> {
    pub parts: Vec<&'a str>,
    pub rule: Rule,
    /// Set when the answer hedges (docs/verify_semantics.md "Which answer
    /// counts", rule 3): a negated, qualified or unfinished answer earns
    /// nothing; alternatives are one collection answer, which never matches a
    /// single-valued gold.
    pub hedge: Option<Hedge>,
    /// Values offered besides the answer, each of which must equal it (the
    /// verifier compares them): alternatives, restatements and proposals
    /// after the final answer.
    pub offers: Vec<Offer<'a>>,
    /// The answer is a compound quantity (`7 hours 30 minutes`, rule 15):
    /// its value in its first and its last unit, the only values it answers.
    pub quantity: Option<Quantity>,
}

impl<'a> Extracted<'a> {
    pub(crate) fn new(parts: Vec<&'a str>, rule: Rule) -> Self {
        Extracted {
            parts,
            rule,
            hedge: None,
            offers: Vec::new(),
            quantity: None,
        }
    }
}

/// How an answer hedges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hedge {
    /// Values offered as alternatives: `1, 2, or 3`, `(A) or (C)`, `3 or
    /// four`, `B/D`.
    Alternatives,
    /// A negated answer: `the answer is not 3`, `3 is wrong`.
    Negated,
    /// A bound or a doubt, not a value: `at least 3`, `3 or more`, `maybe
    /// 3`, `3?`.
    Qualified,
    /// An answer that breaks off: `the answer is 3 or` at the end.
    Unfinished,
    /// A different candidate offered after the final answer (`\boxed{3} or
    /// 4`), or more candidates than are compared.
    Proposed,
    /// An unevaluated arithmetic expression that is not a stated result: an
    /// operand expression mid-sentence with prose after it (`To add 79 + 85,
    /// you add them.`), or one copied from the prompt.
    Unevaluated,
    /// The last value of a table or list of cases (`| n odd | 3 |` then `|
    /// n even | 4 |`): one case of several, not the answer.
    Cases,
    /// A range or a set of candidates, not a value (`between 4 and 6`, `5 to
    /// 7`, `roughly 10-12`, `one of 12, 13 and 14`: rule 14).
    Range,
    /// A value attributed to an example, a template, a wrong answer or
    /// someone else (`A common wrong answer is 9.`, `Student A answered
    /// 12.`: rule 16).
    Attributed,
}

impl Hedge {
    /// What a verdict says about it (after `"hedge: "`).
    pub fn describe(self) -> &'static str {
        match self {
            Hedge::Alternatives => "alternatives offered as the answer",
            Hedge::Negated => "a negated answer",
            Hedge::Qualified => "a bound or a doubt, not a value",
            Hedge::Unfinished => "an answer that breaks off",
            Hedge::Proposed => "another answer offered after the final one, or too many offered",
            Hedge::Unevaluated => "an expression of the question, not a stated result",
            Hedge::Cases => "one case of a table or list of cases, not an answer",
            Hedge::Range => "a range or a set of candidates, not a value",
            Hedge::Attributed => {
                "a value of an example, a template, a wrong answer or someone else"
            }
        }
    }
}

/// A value a completion offers besides its answer, which must equal it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offer<'a> {
    pub value: OfferValue<'a>,
    pub kind: OfferKind,
}

/// An offered value: text to parse, or the integer a number word or Roman
/// numeral stands for (`four`, `IV`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OfferValue<'a> {
    Text(&'a str),
    Int(i64),
}

/// Where an offered value stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OfferKind {
    /// One of the alternatives of the answer (`3 or four`): against a
    /// single-valued gold each must equal it; against a multi-valued gold
    /// they are the collection the answer is.
    Alternative,
    /// A restatement of the answer (`3, i.e. three`, `$3$, or equivalently $6/2$`).
    Restated,
    /// A candidate proposed after the final answer (`\boxed{3} Or maybe 4.`).
    After,
    /// A value the text after the final answer says is wrong or not the
    /// answer (`so 16 is not the answer after all`): unlike the others, the
    /// answer is void when it *equals* this one.
    Denied,
}

/// Why a completion whose `\boxed{` never closes has no answer.
pub const UNCLOSED_BOX: &str = "no answer: a \\boxed{ never closes (the output was cut off)";

/// Why a completion without a marker has no answer when it was cut off.
pub const TRUNCATED: &str = "no answer: the completion was cut off and has no answer marker";

/// Why a completion has no answer when no rule finds one.
pub const NO_ANSWER: &str = "no answer found";

/// Whether `text` is too long to be searched under `opts` (an over-limit
/// item is a non-match; callers report this as the reason).
pub fn over_limit(text: &str, opts: &ExtractOptions) -> bool {
    text.len() > opts.max_len
}

/// The final answer of a completion, or `None` when no rule finds one (or
/// the text is over the length limit, or has no answer region).
pub fn extract_answer<'a>(text: &'a str, opts: &ExtractOptions) -> Option<Extracted<'a>> {
    find_answer(text, opts, Hints::default()).ok()
}

/// What the caller knows about a completion besides its text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hints {
    /// The completion was cut off at the token limit (the trainer knows):
    /// it is then read only through its answer markers, since a number near
    /// where it stopped is a step of unfinished reasoning, and paying it
    /// would reward running to the limit.
    pub truncated: bool,
    /// The gold is a choice letter: without a marker, a choice letter near
    /// the end is the answer even when numbers follow it.
    pub choice: bool,
}

/// The final answer of a completion, or why it has none.
///
/// Without [`Hints::truncated`], a cut-off completion is recognised only
/// where it shows: an unclosed `\boxed{` or `<think>`, or an answer that
/// breaks off (`3 or`).
pub fn find_answer<'a>(
    text: &'a str,
    opts: &ExtractOptions,
    hints: Hints,
) -> Result<Extracted<'a>, &'static str> {
    let shown = visible(text, opts)?;
    let e = find_visible(&shown, opts, hints)?;
    rebase(e, shown.text(), shown.region).ok_or(NO_ANSWER)
}

/// What a reader sees of a completion's answer region: the region
/// ([`answer_region`]) with hidden text blanked (rule 11), at the same
/// offsets. Built once per completion; [`find_visible`] reads it.
pub struct Visible<'a> {
    region: &'a str,
    /// The region with hidden text blanked.
    hidden: std::borrow::Cow<'a, str>,
    /// `hidden` with other languages folded (rule 13), when that changed it.
    folded: Option<String>,
}

impl Visible<'_> {
    /// The text the rules read.
    pub fn text(&self) -> &str {
        self.folded.as_deref().unwrap_or(&self.hidden)
    }

    /// A slice of [`Visible::text`] as written before other languages were
    /// folded (the same offsets): `5个6` rather than `5   6`.
    pub fn as_written<'s>(&'s self, part: &'s str) -> &'s str {
        let base = self.text().as_ptr() as usize;
        (part.as_ptr() as usize)
            .checked_sub(base)
            .and_then(|off| self.hidden.get(off..off + part.len()))
            .unwrap_or(part)
    }
}

/// [`Visible`] of a completion, or why it has no answer region.
pub fn visible<'a>(text: &'a str, opts: &ExtractOptions) -> Result<Visible<'a>, &'static str> {
    if over_limit(text, opts) {
        return Err("over budget: completion longer than the extraction limit");
    }
    let region = answer_region(text, opts)?;
    let hidden = hidden::shown(region);
    let folded = match foreign::fold(std::borrow::Cow::Borrowed(&*hidden)) {
        std::borrow::Cow::Owned(t) => Some(t),
        std::borrow::Cow::Borrowed(_) => None,
    };
    Ok(Visible {
        region,
        hidden,
        folded,
    })
}

/// [`find_answer`] in what a reader sees: the parts are slices of
/// [`Visible::text`], so markup blanked inside an answer (`{\color{blue}
/// 36}`) is not read.
pub fn find_visible<'s>(
    shown: &'s Visible<'_>,
    opts: &ExtractOptions,
    hints: Hints,
) -> Result<Extracted<'s>, &'static str> {
    let mut scan = Scan::new(shown.text());
    scan.prefer_choice = hints.choice;
    for &rule in &opts.rules {
        if hints.truncated && rule.is_fallback() {
            continue;
        }
        if let Some(e) = scan.apply(rule, opts)? {
            return Ok(with_quantity(e, shown.text()));
        }
    }
    Err(if hints.truncated {
        TRUNCATED
    } else {
        NO_ANSWER
    })
}

/// The value in its first unit of a text that is only a compound quantity
/// (`7 hours 30 minutes`, `$3 \\text{ m } 20 \\text{ cm}$.`), if it is one.
pub fn whole_quantity(text: &str) -> Option<(i128, i128)> {
    let t = text.trim().trim_end_matches('.').trim_matches('$').trim();
    let at = t.as_ptr() as usize - text.as_ptr() as usize;
    if !t.bytes().next()?.is_ascii_digit() {
        return None;
    }
    // Every unit has a letter, a quote mark or a non-ASCII sign (`″`, `¢`,
    // `°`), and a quantity of two parts has at least one unit (a dollar
    // sign before the first number is a unit only with one after it).
    if !t
        .bytes()
        .any(|c| c.is_ascii_alphabetic() || matches!(c, b'"' | b'\'' | 0x80..))
    {
        return None;
    }
    let (s, e, q) = quantity::compound_around(text, at, at + 1)?;
    (s == at && e == at + t.len())
        .then_some(q.in_first)
        .flatten()
}

/// An answer that is part of a compound quantity (`The answer is 7 hours
/// 30 minutes` found 30) is the whole quantity (rule 15).
fn with_quantity<'s>(mut e: Extracted<'s>, text: &'s str) -> Extracted<'s> {
    if e.hedge.is_some() || e.parts.len() != 1 {
        return e;
    }
    let p = e.parts[0];
    let Some(at) = (p.as_ptr() as usize)
        .checked_sub(text.as_ptr() as usize)
        .filter(|at| at + p.len() <= text.len())
    else {
        return e;
    };
    if let Some((s, t, q)) = quantity::compound_around(text, at, at + p.len()) {
        e.parts = vec![&text[s..t]];
        e.quantity = Some(q);
    }
    e
}

/// An answer found in `shown` as the same slices of `region` (see
/// [`hidden::shown`]: both have the same offsets). A part with markup
/// blanked inside it (`{\\color{blue} 36}`) is the slice as written.
fn rebase<'a>(e: Extracted<'_>, shown: &str, region: &'a str) -> Option<Extracted<'a>> {
    let base = shown.as_ptr() as usize;
    let map = |p: &str| {
        let off = (p.as_ptr() as usize).checked_sub(base)?;
        region.get(off..off + p.len())
    };
    let parts = e.parts.iter().map(|p| map(p)).collect::<Option<Vec<_>>>()?;
    let offers = e
        .offers
        .iter()
        .map(|o| {
            Some(Offer {
                value: match o.value {
                    OfferValue::Text(t) => OfferValue::Text(map(t)?),
                    OfferValue::Int(n) => OfferValue::Int(n),
                },
                kind: o.kind,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Extracted {
        parts,
        rule: e.rule,
        hedge: e.hedge,
        offers,
        quantity: e.quantity,
    })
}

/// The answer of a gold: like [`extract_answer`] for the marker rules, and a
/// gold without markers (`\frac34`, `x \ge 2`, `C`) is the answer itself.
/// Special tokens are dropped; reasoning tags are not looked for.
pub fn extract_gold<'a>(text: &'a str, opts: &ExtractOptions) -> Option<Extracted<'a>> {
    if over_limit(text, opts) {
        return None;
    }
    // A short answer (`380`, `\frac{3}{4}`, `(3, 7)`: most golds) holds no
    // marker and no special token to look for: it is the answer itself.
    let bare = text.trim();
    if crate::math::is_short_answer(bare) {
        return Some(Extracted::new(vec![bare], Rule::Bare));
    }
    marked_gold(text, opts)
}

/// [`extract_gold`] by its markers: the first marker rule's answer, else
/// the text without special tokens.
fn marked_gold<'a>(text: &'a str, opts: &ExtractOptions) -> Option<Extracted<'a>> {
    let text = strip_special_tokens(text);
    let scan = Scan::new(text);
    opts.rules
        .iter()
        .filter(|r| r.is_marker())
        .find_map(|&rule| scan.apply(rule, opts).ok().flatten())
        .or_else(|| {
            let bare = text.trim();
            (!bare.is_empty()).then(|| Extracted::new(vec![bare], Rule::Bare))
        })
}

/// A reproducible xorshift generator for tests: each call gives a number
/// below its argument.
#[cfg(test)]
fn test_rng(mut seed: u64) -> impl FnMut(usize) -> usize {
    move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    }
}
