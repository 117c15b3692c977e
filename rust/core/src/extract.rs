//! Finding the final answer in a completion.
//!
//! One pass of an Aho-Corasick automaton over the text records every marker
//! (`\boxed`, `<answer>`, `the final answer is`, `####`, `answer:`,
//! `answer is`); the rules then read the recorded positions in priority
//! order, so the cost is linear in the input length whatever the rule list.
//! What counts as the answer is decided in docs/verify_semantics.md ("Which answer
//! counts"): explicit markers first (all boxes together, otherwise the last
//! occurrence of a marker), then the last mathematical value near the end.

use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use memchr::memmem;
use strum::{EnumString, IntoStaticStr, VariantArray, VariantNames};

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
    /// counts", rule 3): a negated answer earns nothing; alternatives are one
    /// collection answer, which never matches a single-valued gold.
    pub hedge: Option<Hedge>,
}

/// How an answer hedges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hedge {
    /// Values offered as alternatives: `1, 2, or 3`, `(A) or (C)`.
    Alternatives,
    /// A negated answer: `the answer is not 3`.
    Negated,
}

impl Hedge {
    /// What a verdict says about it (after `"hedge: "`).
    pub fn describe(self) -> &'static str {
        match self {
            Hedge::Alternatives => "alternatives offered as the answer",
            Hedge::Negated => "a negated answer",
        }
    }
}

/// Whether `text` is too long to be searched under `opts` (an over-limit
/// item is a non-match; callers report this as the reason).
pub fn over_limit(text: &str, opts: &ExtractOptions) -> bool {
    text.len() > opts.max_len
}

/// The final answer of a completion, or `None` when no rule finds one (or
/// the text is over the length limit, or has no answer region).
pub fn extract_answer<'a>(text: &'a str, opts: &ExtractOptions) -> Option<Extracted<'a>> {
    if over_limit(text, opts) {
        return None;
    }
    let scan = Scan::completion(text, opts).ok()?;
    opts.rules.iter().find_map(|&rule| scan.apply(rule, opts))
}

/// The answer of a gold: like [`extract_answer`] for the marker rules, and a
/// gold without markers (`\frac34`, `x \ge 2`, `C`) is the answer itself.
/// Special tokens are dropped; reasoning tags are not looked for.
pub fn extract_gold<'a>(text: &'a str, opts: &ExtractOptions) -> Option<Extracted<'a>> {
    if over_limit(text, opts) {
        return None;
    }
    let text = strip_special_tokens(text);
    let scan = Scan::new(text);
    opts.rules
        .iter()
        .filter(|r| r.is_marker())
        .find_map(|&rule| scan.apply(rule, opts))
        .or_else(|| {
            let bare = text.trim();
            (!bare.is_empty()).then(|| Extracted {
                parts: vec![bare],
                rule: Rule::Bare,
                hedge: None,
            })
        })
}

/// Why a completion has no answer region (see [`answer_region`]).
pub const UNCLOSED_THINK: &str = "no answer: the reasoning never closes (<think> without </think>)";

/// The part of a completion that may hold its answer (docs/verify_semantics.md
/// rules 6 and 7): special tokens at its end (`<|im_end|>`, `</s>`, `<eos>`,
/// `<pad>`, ..., repeated) are dropped; with [`ExtractOptions::think`], only
/// the text after the last `</think>` counts, and a completion whose last
/// reasoning tag opens (`<think>` never closed) has none.
///
/// The tags are found in one SIMD substring pass; boxes are then looked
/// for in the region only.
pub fn answer_region<'a>(text: &'a str, opts: &ExtractOptions) -> Result<&'a str, &'static str> {
    let text = strip_special_tokens(text);
    if !opts.think {
        return Ok(text);
    }
    let bytes = text.as_bytes();
    // The last `<think>` / `</think>`: one forward SIMD pass for `think>`.
    let mut last = None;
    for k in finders().think.find_iter(bytes) {
        if k >= 2 && &bytes[k - 2..k] == b"</" {
            last = Some(Ok(k + b"think>".len()));
        } else if k >= 1 && bytes[k - 1] == b'<' {
            last = Some(Err(UNCLOSED_THINK));
        }
    }
    match last {
        None => Ok(text),
        Some(Ok(from)) => Ok(&text[from..]),
        Some(Err(why)) => Err(why),
    }
}

struct Finders {
    boxes: memmem::Finder<'static>,
    think: memmem::Finder<'static>,
}

fn finders() -> &'static Finders {
    static F: OnceLock<Finders> = OnceLock::new();
    F.get_or_init(|| Finders {
        boxes: memmem::Finder::new("box"),
        think: memmem::Finder::new("think>"),
    })
}

/// Fixed special tokens besides the `<|...|>` family (and DeepSeek's
/// `<｜...｜>`), which are recognised by their shape.
const SPECIAL_TOKENS: [&str; 8] = [
    "</s>",
    "<s>",
    "<eos>",
    "<bos>",
    "<pad>",
    "<unk>",
    "<end_of_turn>",
    "<start_of_turn>",
];

/// The length of the special token starting at `bytes[at]` (a `<`), if one does.
fn special_token_at(bytes: &[u8], at: usize) -> Option<usize> {
    let rest = &bytes[at..];
    for (open, close) in [
        (&b"<|"[..], &b"|>"[..]),
        ("<｜".as_bytes(), "｜>".as_bytes()),
    ] {
        if let Some(inner) = rest.strip_prefix(open) {
            // A short run of name bytes, then the close: `<|im_end|>`, `<|eot_id|>`.
            let window = &inner[..inner.len().min(64)];
            let k = memmem::find(window, close)?;
            let name = &window[..k];
            let plain = !name.is_empty()
                && name
                    .iter()
                    .all(|b| !b.is_ascii_whitespace() && !matches!(b, b'<' | b'>' | b'|'));
            return plain.then_some(open.len() + k + close.len());
        }
    }
    SPECIAL_TOKENS
        .iter()
        .find(|t| rest.len() >= t.len() && rest[..t.len()].eq_ignore_ascii_case(t.as_bytes()))
        .map(|t| t.len())
}

/// `text` without the special tokens (and white space) at its end.
fn strip_special_tokens(text: &str) -> &str {
    let mut t = text.trim_end();
    while t.ends_with('>') {
        let bytes = t.as_bytes();
        // The token ends the text: its `<` is within the longest token's reach.
        let from = bytes.len().saturating_sub(80);
        let Some(at) = memchr::memrchr_iter(b'<', &bytes[from..])
            .map(|k| from + k)
            .find(|&at| special_token_at(bytes, at) == Some(bytes.len() - at))
        else {
            break;
        };
        t = t[..at].trim_end();
    }
    t
}

// Marker patterns; the index is the pattern id of the automaton.
const TAG_OPEN: usize = 0;
const TAG_CLOSE: usize = 1;
const FINAL_ANSWER: usize = 2;
const GSM8K: usize = 3;
const ANSWER_COLON: usize = 4;
const ANSWER_IS: usize = 5;
const PATTERNS: [&str; 6] = [
    "<answer>",
    "</answer>",
    "final answer is",
    "####",
    "answer:",
    "answer is",
];

fn markers() -> &'static AhoCorasick {
    static AC: OnceLock<AhoCorasick> = OnceLock::new();
    AC.get_or_init(|| {
        AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            // Leftmost-longest: "final answer is" hides the "answer is" inside it.
            .match_kind(MatchKind::LeftmostLongest)
            .build(PATTERNS)
            .expect("fixed marker patterns always build")
    })
}

/// The last occurrence of each line marker and the last `<answer>` pair.
struct Markers {
    /// End of the last match of each pattern.
    last_end: [Option<usize>; PATTERNS.len()],
    /// The last closed `<answer>…</answer>` pair: (content start, content end).
    last_tag: Option<(usize, usize)>,
}

impl Markers {
    fn new(text: &str) -> Self {
        let mut m = Markers {
            last_end: [None; PATTERNS.len()],
            last_tag: None,
        };
        for hit in markers().find_iter(text) {
            let id = hit.pattern().as_usize();
            m.last_end[id] = Some(hit.end());
            if id == TAG_CLOSE {
                if let Some(open) = m.last_end[TAG_OPEN].take() {
                    m.last_tag = Some((open, hit.start()));
                }
            }
        }
        m
    }
}

/// What the rules read of one text. Boxes come from SIMD substring search;
/// the other markers from one Aho-Corasick pass, run only when a rule asks
/// (a boxed completion never pays for it).
struct Scan<'a> {
    text: &'a str,
    /// Start of every `\boxed` / `\fbox` and the length of its keyword, in order.
    boxes: Vec<(usize, usize)>,
    markers: std::cell::OnceCell<Markers>,
}

impl<'a> Scan<'a> {
    fn new(text: &'a str) -> Self {
        let bytes = text.as_bytes();
        // `box` finds `\boxed` and `\fbox` in one SIMD pass (memmem's rare-byte
        // prefilter rarely stops in prose or LaTeX, unlike a pass over `\`).
        let boxes = finders()
            .boxes
            .find_iter(bytes)
            .filter_map(|k| {
                if k >= 1 && bytes[k - 1] == b'\\' && bytes[k + 3..].starts_with(b"ed") {
                    Some((k - 1, 6))
                } else if k >= 2 && &bytes[k - 2..k] == b"\\f" {
                    Some((k - 2, 5))
                } else {
                    None
                }
            })
            .collect();
        Scan {
            text,
            boxes,
            markers: std::cell::OnceCell::new(),
        }
    }

    /// The scan of a completion's answer region ([`answer_region`]).
    fn completion(text: &'a str, opts: &ExtractOptions) -> Result<Self, &'static str> {
        answer_region(text, opts).map(Scan::new)
    }

    fn markers(&self) -> &Markers {
        self.markers.get_or_init(|| Markers::new(self.text))
    }

    fn apply(&self, rule: Rule, opts: &ExtractOptions) -> Option<Extracted<'a>> {
        let one = |part: &'a str| Extracted {
            parts: vec![part],
            rule,
            hedge: None,
        };
        let marked = |(part, hedge): (&'a str, Option<Hedge>)| {
            Some(Extracted {
                parts: vec![part],
                rule,
                hedge,
            })
        };
        match rule {
            Rule::Boxed => self.boxed(),
            Rule::AnswerTag => self
                .answer_tag()
                .and_then(|part| marked((part, hedge_of(part)))),
            Rule::FinalAnswer => self.after(FINAL_ANSWER).and_then(marked),
            Rule::Gsm8k => self.after(GSM8K).and_then(marked),
            Rule::AnswerColon => self.after(ANSWER_COLON).and_then(marked),
            Rule::AnswerIs => self.after(ANSWER_IS).and_then(marked),
            Rule::LastValue => self.last_value(opts),
            Rule::Bold | Rule::Choice | Rule::MathSpan | Rule::LastNumber => {
                let tail = tail_start(self.text, opts.tail_len);
                self.candidate(rule, tail, opts).map(|(_, part)| one(part))
            }
            Rule::Bare => {
                let t = self.text.trim();
                // An unclosed box is a truncated answer, not a bare one.
                let bare = self.boxes.is_empty() && t.len() <= opts.max_bare_len;
                // A completion that is only bold (`**42**`) is that answer.
                let t = match t.strip_prefix("**").and_then(|r| r.strip_suffix("**")) {
                    Some(inner) if !inner.contains("**") && !inner.trim().is_empty() => {
                        inner.trim()
                    }
                    _ => t,
                };
                (bare && looks_like_an_answer(t)).then(|| one(t))
            }
        }
    }

    /// Every box that is not inside another one, in order.
    fn boxed(&self) -> Option<Extracted<'a>> {
        let text = self.text;
        let bytes = text.as_bytes();
        // Where each box's content starts: after `{` (closed later) or, for a
        // brace-less `\boxed 5`, the content itself.
        let mut opens: Vec<BoxStart> = Vec::with_capacity(self.boxes.len());
        for &(start, len) in &self.boxes {
            let after = start + len;
            // `\boxedx` is another command, not a box.
            if bytes.get(after).is_some_and(u8::is_ascii_alphabetic) {
                continue;
            }
            let mut i = after;
            while bytes.get(i).is_some_and(|b| *b == b' ' || *b == b'\t') {
                i += 1;
            }
            if bytes.get(i) == Some(&b'{') {
                opens.push(BoxStart::Brace(start, i));
            } else if i > after && i < bytes.len() {
                let end = bytes[i..]
                    .iter()
                    .position(|b| b.is_ascii_whitespace() || *b == b'$')
                    .map_or(bytes.len(), |k| i + k);
                if end > i {
                    opens.push(BoxStart::Bare(start, i, end));
                }
            }
        }
        let closes = match_braces(bytes, &opens);
        let mut parts = Vec::new();
        let mut resume = 0;
        for (open, close) in opens.iter().zip(closes) {
            let (start, content, end) = match *open {
                BoxStart::Brace(start, brace) => match close {
                    Some(c) => (start, brace + 1..c, c + 1),
                    None => continue, // unclosed: no content
                },
                BoxStart::Bare(start, from, to) => (start, from..to, to),
            };
            if start < resume {
                continue; // nested in the previous box
            }
            parts.push(text[content].trim());
            resume = end;
        }
        // A box that hedges (`\boxed{381 or 391}`, `\boxed{not 3}`) says so.
        let hedge = parts.iter().find_map(|p| hedge_of(p));
        (!parts.is_empty()).then_some(Extracted {
            parts,
            rule: Rule::Boxed,
            hedge,
        })
    }

    /// The content of the last closed `<answer>…</answer>` pair.
    fn answer_tag(&self) -> Option<&'a str> {
        let (start, end) = self.markers().last_tag?;
        Some(self.text[start..end].trim())
    }

    /// The value after the last occurrence of a line marker, and whether it
    /// hedges.
    ///
    /// A value that is prose (`Answer: The largest $n$ is 34.`) gives way to
    /// the last mathematical value inside it, except a negated one (`5, not
    /// 3` answers 5). Once a marker is found its value is the answer: values
    /// offered as alternatives (`1, 2, or 3`, `(A) or (C)`) are the answer
    /// together, and a value that is only negated (`not 3`) is a hedge; the
    /// text never falls back to the last value of the completion.
    fn after(&self, id: usize) -> Option<(&'a str, Option<Hedge>)> {
        let v = marker_value(self.text, self.markers().last_end[id]?)?;
        let upto = match read_prose(v) {
            Prose::Alternatives(region) => return Some((region, Some(Hedge::Alternatives))),
            Prose::Negated => return Some((v, Some(Hedge::Negated))),
            Prose::Plain => v.len(),
            Prose::Upto(end) => end,
        };
        if upto == v.len() && looks_like_an_answer(v) {
            return Some((v, None));
        }
        let w = &v[..upto];
        let inner = [
            last_bold(w, usize::MAX),
            last_math_span(w),
            last_choice(w, 0),
            last_number(w, 0),
        ]
        .into_iter()
        .flatten()
        .filter(|(_, part)| !part.is_empty())
        .fold(None, |best: Option<(usize, &'a str)>, c| match best {
            Some(b) if b.0 >= c.0 => Some(b),
            _ => Some(c),
        });
        Some((inner.map_or(v, |(_, part)| part), None))
    }

    /// The latest-ending of the no-marker candidates near the end.
    fn last_value(&self, opts: &ExtractOptions) -> Option<Extracted<'a>> {
        let tail = tail_start(self.text, opts.tail_len);
        // On a tie the wrapper wins: `**5**` and `$5$` end after their number.
        [Rule::Bold, Rule::MathSpan, Rule::Choice, Rule::LastNumber]
            .into_iter()
            .filter_map(|rule| {
                self.candidate(rule, tail, opts)
                    .map(|(end, part)| (end, rule, part))
            })
            .fold(None, |best: Option<(usize, Rule, &'a str)>, c| match best {
                Some(b) if b.0 >= c.0 => Some(b),
                _ => Some(c),
            })
            .map(|(_, rule, part)| Extracted {
                parts: vec![part],
                rule,
                hedge: None,
            })
    }

    /// The last candidate of a no-marker rule ending at or after `tail`: (end, part).
    fn candidate(
        &self,
        rule: Rule,
        tail: usize,
        opts: &ExtractOptions,
    ) -> Option<(usize, &'a str)> {
        let found = match rule {
            Rule::Bold => last_bold(self.text, opts.max_bold_len),
            Rule::MathSpan => last_math_span(self.text),
            Rule::Choice => last_choice(self.text, tail),
            Rule::LastNumber => last_number(self.text, tail),
            _ => None,
        };
        found.filter(|&(end, part)| end > tail && !part.is_empty())
    }
}

/// Unit words that may end a bare answer after its value (the math parser
/// reads any trailing word as decoration; extraction needs to know that this
/// one is not prose).
const UNIT_WORDS: [&str; 40] = [
    "cm", "mm", "km", "kg", "mg", "ml", "hr", "hrs", "ft", "lb", "lbs", "oz", "mi", "yd", "mph",
    "kmh", "min", "sec", "units", "unit", "meters", "metres", "meter", "inches", "inch", "feet",
    "miles", "cents", "dollars", "degrees", "seconds", "minutes", "hours", "days", "weeks",
    "months", "years", "grams", "liters", "litres",
];

/// Whether a short text is an answer rather than prose: one line, non-empty,
/// and no words but LaTeX commands and `\text{…}` contents, unless the text
/// is one word (`yes`, `x^2+2x+1`, `\frac{0}{1}`, `\text{odd}`, `1 000`).
fn looks_like_an_answer(t: &str) -> bool {
    let b = t.as_bytes();
    // Reasoning tags (left in the text by `think: false`) are not part of an answer.
    if b.is_empty() || b.contains(&b'\n') || memmem::find(b, b"think>").is_some() {
        return false;
    }
    let mut words = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            let start = i + 1;
            let mut j = start;
            while j < b.len() && b[j].is_ascii_alphabetic() {
                j += 1;
            }
            let cmd = &t[start..j];
            i = j.max(start + 1);
            if matches!(
                cmd,
                "text" | "textbf" | "mathrm" | "mbox" | "textit" | "operatorname"
            ) && b.get(j) == Some(&b'{')
            {
                // Words inside `\text{…}` are the answer, not prose.
                i = b[j..]
                    .iter()
                    .position(|&c| c == b'}')
                    .map_or(b.len(), |k| j + k + 1);
            }
            continue;
        }
        if b[i].is_ascii_alphabetic() {
            let start = i;
            while i < b.len() && b[i].is_ascii_alphabetic() {
                i += 1;
            }
            let len = i - start;
            // Letters glued to symbols (`1orW(x)`, `2xy`) are math, not a word.
            let apart = |c: Option<&u8>| {
                c.is_none_or(|c| c.is_ascii_whitespace() || b".,;:!?\"'".contains(c))
            };
            let word = apart(start.checked_sub(1).and_then(|k| b.get(k))) && apart(b.get(i));
            // A unit after a value (`2\pi cm`, `12 meters.`) is decoration.
            let unit = start > 0
                && t[i..].trim_end_matches(['.', '!']).is_empty()
                && UNIT_WORDS.contains(&t[start..i].to_ascii_lowercase().as_str());
            if len >= 2 && word && !unit {
                // A word is an answer only alone (`yes`, `odd.`).
                words += 1;
                let rest = t[..start].len() + t[i..].trim_end_matches(['.', '!']).len();
                if words > 1 || len > 12 || rest > 0 {
                    return false;
                }
            }
            continue;
        }
        i += 1;
    }
    true
}

/// The byte offset where the last `tail_len` bytes start (a char boundary).
fn tail_start(text: &str, tail_len: usize) -> usize {
    let mut i = text.len().saturating_sub(tail_len);
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

enum BoxStart {
    /// Keyword start, position of its `{`.
    Brace(usize, usize),
    /// Keyword start, content range of a brace-less box.
    Bare(usize, usize, usize),
}

/// The position of the `}` closing each brace box, in one pass over the text.
///
/// Braces are counted with escaped ones skipped (`\{1,2\}`). Only box braces
/// are remembered, with the depth they opened at, so the memory is one entry
/// per box and the time linear even for `\boxed{` repeated 10^5 times unclosed.
fn match_braces(bytes: &[u8], opens: &[BoxStart]) -> Vec<Option<usize>> {
    let mut closes = vec![None; opens.len()];
    let braces: Vec<(usize, usize)> = opens
        .iter()
        .enumerate()
        .filter_map(|(k, o)| match *o {
            BoxStart::Brace(_, b) => Some((b, k)),
            BoxStart::Bare(..) => None,
        })
        .collect();
    let Some(&(first, _)) = braces.first() else {
        return closes;
    };
    let mut next = 0; // the next box brace to reach
    let mut open: Vec<(isize, usize)> = Vec::new(); // (depth inside, box)
    let mut depth: isize = 0;
    let mut j = first;
    // memchr3 jumps over the plain text between braces and backslashes.
    while let Some(k) = memchr::memchr3(b'{', b'}', b'\\', &bytes[j..]) {
        let at = j + k;
        j = at + 1;
        match bytes[at] {
            b'\\' => j = at + 2,
            b'{' => {
                depth += 1;
                // Defensive: a box brace is never escaped, but never stall on one.
                while braces.get(next).is_some_and(|&(b, _)| b < at) {
                    next += 1;
                }
                if braces.get(next).is_some_and(|&(b, _)| b == at) {
                    open.push((depth, braces[next].1));
                    next += 1;
                }
            }
            _ => {
                if open.last().is_some_and(|&(d, _)| d == depth) {
                    if let Some((_, k)) = open.pop() {
                        closes[k] = Some(at);
                    }
                }
                depth -= 1;
            }
        }
        if j >= bytes.len() {
            break;
        }
    }
    closes
}

/// The value after a line marker ending at `start`.
///
/// A value that opens with `$`, `$$`, `\(` or `\[` runs to its closing
/// delimiter; otherwise it runs to the end of the line or of the sentence
/// (a `.` followed by a space). Trailing punctuation and bold markers go.
fn marker_value(text: &str, start: usize) -> Option<&str> {
    let mut s = &text[start..];
    s = s.trim_start_matches([' ', '\t', ':']);
    s = s.strip_prefix("**").unwrap_or(s);
    s = s.trim_start();
    for (open, close) in [("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")] {
        if let Some(inner) = s.strip_prefix(open) {
            if let Some(k) = find_close(inner, close) {
                let v = &s[..open.len() + k + close.len()];
                // `$x<1$ or $x>3$`, `$3$ (or $4$)`, `$3$, or maybe $4$`: the
                // alternatives are the value, read as a line.
                let offered = starts_with_or(&s[v.len()..])
                    || line_value(s).is_some_and(|line| {
                        matches!(read_prose(line), Prose::Alternatives(r) if r.as_ptr() == v.as_ptr())
                    });
                if !offered {
                    return Some(v).filter(|v| v.len() > open.len() + close.len());
                }
                break;
            }
        }
    }
    line_value(s)
}

/// A marker's value read as text: its line up to the end of the sentence, or
/// up to a special token.
fn line_value(s: &str) -> Option<&str> {
    let line = s.split('\n').next().unwrap_or("");
    // A special token ends the line (`Answer: 72<|im_end|> ...`).
    let line = memchr::memchr_iter(b'<', line.as_bytes())
        .find(|&at| special_token_at(line.as_bytes(), at).is_some())
        .map_or(line, |at| &line[..at]);
    let bytes = line.as_bytes();
    let sentence_end = (0..bytes.len())
        .find(|&i| bytes[i] == b'.' && bytes.get(i + 1).is_some_and(|b| *b == b' '))
        .unwrap_or(line.len());
    let v = trim_value(&line[..sentence_end]);
    (!v.is_empty()).then_some(v)
}

/// The first `close` in `inner` that is not escaped (`$\$18$` closes at
/// its second `$`).
fn find_close(inner: &str, close: &str) -> Option<usize> {
    let bytes = inner.as_bytes();
    memmem::find_iter(bytes, close.as_bytes()).find(|&k| {
        let slashes = bytes[..k].iter().rev().take_while(|&&b| b == b'\\').count();
        slashes % 2 == 0
    })
}

/// Whether `rest` goes on with the word `or` (`or`, `\text{ or }`).
fn starts_with_or(rest: &str) -> bool {
    let r = rest.trim_start();
    let r = r
        .strip_prefix("\\text{")
        .or_else(|| r.strip_prefix("\\mbox{"))
        .map_or(r, str::trim_start);
    let b = r.as_bytes();
    b.len() >= 2
        && b[..2].eq_ignore_ascii_case(b"or")
        && b.get(2).is_none_or(|c| !c.is_ascii_alphanumeric())
}

/// What the words of a marker's value say about its values.
#[derive(Debug, PartialEq, Eq)]
enum Prose<'a> {
    /// Nothing to say: read the value as usual.
    Plain,
    /// Values joined by `or`: the part of the text that holds them.
    Alternatives(&'a str),
    /// Every value is negated (`not 3`, `isn't 3 or 4`).
    Negated,
    /// Some values are negated; the last one that is not ends here.
    Upto(usize),
}

/// Words that offer the value after them as an alternative to the one
/// before, as `or` does (`3, perhaps 4`, `3, or maybe 4`); any other word
/// ends the alternatives (`3, or equivalently 6/2` answers 6/2).
const HEDGING: [&str; 9] = [
    "maybe",
    "perhaps",
    "possibly",
    "probably",
    "likely",
    "alternatively",
    "otherwise",
    "else",
    "even",
];

/// Reads a value's values (numbers, `$…$` spans, LaTeX commands, choice
/// letters, bold) and words: `or` between values makes alternatives, `not`,
/// `never` or `…n't` before a value negates it (and the values joined to it
/// by `or`, `nor`, `and` or a comma) until another word. One pass, linear.
fn read_prose(v: &str) -> Prose<'_> {
    #[derive(PartialEq)]
    enum Neg {
        None,
        Pending,
        Applied,
    }
    let b = v.as_bytes();
    let mut neg = Neg::None;
    let (mut any_val, mut any_negated, mut last_plain_end) = (false, false, None);
    // The run of math before an `or`: where it starts, whether it has a value.
    let mut run: Option<(usize, bool)> = None;
    let mut pending_or: Option<usize> = None; // run start, when `or` follows a value
    let mut alt: Option<(usize, usize)> = None;
    // Closers known to be absent from the rest (so unclosed openers stay linear).
    let mut unclosed = [false; 4];
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        // A value token: its end.
        let mut val_end = None;
        let mut word: Option<(usize, usize)> = None;
        match c {
            b'$' => {
                let (open, close, memo) = if b.get(i + 1) == Some(&b'$') {
                    (2, "$$", 0)
                } else {
                    (1, "$", 1)
                };
                match (!unclosed[memo])
                    .then(|| find_close(&v[i + open..], close))
                    .flatten()
                {
                    Some(k) => val_end = Some(i + open + k + close.len()),
                    None => {
                        unclosed[memo] = true;
                        i += open;
                        continue;
                    }
                }
            }
            b'\\' => {
                let n = b.get(i + 1).copied();
                if let Some((close, memo)) = match n {
                    Some(b'(') => Some(("\\)", 2)),
                    Some(b'[') => Some(("\\]", 3)),
                    _ => None,
                } {
                    match (!unclosed[memo])
                        .then(|| find_close(&v[i + 2..], close))
                        .flatten()
                    {
                        Some(k) => val_end = Some(i + 2 + k + 2),
                        None => {
                            unclosed[memo] = true;
                            i += 2;
                            continue;
                        }
                    }
                } else {
                    let mut j = i + 1;
                    while j < b.len() && b[j].is_ascii_alphabetic() {
                        j += 1;
                    }
                    let cmd = &v[i + 1..j];
                    if j == i + 1 {
                        i += 2; // `\$`, `\,`, `\{`: an escape, no value
                        continue;
                    }
                    if matches!(cmd, "text" | "textbf" | "mathrm" | "mbox" | "textit")
                        && b.get(j) == Some(&b'{')
                    {
                        i = j + 1; // the words inside are read as words
                        continue;
                    }
                    // A command and its brace groups: `\frac{1}{2}`, `\pi`.
                    while b.get(j) == Some(&b'{') {
                        let mut depth = 0usize;
                        while j < b.len() {
                            match b[j] {
                                b'{' => depth += 1,
                                b'}' => {
                                    depth -= 1;
                                    if depth == 0 {
                                        j += 1;
                                        break;
                                    }
                                }
                                b'\\' => j += 1,
                                _ => {}
                            }
                            j += 1;
                        }
                    }
                    val_end = Some(j.min(b.len()));
                }
            }
            b'0'..=b'9' if i == 0 || !b[i - 1].is_ascii_alphabetic() => {
                val_end = Some(number_at(v, i).1);
            }
            b'(' if b.get(i + 2) == Some(&b')') && CHOICES.contains(&b[i + 1]) => {
                val_end = Some(i + 3);
            }
            b'*' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                continue;
            }
            c if c.is_ascii_alphabetic() => {
                let mut j = i;
                while j < b.len()
                    && (b[j].is_ascii_alphanumeric()
                        || (b[j] == b'\'' && b.get(j + 1).is_some_and(u8::is_ascii_alphabetic)))
                {
                    j += 1;
                }
                word = Some((i, j));
            }
            _ => {
                i += 1;
                continue;
            }
        }
        if let Some((ws, we)) = word {
            let w = &v.as_bytes()[ws..we];
            let is = |s: &str| w.eq_ignore_ascii_case(s.as_bytes());
            let single = we - ws == 1;
            let bounded = b.get(we).is_none_or(|c| !c.is_ascii_alphabetic());
            if single && bounded && CHOICES.contains(&b[ws]) {
                val_end = Some(we); // a choice letter
            } else if single {
                // A variable (`x = 2 or x = -2`): math, part of the run.
                run.get_or_insert((ws, false));
                i = we;
                continue;
            } else {
                let negation = is("not")
                    || is("never")
                    || (w.len() >= 3 && w[w.len() - 3..].eq_ignore_ascii_case(b"n't"));
                if negation {
                    neg = Neg::Pending;
                } else if is("or") || is("nor") || HEDGING.iter().any(|h| is(h)) {
                    // `3 or 4`, `3, or maybe 4`, `3 (possibly 4)`.
                    if let Some((start, true)) = run {
                        pending_or = Some(alt.map_or(start, |(s, _)| s));
                    }
                } else if !is("and") {
                    if neg == Neg::Applied {
                        neg = Neg::None;
                    }
                    run = None;
                    pending_or = None;
                }
                i = we;
                continue;
            }
        }
        let Some(end) = val_end else {
            i += 1;
            continue;
        };
        let start = i;
        any_val = true;
        if neg != Neg::None {
            neg = Neg::Applied;
            any_negated = true;
        } else {
            last_plain_end = Some(end);
        }
        let run_start = run.map_or(start, |(s, _)| s);
        run = Some((run_start, true));
        if let Some(from) = pending_or {
            alt = Some((from, end));
        }
        i = end.max(i + 1);
    }
    match (any_val, any_negated, alt) {
        (true, true, _) if last_plain_end.is_none() => Prose::Negated,
        (_, true, Some(_)) => Prose::Negated,
        (_, false, Some((s, e))) => Prose::Alternatives(v[s..e].trim()),
        (_, true, None) => last_plain_end.map_or(Prose::Negated, Prose::Upto),
        _ => Prose::Plain,
    }
}

/// Whether one extracted part hedges.
fn hedge_of(part: &str) -> Option<Hedge> {
    match read_prose(part) {
        Prose::Alternatives(_) => Some(Hedge::Alternatives),
        Prose::Negated => Some(Hedge::Negated),
        Prose::Plain | Prose::Upto(_) => None,
    }
}

fn trim_value(v: &str) -> &str {
    let mut v = v.trim();
    loop {
        let before = v.len();
        v = v.trim_end_matches(['.', ',', ';', '!', '?', ' ', '\t', '\r']);
        v = v.strip_suffix("**").unwrap_or(v);
        if v.len() == before {
            return v;
        }
    }
}

/// The last complete `**…**` pair: (end, content).
fn last_bold(text: &str, max_len: usize) -> Option<(usize, &str)> {
    let mut open: Option<usize> = None;
    let mut last = None;
    for at in memmem::find_iter(text.as_bytes(), b"**") {
        // memmem reports non-overlapping matches, so `***` is one `**` then `*`.
        match open.take() {
            Some(o) => {
                let content = text[o..at].trim();
                if content.len() <= max_len && !content.contains('\n') {
                    last = Some((at + 2, trim_value(content)));
                }
            }
            None => open = Some(at + 2),
        }
    }
    last
}

/// The last complete `$…$`, `$$…$$`, `\(…\)` or `\[…\]` span: (end, span).
/// Delimiters are paired from the start of the text, so a `$` in the middle
/// of a span never opens a new one.
fn last_math_span(text: &str) -> Option<(usize, &str)> {
    let bytes = text.as_bytes();
    // The closing delimiter of the open span, and where it opened.
    let mut open: Option<(&[u8], usize)> = None;
    let mut last = None;
    let mut i = 0;
    while let Some(k) = memchr::memchr2(b'$', b'\\', &bytes[i..]) {
        let at = i + k;
        let next = bytes.get(at + 1).copied();
        let (token, len): (&[u8], usize) = match (bytes[at], next) {
            (b'\\', Some(b'(')) => (b"\\(", 2),
            (b'\\', Some(b')')) => (b"\\)", 2),
            (b'\\', Some(b'[')) => (b"\\[", 2),
            (b'\\', Some(b']')) => (b"\\]", 2),
            (b'\\', Some(_)) => (b"", 2), // any other escape, `\$` included
            (b'\\', None) => (b"", 1),
            (_, Some(b'$')) => (b"$$", 2),
            _ => (b"$", 1),
        };
        i = at + len;
        match open {
            Some((close, start)) if token == close => {
                last = Some((i, text[start..i].trim()));
                open = None;
            }
            Some((b"$", start)) if token == b"$$" => {
                // `$x$$y$`: the first `$` closes, the second opens.
                last = Some((at + 1, &text[start..at + 1]));
                open = Some((b"$", at));
            }
            Some(_) => {}
            None => {
                let close: &[u8] = match token {
                    b"\\(" => b"\\)",
                    b"\\[" => b"\\]",
                    b"$$" => b"$$",
                    b"$" => b"$",
                    _ => continue,
                };
                open = Some((close, at));
            }
        }
        if i >= bytes.len() {
            break;
        }
    }
    last
}

const CHOICES: std::ops::RangeInclusive<u8> = b'A'..=b'J';

/// The last `(X)` in the tail, or a lone capital letter ending the text
/// (`…so the best option is B.`): (end, letter).
fn last_choice(text: &str, tail: usize) -> Option<(usize, &str)> {
    let bytes = text.as_bytes();
    let mut last = None;
    let region = &bytes[tail..];
    for k in memchr::memchr_iter(b'(', region) {
        let at = tail + k;
        if bytes.get(at + 2) == Some(&b')') && CHOICES.contains(&bytes[at + 1]) {
            last = Some((at + 3, &text[at + 1..at + 2]));
        }
    }
    let t = trim_value(text.trim_end_matches(['$', '*', ')', '}']));
    let end = t.as_ptr() as usize - text.as_ptr() as usize + t.len();
    if end >= 1 && end > tail && CHOICES.contains(&bytes[end - 1]) {
        let lone = end == 1 || !bytes[end - 2].is_ascii_alphanumeric();
        if lone && last.is_none_or(|(e, _)| e < end) {
            last = Some((end, &text[end - 1..end]));
        }
    }
    last
}

/// The last number starting in the tail: `-1,234.5`, `3/4`, `12%`: (end, number).
fn last_number(text: &str, tail: usize) -> Option<(usize, &str)> {
    let bytes = text.as_bytes();
    // Back up so that a number straddling the tail start is read whole.
    let mut i = tail;
    while i > 0 && (bytes[i - 1].is_ascii_digit() || matches!(bytes[i - 1], b'.' | b',')) {
        i -= 1;
    }
    let mut last = None;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        if i > 0 && bytes[i - 1].is_ascii_alphabetic() {
            // `AZYUK2A`, `x2`: part of a name, not a number.
            i = digits_end(bytes, i);
            continue;
        }
        let (start, end) = number_at(text, i);
        last = Some((end, &text[start..end]));
        i = end;
    }
    last
}

/// The number whose first digit is at `i`: (start, end), a sign, thousands
/// groups, decimals, `a/b`, a plain-text mixed number and a percent included.
fn number_at(text: &str, i: usize) -> (usize, usize) {
    let bytes = text.as_bytes();
    let mut start = i;
    if start > 0 && bytes[start - 1] == b'-' {
        start -= 1;
    }
    let mut j = digits_end(bytes, i);
    // A mixed number `4 4/9` (plain text): integer, space, fraction.
    if bytes.get(j) == Some(&b' ') {
        let a = digits_end(bytes, j + 1);
        if a > j + 1 && bytes.get(a) == Some(&b'/') {
            let b = digits_end(bytes, a + 1);
            if b > a + 1 {
                return (start, start + percent_end(text, b, start).len());
            }
        }
    }
    // Digit groups joined by commas are read whole and the parser decides
    // what they are: thousands (`1,250`), a decimal comma (`2,74`) or a list
    // (`1,2,3`, which never answers a single-valued gold, unlike its last
    // number alone).
    while bytes.get(j) == Some(&b',') && bytes.get(j + 1).is_some_and(u8::is_ascii_digit) {
        j = digits_end(bytes, j + 1);
    }
    if bytes.get(j) == Some(&b'.') && bytes.get(j + 1).is_some_and(u8::is_ascii_digit) {
        j = digits_end(bytes, j + 1);
    }
    if bytes.get(j) == Some(&b'/') && bytes.get(j + 1).is_some_and(u8::is_ascii_digit) {
        j = digits_end(bytes, j + 1);
    }
    (start, start + percent_end(text, j, start).len())
}

/// `text[start..j]` extended over a percent sign or word after it
/// (`12%`, `12\%`, `12 percent`, `4 4/9pct`).
fn percent_end(text: &str, j: usize, start: usize) -> &str {
    let rest = &text[j..];
    let glued = rest.trim_start_matches(' ');
    let spaces = rest.len() - glued.len();
    for (word, needs_no_space) in [
        ("%", true),
        ("\\%", true),
        ("percentage", false),
        ("percent", false),
        ("pct", false),
    ] {
        let (cand, skip) = if needs_no_space {
            (rest, 0)
        } else {
            (glued, spaces)
        };
        if skip > 1 {
            continue;
        }
        let b = cand.as_bytes();
        if b.len() >= word.len() && b[..word.len()].eq_ignore_ascii_case(word.as_bytes()) {
            let end = j + skip + word.len();
            // A word must end there (`percentage`, not `pctx`).
            if needs_no_space
                || !text
                    .as_bytes()
                    .get(end)
                    .is_some_and(u8::is_ascii_alphabetic)
            {
                return &text[start..end];
            }
        }
    }
    &text[start..j]
}

fn digits_end(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ans(text: &str) -> Option<(Vec<&str>, Rule)> {
        extract_answer(text, &ExtractOptions::default()).map(|e| (e.parts, e.rule))
    }

    fn one(text: &str) -> (&str, Rule) {
        let (parts, rule) = ans(text).expect("an answer");
        assert_eq!(parts.len(), 1, "{parts:?}");
        (parts[0], rule)
    }

    #[test]
    fn boxes_with_nested_and_escaped_braces() {
        assert_eq!(
            one("so \\boxed{\\frac{1}{2}} done"),
            ("\\frac{1}{2}", Rule::Boxed)
        );
        assert_eq!(one("\\boxed{\\{1, 2\\}}"), ("\\{1, 2\\}", Rule::Boxed));
        assert_eq!(one("\\fbox{7}"), ("7", Rule::Boxed));
        assert_eq!(one("$\\boxed 5$"), ("5", Rule::Boxed));
        assert_eq!(one("\\boxed { 3 }"), ("3", Rule::Boxed));
        // A box inside a box is one answer.
        assert_eq!(one("\\boxed{\\boxed{3}}"), ("\\boxed{3}", Rule::Boxed));
    }

    #[test]
    fn several_boxes_are_all_parts() {
        let (parts, rule) = ans("\\boxed{(2,2)} and \\boxed{(6,2)}").expect("boxes");
        assert_eq!(parts, vec!["(2,2)", "(6,2)"]);
        assert_eq!(rule, Rule::Boxed);
    }

    #[test]
    fn unclosed_box_is_skipped() {
        assert_eq!(one("the answer is 4. \\boxed{4"), ("4", Rule::AnswerIs));
        assert_eq!(ans("\\boxedx{4}"), Some((vec!["4"], Rule::LastNumber)));
        assert_eq!(ans("\\boxed{}"), Some((vec![""], Rule::Boxed)));
    }

    #[test]
    fn box_beats_other_markers() {
        assert_eq!(
            one("Answer: 3\n#### 4\n\\boxed{5} the answer is 6"),
            ("5", Rule::Boxed)
        );
    }

    #[test]
    fn answer_tag_last_pair() {
        assert_eq!(
            one("<think>hm</think><answer> 4 </answer> <answer>x = 5</answer>"),
            ("x = 5", Rule::AnswerTag)
        );
        assert_eq!(one("<ANSWER>7</ANSWER>"), ("7", Rule::AnswerTag));
    }

    #[test]
    fn minerva_final_answer() {
        assert_eq!(
            one("Final Answer: The final answer is $\\frac{3}{4}$. I hope it is correct."),
            ("$\\frac{3}{4}$", Rule::FinalAnswer)
        );
        assert_eq!(
            one("Final Answer: The final answer is 12. I hope it is correct."),
            ("12", Rule::FinalAnswer)
        );
    }

    #[test]
    fn gsm8k_hashes_last_wins() {
        assert_eq!(one("a\n#### 70\nwait\n#### 72"), ("72", Rule::Gsm8k));
        assert_eq!(one("#### 1,080\n"), ("1,080", Rule::Gsm8k));
    }

    #[test]
    fn answer_colon_forms() {
        assert_eq!(one("Answer: 42"), ("42", Rule::AnswerColon));
        assert_eq!(one("**Answer:** 42."), ("42", Rule::AnswerColon));
        assert_eq!(one("**Answer: 42**"), ("42", Rule::AnswerColon));
        assert_eq!(
            one("Answer: 1\nno, Answer: 2\nthanks"),
            ("2", Rule::AnswerColon)
        );
    }

    #[test]
    fn answer_is_sentence() {
        assert_eq!(
            one("So the answer is 3.5. Done, 7 steps."),
            ("3.5", Rule::AnswerIs)
        );
        assert_eq!(one("The answer is: (B)"), ("(B)", Rule::AnswerIs));
        assert_eq!(
            one("the answer is 1. No wait, the answer is 2."),
            ("2", Rule::AnswerIs)
        );
        assert_eq!(
            one("The answer is $x = 5$. Also 7."),
            ("$x = 5$", Rule::AnswerIs)
        );
    }

    #[test]
    fn last_value_picks_the_latest() {
        assert_eq!(one("first 3 then 4"), ("4", Rule::LastNumber));
        assert_eq!(one("so $\\frac{1}{2}$"), ("$\\frac{1}{2}$", Rule::MathSpan));
        assert_eq!(one("it is $x=2$, then 9"), ("9", Rule::LastNumber));
        assert_eq!(one("total **12** apples"), ("12", Rule::Bold));
        assert_eq!(one("so -1,234.5 m"), ("-1,234.5", Rule::LastNumber));
        assert_eq!(one("about 3/4 of it"), ("3/4", Rule::LastNumber));
        assert_eq!(one("that is 12%."), ("12%", Rule::LastNumber));
        // Digit groups joined by commas are one value for the parser: a
        // decimal comma (`1,23`), or a list, never its last number alone.
        assert_eq!(one("pick 2, 1,23"), ("1,23", Rule::LastNumber));
        assert_eq!(one("we get 1,2,3"), ("1,2,3", Rule::LastNumber));
        assert_eq!(one("the point is (3,4)."), ("3,4", Rule::LastNumber));
        assert_eq!(
            one("it costs 1,250.50 dollars"),
            ("1,250.50", Rule::LastNumber)
        );
        assert_eq!(one("\\[ x^2 \\] ok"), ("\\[ x^2 \\]", Rule::MathSpan));
        assert_eq!(one("I choose (C) here"), ("C", Rule::Choice));
        assert_eq!(one("so it must be B."), ("B", Rule::Choice));
        assert_eq!(ans("no value here at all"), None);
        assert_eq!(ans("Is it A cat?"), None);
    }

    #[test]
    fn a_bare_completion_is_its_own_answer() {
        assert_eq!(one("\\frac{0}{1}"), ("\\frac{0}{1}", Rule::Bare));
        assert_eq!(one(" 1 000 "), ("1 000", Rule::Bare));
        assert_eq!(one("x \\ge 2"), ("x \\ge 2", Rule::Bare));
        assert_eq!(one("\\text{odd}"), ("\\text{odd}", Rule::Bare));
        assert_eq!(one("yes"), ("yes", Rule::Bare));
        assert_eq!(one("W(x)=1orW(x)=-1"), ("W(x)=1orW(x)=-1", Rule::Bare));
        assert_eq!(one("2xy+1"), ("2xy+1", Rule::Bare));
        // Prose is not an answer: the last value is.
        assert_eq!(one("it is 5"), ("5", Rule::LastNumber));
        assert_eq!(one("two cats and 3 dogs"), ("3", Rule::LastNumber));
        assert_eq!(one("so $x$\n5"), ("5", Rule::LastNumber));
    }

    #[test]
    fn prose_after_a_marker_gives_its_last_value() {
        assert_eq!(
            one("Final Answer: The largest $n$ is 34."),
            ("34", Rule::AnswerColon)
        );
        assert_eq!(one("the answer is 3 apples"), ("3", Rule::AnswerIs));
        assert_eq!(one("Answer: Paris"), ("Paris", Rule::AnswerColon));
        assert_eq!(one("Answer: New York"), ("New York", Rule::AnswerColon));
    }

    #[test]
    fn numbers_mixed_percent_and_names() {
        assert_eq!(one("it is 4 4/9 of them"), ("4 4/9", Rule::LastNumber));
        assert_eq!(
            one("it is 4 4/9 percent"),
            ("4 4/9 percent", Rule::LastNumber)
        );
        assert_eq!(one("so 12\\% of it"), ("12\\%", Rule::LastNumber));
        assert_eq!(one("so 12pct of it"), ("12pct", Rule::LastNumber));
        assert_eq!(one("so 12 pctx"), ("12", Rule::LastNumber));
        assert_eq!(one("see 3 and AZYUK2A"), ("3", Rule::LastNumber));
    }

    #[test]
    fn last_value_only_near_the_end() {
        let text = format!("x = 5 {}", "words ".repeat(200));
        assert_eq!(ans(&text), None);
        let opts = ExtractOptions {
            tail_len: 10_000,
            ..ExtractOptions::default()
        };
        let e = extract_answer(&text, &opts).expect("found with a wide tail");
        assert_eq!(e.parts, vec!["5"]);
    }

    #[test]
    fn configurable_rules() {
        let opts = ExtractOptions {
            rules: vec![Rule::Gsm8k, Rule::Boxed],
            ..ExtractOptions::default()
        };
        let e = extract_answer("\\boxed{1}\n#### 2", &opts).expect("gsm8k first");
        assert_eq!((e.parts, e.rule), (vec!["2"], Rule::Gsm8k));
        let only_box = ExtractOptions {
            rules: vec![Rule::Boxed],
            ..ExtractOptions::default()
        };
        assert_eq!(extract_answer("Answer: 3", &only_box), None);
        assert_eq!(Rule::from_name("gsm8k"), Some(Rule::Gsm8k));
        assert_eq!(Rule::from_name("bare"), Some(Rule::Bare));
        assert_eq!(Rule::from_name("nope"), None);
        for r in Rule::ALL {
            assert!(<Rule as VariantNames>::VARIANTS.contains(&r.name()));
        }
    }

    #[test]
    fn gold_is_bare_unless_marked() {
        let o = ExtractOptions::default();
        let g = |t| extract_gold(t, &o).map(|e| (e.parts, e.rule));
        assert_eq!(g(" \\frac34 "), Some((vec!["\\frac34"], Rule::Bare)));
        assert_eq!(g("x \\ge 2"), Some((vec!["x \\ge 2"], Rule::Bare)));
        assert_eq!(
            g("She has 3 + 4 = 7.\n#### 72"),
            Some((vec!["72"], Rule::Gsm8k))
        );
        assert_eq!(g("   "), None);
    }

    #[test]
    fn length_limit() {
        let opts = ExtractOptions {
            max_len: 8,
            ..ExtractOptions::default()
        };
        assert!(over_limit("\\boxed{12}", &opts));
        assert_eq!(extract_answer("\\boxed{12}", &opts), None);
        assert_eq!(extract_gold("\\boxed{12}", &opts), None);
    }

    #[test]
    fn utf8_tail_boundary() {
        let text = format!("{} 7", "é".repeat(400));
        assert_eq!(one(&text), ("7", Rule::LastNumber));
    }

    #[test]
    fn pathological_inputs_stay_linear() {
        // 10^5 nested braces, unclosed: no answer and no stack growth.
        let deep = format!("\\boxed{}", "{".repeat(100_000));
        let _ = ans(&deep);
        let many = "\\boxed{1}".repeat(20_000);
        assert_eq!(ans(&many).map(|(p, _)| p.len()), Some(20_000));
        let dollars = "$".repeat(100_001);
        let _ = ans(&dollars);
        let stars = "*".repeat(100_001);
        let _ = ans(&stars);
    }

    fn hedge(text: &str) -> Option<Hedge> {
        extract_answer(text, &ExtractOptions::default()).and_then(|e| e.hedge)
    }

    #[test]
    fn alternatives_after_a_marker_are_the_answer_together() {
        for (text, want) in [
            ("the answer is 1, 2, or 3", "1, 2, or 3"),
            ("The answer is (A) or (C)", "(A) or (C)"),
            ("Answer: 4 or 3", "4 or 3"),
            ("#### 4 or 3", "4 or 3"),
            ("So the answer is either 4 or 3 apples.", "4 or 3"),
            ("The answer is $x<1$ or $x>3$.", "$x<1$ or $x>3$"),
            ("Answer: x = 2 or x = -2", "x = 2 or x = -2"),
            (
                "Final Answer: The final answer is $3$ or $4$. I hope it is correct.",
                "$3$ or $4$",
            ),
            // A span followed by more alternatives in the same sentence.
            ("The answer is $3$, or $4$", "$3$, or $4$"),
            ("The answer is $3$ (or $4$)", "$3$ (or $4$"),
            ("The answer is $3$ and/or $4$.", "$3$ and/or $4$"),
            ("The answer is $3$ \u{2014} or $4$", "$3$ \u{2014} or $4$"),
            (
                "Final Answer: The final answer is $3$ (or $4$). I hope it is correct.",
                "$3$ (or $4$",
            ),
            // Hedging words between `or` and its value.
            ("The answer is 3, or perhaps 4.", "3, or perhaps 4"),
            (
                "The answer is $3$ or maybe even $4$",
                "$3$ or maybe even $4$",
            ),
            ("The answer is $3$ (possibly $4$)", "$3$ (possibly $4$"),
            ("Answer: 3, probably 4", "3, probably 4"),
        ] {
            let e = extract_answer(text, &ExtractOptions::default()).expect(text);
            assert_eq!(e.parts, vec![want], "{text}");
            assert_eq!(e.hedge, Some(Hedge::Alternatives), "{text}");
            assert_ne!(e.rule, Rule::LastValue);
        }
        assert_eq!(hedge("\\boxed{381 or 391}"), Some(Hedge::Alternatives));
        // `or` that offers no second value is no hedge.
        assert_eq!(one("the answer is 3 or more apples"), ("3", Rule::AnswerIs));
        assert_eq!(
            one("the answer is 3, or equivalently 6/2"),
            ("6/2", Rule::AnswerIs)
        );
        assert_eq!(hedge("the answer is 3 or more apples"), None);
        assert_eq!(one("The answer is probably 3."), ("3", Rule::AnswerIs));
        // A span followed by other values that are no alternatives stays the answer.
        assert_eq!(
            one("The answer is $5$ because $x = 2$."),
            ("$5$", Rule::AnswerIs)
        );
        assert_eq!(one("The answer is $5$, not $4$."), ("$5$", Rule::AnswerIs));
        assert_eq!(
            one("Answer: $12$ (or, in words, twelve)"),
            ("$12$", Rule::AnswerColon)
        );
    }

    #[test]
    fn a_negated_answer_is_a_hedge() {
        for text in [
            "the answer is not 3",
            "The answer is not $3$.",
            "the answer isn't 3",
            "Answer: it is never 3",
            "the answer is not 3 or 4",
            "\\boxed{\\text{not } 3}",
        ] {
            assert_eq!(hedge(text), Some(Hedge::Negated), "{text}");
        }
        // The value that is not negated answers.
        assert_eq!(one("Answer: 5, not 3"), ("5", Rule::AnswerColon));
        assert_eq!(one("the answer is not 3 but 4"), ("4", Rule::AnswerIs));
        assert_eq!(hedge("the answer is not 3 but 4"), None);
        // `\neq` is math, not a word.
        assert_eq!(hedge("Answer: x \\neq 3"), None);
    }

    #[test]
    fn escaped_dollars_do_not_close_a_span() {
        assert_eq!(
            one("The final answer is $\\$18$. I hope it is correct."),
            ("$\\$18$", Rule::FinalAnswer)
        );
        assert_eq!(one("The answer is $\\$18$."), ("$\\$18$", Rule::AnswerIs));
        assert_eq!(one("Answer: $\\$18$"), ("$\\$18$", Rule::AnswerColon));
        assert_eq!(find_close("\\$18$", "$"), Some(4));
        assert_eq!(find_close("a\\\\$", "$"), Some(3));
    }

    #[test]
    fn a_value_with_its_unit_is_a_bare_answer() {
        // docs/verify_semantics.md: trailing units are decoration, after a
        // value or a constant expression (`2\pi \text{ cm}` = `2\pi`).
        assert_eq!(one("2\\pi cm"), ("2\\pi cm", Rule::Bare));
        assert_eq!(one("12 meters."), ("12 meters.", Rule::Bare));
        assert_eq!(one("3\\sqrt2 inches"), ("3\\sqrt2 inches", Rule::Bare));
        // Prose is not: a word that is no unit, or a unit before more words.
        assert_eq!(one("2\\pi apples"), ("2", Rule::LastNumber));
        assert_eq!(one("5 dollars and 3 cents"), ("3", Rule::LastNumber));
        assert_eq!(ans("cm"), Some((vec!["cm"], Rule::Bare)));
    }

    #[test]
    fn a_bold_completion_is_its_answer() {
        assert_eq!(one("**42**"), ("42", Rule::Bare));
        assert_eq!(one(" **$42$** "), ("$42$", Rule::Bare));
        assert_eq!(one("**Answer:** 42"), ("42", Rule::AnswerColon));
    }

    #[test]
    fn only_the_text_after_the_last_think_counts() {
        let o = ExtractOptions::default();
        assert_eq!(
            one("<think>\\boxed{3}</think> so \\boxed{5}"),
            ("5", Rule::Boxed)
        );
        assert_eq!(
            one("<think>a</think>x<think>b</think> the answer is 7"),
            ("7", Rule::AnswerIs)
        );
        // The opening tag may sit in the prompt.
        assert_eq!(
            one("hmm \\boxed{3} ok</think>Answer: 4"),
            ("4", Rule::AnswerColon)
        );
        // Nothing after the reasoning, or reasoning never closed: no answer.
        assert_eq!(ans("<think>\\boxed{3}</think>"), None);
        assert_eq!(ans("<think>so \\boxed{3}"), None);
        assert_eq!(ans("<think>a</think> 4 <think>b \\boxed{3}"), None);
        assert_eq!(answer_region("<think>x", &o), Err(UNCLOSED_THINK));
        // No tags: the whole text.
        assert_eq!(one("\\boxed{3}"), ("3", Rule::Boxed));
        // Turned off, the whole text is searched.
        let off = ExtractOptions {
            think: false,
            ..ExtractOptions::default()
        };
        let e = extract_answer("<think>so \\boxed{3}", &off).expect("found");
        assert_eq!(e.parts, vec!["3"]);
        let e = extract_answer("<think>\\boxed{3}</think> and \\boxed{3}", &off).expect("found");
        assert_eq!(e.parts, vec!["3", "3"]);
        // The tags are not an answer: the choice after them is.
        let e = extract_answer("<think>hmm</think> (C)", &off).expect("found");
        assert_eq!((e.parts, e.rule), (vec!["C"], Rule::Choice));
    }

    #[test]
    fn special_tokens_are_not_text() {
        for (text, want) in [
            ("#### 72<|im_end|>", "72"),
            ("Answer: 72<eos>", "72"),
            ("The answer is 42</s>", "42"),
            (
                "The answer is 42<|endoftext|><|endoftext|><|endoftext|>",
                "42",
            ),
            ("\\boxed{9}<|eot_id|>", "9"),
            ("#### 72 <pad><pad><pad>", "72"),
            ("#### 72<|im_end|>\n<|endoftext|>", "72"),
            ("the answer is 5<｜end▁of▁sentence｜>", "5"),
            ("Answer: 72<|im_end|> trailing", "72"),
            ("so it is 8<end_of_turn>", "8"),
        ] {
            let e = extract_answer(text, &ExtractOptions::default()).expect(text);
            assert_eq!(e.parts, vec![want], "{text:?}");
        }
        assert_eq!(strip_special_tokens("a <b>"), "a <b>");
        assert_eq!(
            strip_special_tokens("x<| not a token |>"),
            "x<| not a token |>"
        );
        let g = extract_gold("72<|im_end|>", &ExtractOptions::default()).expect("gold");
        assert_eq!(g.parts, vec!["72"]);
    }

    #[test]
    fn prose_reader() {
        assert_eq!(read_prose("4 or 3"), Prose::Alternatives("4 or 3"));
        assert_eq!(read_prose("not 3"), Prose::Negated);
        assert_eq!(read_prose("5, not 3"), Prose::Upto(1));
        assert_eq!(read_prose("The largest $n$ is 34"), Prose::Plain);
        assert_eq!(read_prose("or 3"), Prose::Plain);
        assert_eq!(
            read_prose("\\frac{1}{2} or \\frac{1}{3}"),
            Prose::Alternatives("\\frac{1}{2} or \\frac{1}{3}")
        );
        // Unbalanced input ends, linear.
        let _ = read_prose(&"\\frac{".repeat(10_000));
        let _ = read_prose(&"$".repeat(10_001));
        let _ = read_prose(&"not 1 or ".repeat(10_000));
        let _ = read_prose(&"\\(".repeat(100_000));
        let _ = read_prose(&"$$ \\[".repeat(50_000));
    }

    proptest::proptest! {
        #[test]
        fn parts_are_substrings(s in "[\\\\{}$*()#a-zA-Z0-9 :.,<>/\n-]{0,200}") {
            for f in [extract_answer, extract_gold] {
                if let Some(e) = f(&s, &ExtractOptions::default()) {
                    for p in e.parts {
                        let start = p.as_ptr() as usize - s.as_ptr() as usize;
                        proptest::prop_assert!(start + p.len() <= s.len());
                    }
                }
            }
        }
    }
}
