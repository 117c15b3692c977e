//! The step checker of process supervision: a completion split into steps,
//! and every equality between constants a step claims decided exactly.
//!
//! A step is [`CORRECT`] when it makes at least one decidable claim and all of
//! them hold, [`WRONG`] when one fails, and [`UNCHECKED`] when it makes none
//! (prose, a claim about a variable, a claim over budget). Claims are found
//! inside prose (`so 37+45=82, then 82+19=101` makes two): a claim is a run of
//! math (numbers, operators, LaTeX such as `\frac`, `\cdot`, `\sqrt`) holding
//! `=`, and each `a = b` of a chain `a = b = c` is one claim. A side is only
//! checked when the text cannot continue it: `x + 2 = 7` claims nothing about
//! `2`, nor `3 x 4 = 12`, `1/2 of 80 = 40` or `f(3) = 7` about `4`, `80`, `3`
//! ([`Scan::left_open`]). Values come from the verifier's math engine
//! ([`crate::math::claim_holds`]): exact rationals, a decimal to the precision
//! it states. Everything is bounded: the text's length, steps and claims per
//! completion, and the engine's own budgets per side, so any input ends within
//! a fixed amount of work, never in a panic.

use regex::{Regex, RegexBuilder};
use strum::{EnumString, IntoStaticStr, VariantNames};

use crate::error::{CoreError, Result};
use crate::math::{self, CompareOptions, Limits, ParseOptions, Value};
use crate::reward::map_items;

/// Every decidable claim of the step holds.
pub const CORRECT: i8 = 1;
/// A claim of the step is false.
pub const WRONG: i8 = 0;
/// The step makes no claim that can be decided.
pub const UNCHECKED: i8 = -1;

/// How a completion is cut into steps; the name is the `snake_case` of the
/// variant (see `crate::names`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, EnumString, IntoStaticStr, VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum SplitKind {
    /// Each non-blank line.
    Lines,
    /// Blocks separated by blank lines.
    Paragraphs,
    /// A step starts at each `Step k` marker (`Step 2:`, `**Step 2.**`,
    /// `## Step 2`); text before the first marker is a step of its own.
    Markers,
    /// Pieces between the matches of a user regex (as Python's `re.split`).
    Regex,
}

/// The split, with its compiled pattern.
#[derive(Clone, Debug)]
pub enum Split {
    Lines,
    Paragraphs,
    Markers,
    Regex(Regex),
}

const REGEX_SIZE_LIMIT: usize = 1 << 21;

impl Split {
    /// The split of `kind`; `pattern` is required by (and only allowed with)
    /// [`SplitKind::Regex`].
    pub fn new(kind: SplitKind, pattern: Option<&str>) -> Result<Split> {
        match (kind, pattern) {
            (SplitKind::Regex, Some(p)) => {
                let re = RegexBuilder::new(p)
                    .size_limit(REGEX_SIZE_LIMIT)
                    .dfa_size_limit(REGEX_SIZE_LIMIT)
                    .build()
                    .map_err(|e| {
                        // The regex crate's message draws a caret under the
                        // pattern over several lines; its last line says what is wrong.
                        let text = e.to_string();
                        let why = text.lines().rev().find(|l| !l.trim().is_empty());
                        let why = why
                            .unwrap_or("invalid")
                            .trim()
                            .trim_start_matches("error: ");
                        CoreError::InvalidParameter(format!("bad split pattern {p:?}: {why}"))
                    })?;
                if re.is_match("") {
                    return Err(CoreError::InvalidParameter(format!(
                        "split pattern {p:?} matches the empty string; it must match the text \
                         between steps"
                    )));
                }
                Ok(Split::Regex(re))
            }
            (SplitKind::Regex, None) => Err(CoreError::InvalidParameter(
                "split=\"regex\" needs a pattern (the text between steps)".into(),
            )),
            (kind, Some(_)) => Err(CoreError::InvalidParameter(format!(
                "a pattern is only used with split=\"regex\", not {:?}",
                <&str>::from(kind)
            ))),
            (SplitKind::Lines, None) => Ok(Split::Lines),
            (SplitKind::Paragraphs, None) => Ok(Split::Paragraphs),
            (SplitKind::Markers, None) => Ok(Split::Markers),
        }
    }
}

#[derive(Clone, Debug)]
pub struct StepOptions {
    pub split: Split,
    /// Bytes of UTF-8; a longer completion has no steps.
    pub max_len: usize,
    /// Steps of one completion; the text after them is not split or checked.
    pub max_steps: usize,
    /// Claims decided in one completion; later ones are not decided.
    pub max_claims: usize,
    /// Bytes of one side of a claim; a longer side is not decided.
    pub max_side_len: usize,
    /// Budgets and tolerance of the math engine, per claim.
    pub compare: CompareOptions,
}

impl Default for StepOptions {
    fn default() -> Self {
        StepOptions {
            split: Split::Lines,
            max_len: 256 * 1024,
            max_steps: 4096,
            max_claims: 256,
            max_side_len: 1000,
            compare: CompareOptions {
                limits: Limits {
                    max_len: 1000,
                    max_tokens: 500,
                    max_nodes: 500,
                    max_work: 100_000,
                    ..Limits::default()
                },
                ..CompareOptions::default()
            },
        }
    }
}

/// One step: its character span (Unicode code points, as Python indexes a
/// `str`) and its label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    pub start: usize,
    pub end: usize,
    pub label: i8,
}

/// The steps of a batch as compressed sparse rows: completion `i`'s steps are
/// `offsets[i]..offsets[i + 1]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Steps {
    pub offsets: Vec<u64>,
    pub starts: Vec<u64>,
    pub ends: Vec<u64>,
    pub labels: Vec<i8>,
}

/// The steps of each text; `None` (a text the caller could not read) has none.
pub fn check_batch(texts: &[Option<&str>], opts: &StepOptions) -> Steps {
    let per = map_items(texts.len(), |i| texts[i].map(|t| check(t, opts)));
    let total: usize = per.iter().map(|s| s.as_ref().map_or(0, Vec::len)).sum();
    let mut out = Steps {
        offsets: Vec::with_capacity(texts.len() + 1),
        starts: Vec::with_capacity(total),
        ends: Vec::with_capacity(total),
        labels: Vec::with_capacity(total),
    };
    out.offsets.push(0);
    for steps in &per {
        for s in steps.iter().flatten() {
            out.starts.push(s.start as u64);
            out.ends.push(s.end as u64);
            out.labels.push(s.label);
        }
        out.offsets.push(out.starts.len() as u64);
    }
    out
}

/// The steps of one completion, in order.
pub fn check(text: &str, opts: &StepOptions) -> Vec<Step> {
    if text.len() > opts.max_len {
        return Vec::new();
    }
    let spans = split(text, &opts.split, opts.max_steps);
    let mut budget = opts.max_claims;
    let mut steps = Vec::with_capacity(spans.len());
    let mut chars = CharIndex::new(text);
    for (lo, hi) in spans {
        let label = label_of(&text[lo..hi], opts, &mut budget);
        steps.push(Step {
            start: chars.of(lo),
            end: chars.of(hi),
            label,
        });
    }
    steps
}

/// Byte offsets to code-point offsets, for increasing byte offsets (linear in
/// the text overall).
struct CharIndex<'a> {
    text: &'a str,
    byte: usize,
    chars: usize,
}

impl<'a> CharIndex<'a> {
    fn new(text: &'a str) -> Self {
        CharIndex {
            text,
            byte: 0,
            chars: 0,
        }
    }

    fn of(&mut self, byte: usize) -> usize {
        if byte < self.byte {
            return self.text[..byte].chars().count();
        }
        self.chars += self.text[self.byte..byte].chars().count();
        self.byte = byte;
        self.chars
    }
}

/// Python's `str.strip()` whitespace: Unicode White_Space plus the
/// information separators U+001C..U+001F, so a span is what `strip()` keeps.
fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `lo..hi` without surrounding whitespace; `None` when nothing is left.
fn trimmed(text: &str, lo: usize, hi: usize) -> Option<(usize, usize)> {
    let piece = &text[lo..hi];
    let start = piece.len() - piece.trim_start_matches(is_space).len();
    let end = piece.trim_end_matches(is_space).len();
    (end > start).then_some((lo + start, lo + end))
}

fn marker_regex() -> &'static Regex {
    static MARKER: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    MARKER.get_or_init(|| {
        Regex::new(r"(?im)^[ \t>#*_-]*step[ \t]*\d+\b").expect("the marker pattern is valid")
    })
}

fn blank_lines() -> &'static Regex {
    static BLANK: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    BLANK.get_or_init(|| Regex::new(r"\n(?:[ \t\r]*\n)+").expect("the blank-line pattern is valid"))
}

/// The byte spans of the steps of `text`, trimmed, blank ones dropped.
fn split(text: &str, how: &Split, max_steps: usize) -> Vec<(usize, usize)> {
    // Cuts between the pieces: each piece is `bounds[k].1 .. bounds[k + 1].0`.
    let mut bounds: Vec<(usize, usize)> = vec![(0, 0)];
    let mut push = |lo: usize, hi: usize| bounds.push((lo, hi));
    match how {
        Split::Lines => memchr::memchr_iter(b'\n', text.as_bytes()).for_each(|i| push(i, i + 1)),
        Split::Paragraphs => blank_lines()
            .find_iter(text)
            .for_each(|m| push(m.start(), m.end())),
        Split::Regex(re) => re.find_iter(text).for_each(|m| push(m.start(), m.end())),
        Split::Markers => marker_regex()
            .find_iter(text)
            .for_each(|m| push(m.start(), m.start())),
    }
    bounds.push((text.len(), text.len()));
    let mut out = Vec::new();
    for w in bounds.windows(2) {
        if out.len() >= max_steps {
            break;
        }
        if let Some(span) = trimmed(text, w[0].1, w[1].0) {
            out.push(span);
        }
    }
    out
}

/// The label of one step, spending at most `budget` claims.
fn label_of(step: &str, opts: &StepOptions, budget: &mut usize) -> i8 {
    let mut label = UNCHECKED;
    for line in step.split('\n') {
        let scan = Scan::new(skip_enumerator(line));
        for verdict in scan.claims(opts, budget) {
            match verdict {
                Some(false) => return WRONG,
                Some(true) => label = CORRECT,
                None => {}
            }
        }
    }
    label
}

/// A line without its list marker (`1)`, `(2)`, `- `, `* `, `Step 3`): the
/// number of a list item is not part of its first claim.
fn skip_enumerator(line: &str) -> &str {
    static ENUM: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let re = ENUM.get_or_init(|| {
        Regex::new(r"^[ \t]*(?:[-*•>]+[ \t]+|\(?\d{1,3}\)[ \t]*|(?i:step)[ \t]*\d+[ \t]*[:.)]?)")
            .expect("the enumerator pattern is valid")
    });
    match re.find(line) {
        Some(m) => &line[m.end()..],
        None => line,
    }
}

// ---------------------------------------------------------------------- claims

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Num,
    /// Starts an operand: `(`, `\frac`, `\sqrt`, `√`.
    Open,
    /// Ends an operand: `)`, `!`, `%`, `²`.
    Close,
    /// Both: `\pi`.
    Atom,
    /// `+ * / ^ × ÷ \cdot \times \div`.
    Binary,
    Minus,
    Eq,
    /// Inside a run of math: spaces, `$`, `\,`, `\left`, `\(`.
    Space,
    /// Letters, `\commands` that are not arithmetic, `_`, `'`.
    Word,
    /// Ends a run: punctuation, a newline, `<`, `≈`, `#`, ...
    Sep,
}

impl Kind {
    fn math(self) -> bool {
        !matches!(self, Kind::Word | Kind::Sep)
    }
}

#[derive(Clone, Copy, Debug)]
struct Item {
    kind: Kind,
    start: usize,
    end: usize,
    /// A `\command` word (math context, never prose).
    latex: bool,
}

/// Words that make a number next to them an operand (`3 times 4`, `half of
/// 80`, `sin 30`, `5 squared`).
const OPERATOR_WORDS: &[&str] = &[
    "of",
    "times",
    "x",
    "by",
    "plus",
    "minus",
    "over",
    "divided",
    "multiplied",
    "per",
    "percent",
    "squared",
    "cubed",
    "mod",
    "modulo",
    "sqrt",
    "root",
    "sin",
    "cos",
    "tan",
    "log",
    "ln",
    "exp",
    "abs",
    "floor",
    "ceil",
    "gcd",
    "lcm",
    "max",
    "min",
    "choose",
    "factorial",
    "than",
    "less",
    "more",
    "into",
];

/// LaTeX commands that belong to arithmetic.
fn latex_kind(name: &str) -> Option<Kind> {
    Some(match name {
        "frac" | "dfrac" | "tfrac" | "cfrac" | "sqrt" | "binom" | "dbinom" | "tbinom" | "boxed"
        | "fbox" => Kind::Open,
        "pi" => Kind::Atom,
        "cdot" | "times" | "div" | "ast" => Kind::Binary,
        "%" => Kind::Close,
        "," | ";" | ":" | "!" | " " | "quad" | "qquad" | "left" | "right" | "$" | "(" | ")"
        | "[" | "]" | "displaystyle" | "big" | "Big" | "bigl" | "bigr" | "Bigl" | "Bigr" => {
            Kind::Space
        }
        _ => return None,
    })
}

/// Commands whose braced argument is text (`\text{ cm}`), read as one word.
const TEXT_COMMANDS: &[&str] = &[
    "text",
    "textbf",
    "textit",
    "textrm",
    "mathrm",
    "mathbf",
    "mathit",
    "operatorname",
    "mbox",
];

/// A line cut into items, with the runs of math between words and
/// punctuation.
struct Scan<'a> {
    line: &'a str,
    items: Vec<Item>,
    /// `(first, last + 1, has '=')` item ranges of the runs of math items.
    runs: Vec<(usize, usize, bool)>,
    /// The run of each item (`usize::MAX` outside runs).
    run_of: Vec<usize>,
}

impl<'a> Scan<'a> {
    fn new(line: &'a str) -> Self {
        let items = lex(line);
        let mut runs = Vec::new();
        let mut run_of = vec![usize::MAX; items.len()];
        let mut i = 0;
        while i < items.len() {
            if !items[i].kind.math() {
                i += 1;
                continue;
            }
            let lo = i;
            let mut eq = false;
            while i < items.len() && items[i].kind.math() {
                eq |= items[i].kind == Kind::Eq;
                run_of[i] = runs.len();
                i += 1;
            }
            runs.push((lo, i, eq));
        }
        Scan {
            line,
            items,
            runs,
            run_of,
        }
    }

    /// The verdict of each claim, in order: `Some(holds)` or `None` (not
    /// decided). Stops when `budget` claims have been decided.
    fn claims(&self, opts: &StepOptions, budget: &mut usize) -> Vec<Option<bool>> {
        let mut out = Vec::new();
        for (r, &(lo, hi, eq)) in self.runs.iter().enumerate() {
            if !eq {
                continue;
            }
            // Sides: the item ranges between the '=' of the run.
            let mut sides = Vec::new();
            let mut from = lo;
            for k in lo..hi {
                if self.items[k].kind == Kind::Eq {
                    sides.push((from, k));
                    from = k + 1;
                }
            }
            sides.push((from, hi));
            let last = sides.len() - 1;
            let mut values: Vec<Option<Option<Value>>> = vec![None; sides.len()];
            for k in 0..last {
                let usable = |j: usize| {
                    let (a, b) = sides[j];
                    self.closed(a, b)
                        && (j != 0 || !self.left_open(r, a))
                        && (j != last || !self.right_open(r))
                };
                if !usable(k) || !usable(k + 1) {
                    continue;
                }
                if *budget == 0 {
                    out.push(None);
                    continue;
                }
                *budget -= 1;
                for j in [k, k + 1] {
                    if values[j].is_none() {
                        values[j] = Some(self.parse_side(sides[j], opts));
                    }
                }
                let verdict = match (&values[k], &values[k + 1]) {
                    (Some(Some(a)), Some(Some(b))) => {
                        math::claim_holds(a, b, &opts.compare).ok().flatten()
                    }
                    _ => None,
                };
                out.push(verdict);
            }
        }
        out
    }

    fn parse_side(&self, (a, b): (usize, usize), opts: &StepOptions) -> Option<Value> {
        let (first, last) = self.ends(a, b)?;
        let text = &self.line[self.items[first].start..self.items[last].end];
        if text.len() > opts.max_side_len {
            return None;
        }
        let popts = ParseOptions {
            limits: opts.compare.limits.clone(),
        };
        math::parse(text, &popts).ok()
    }

    /// The first and last non-space items of `a..b`.
    fn ends(&self, a: usize, b: usize) -> Option<(usize, usize)> {
        let first = (a..b).find(|&k| self.items[k].kind != Kind::Space)?;
        let last = (a..b).rev().find(|&k| self.items[k].kind != Kind::Space)?;
        Some((first, last))
    }

    /// A side that is a whole operand: it starts and ends like one.
    fn closed(&self, a: usize, b: usize) -> bool {
        let Some((first, last)) = self.ends(a, b) else {
            return false;
        };
        let starts = matches!(
            self.items[first].kind,
            Kind::Num | Kind::Open | Kind::Atom | Kind::Minus
        );
        let ends = matches!(self.items[last].kind, Kind::Num | Kind::Close | Kind::Atom);
        starts && ends
    }

    /// Whether the text before run `r` (whose first side starts at item `a`)
    /// can continue that side, so the side is not a whole operand: it touches
    /// a word (`f(3)`, `x2`), follows a `\command`, an operator word (`3
    /// times 4`, `half of 80`), a word that is itself next to math without a
    /// claim (`sum of 3 and 4`), a minus after a word (`x - 2`), or a
    /// separator wedged between digits (`3:45`).
    fn left_open(&self, r: usize, a: usize) -> bool {
        let lo = self.runs[r].0;
        if lo == 0 {
            return false;
        }
        let touching = self.items[lo].kind != Kind::Space;
        let prev = &self.items[lo - 1];
        match prev.kind {
            Kind::Word => {
                let first = self
                    .ends(a, self.runs[r].1)
                    .map(|(f, _)| self.items[f].kind);
                touching
                    || prev.latex
                    || first == Some(Kind::Minus)
                    || self.operator_word(prev)
                    || self.math_without_claim(lo - 1, false)
            }
            Kind::Sep => {
                touching
                    && lo >= 2
                    && self.items[lo - 2].kind.math()
                    && self.items[lo - 2].end == prev.start
                    && self.line[prev.start..prev.end] != *","
            }
            _ => false,
        }
    }

    /// [`Scan::left_open`] for the text after run `r`.
    fn right_open(&self, r: usize) -> bool {
        let hi = self.runs[r].1;
        if hi >= self.items.len() {
            return false;
        }
        let touching = self.items[hi - 1].kind != Kind::Space;
        let next = &self.items[hi];
        match next.kind {
            Kind::Word => {
                touching
                    || next.latex
                    || self.operator_word(next)
                    || self.math_without_claim(hi, true)
            }
            Kind::Sep => {
                touching
                    && hi + 1 < self.items.len()
                    && self.items[hi + 1].kind.math()
                    && self.items[hi + 1].start == next.end
                    && self.line[next.start..next.end] != *","
            }
            _ => false,
        }
    }

    fn operator_word(&self, w: &Item) -> bool {
        let word = &self.line[w.start..w.end];
        OPERATOR_WORDS
            .iter()
            .any(|op| op.eq_ignore_ascii_case(word))
    }

    /// Whether the word at item `w` has, on its far side (after it when
    /// `forward`), past spaces, a run of math that makes no claim: the word
    /// then sits inside an expression (`3 apples + 4`, `sum of 3 and 4`).
    fn math_without_claim(&self, w: usize, forward: bool) -> bool {
        let mut k = w;
        loop {
            k = if forward {
                k + 1
            } else if k == 0 {
                return false;
            } else {
                k - 1
            };
            let Some(item) = self.items.get(k) else {
                return false;
            };
            if item.kind == Kind::Space {
                continue;
            }
            if !item.kind.math() {
                return false;
            }
            let run = self.run_of[k];
            return run != usize::MAX && !self.runs[run].2;
        }
    }
}

/// Items of a line: numbers, operators, words, separators.
fn lex(line: &str) -> Vec<Item> {
    let b = line.as_bytes();
    let mut items: Vec<Item> = Vec::new();
    let mut i = 0;
    let mut push = |kind: Kind, start: usize, end: usize, latex: bool| {
        items.push(Item {
            kind,
            start,
            end,
            latex,
        })
    };
    while i < b.len() {
        let c = b[i];
        let start = i;
        match c {
            b'0'..=b'9' => {
                i = number_end(b, i);
                push(Kind::Num, start, i, false);
            }
            b'.' if b.get(i + 1).is_some_and(u8::is_ascii_digit)
                && (i == 0 || !b[i - 1].is_ascii_digit()) =>
            {
                i = number_end(b, i + 1);
                push(Kind::Num, start, i, false);
            }
            b' ' | b'\t' | b'\r' | b'$' | b'~' => {
                i += 1;
                push(Kind::Space, start, i, false);
            }
            b'*' if b.get(i + 1) == Some(&b'*') => {
                // `**bold**` is decoration; `2**3` is a power.
                let before = i > 0 && (b[i - 1].is_ascii_digit() || b[i - 1] == b')');
                let after = b
                    .get(i + 2)
                    .is_some_and(|&x| x.is_ascii_digit() || x == b'(');
                i += 2;
                let kind = if before && after {
                    Kind::Binary
                } else {
                    Kind::Space
                };
                push(kind, start, i, false);
            }
            b'+' | b'*' | b'/' | b'^' => {
                i += 1;
                push(Kind::Binary, start, i, false);
            }
            b'-' => {
                i += 1;
                push(Kind::Minus, start, i, false);
            }
            b'(' | b'[' | b'{' => {
                i += 1;
                push(Kind::Open, start, i, false);
            }
            b')' | b']' | b'}' | b'%' => {
                i += 1;
                push(Kind::Close, start, i, false);
            }
            b'!' if b.get(i + 1) == Some(&b'=') => {
                i += 2;
                push(Kind::Sep, start, i, false);
            }
            b'!' => {
                i += 1;
                push(Kind::Close, start, i, false);
            }
            b'=' => {
                // `==` is one '='; `=>` is an arrow.
                match b.get(i + 1) {
                    Some(b'>') => {
                        i += 2;
                        push(Kind::Sep, start, i, false);
                    }
                    Some(b'=') => {
                        i += 2;
                        push(Kind::Eq, start, i, false);
                    }
                    _ => {
                        i += 1;
                        push(Kind::Eq, start, i, false);
                    }
                }
            }
            b'<' | b'>' | b':' => {
                i += 1 + usize::from(b.get(i + 1) == Some(&b'='));
                push(Kind::Sep, start, i, false);
            }
            b'_' | b'\'' => {
                i += 1;
                push(Kind::Word, start, i, false);
            }
            b'\\' => {
                let (kind, end) = command(line, i);
                i = end;
                push(kind, start, i, kind == Kind::Word);
            }
            b'a'..=b'z' | b'A'..=b'Z' => {
                i = word_end(line, i);
                push(Kind::Word, start, i, false);
            }
            0x80.. => {
                let ch = line[i..].chars().next().unwrap_or(' ');
                i += ch.len_utf8();
                let kind = match ch {
                    '×' | '·' | '⋅' | '÷' | '∗' => Kind::Binary,
                    '−' | '–' => Kind::Minus,
                    '√' => Kind::Open,
                    'π' => Kind::Atom,
                    '²' | '³' => Kind::Close,
                    '€' | '£' | '¥' | '\u{a0}' | '\u{2009}' | '\u{202f}' => Kind::Space,
                    c if c.is_alphabetic() => {
                        i = word_end(line, start);
                        Kind::Word
                    }
                    _ => Kind::Sep,
                };
                push(kind, start, i, false);
            }
            _ => {
                i += 1;
                push(Kind::Sep, start, i, false);
            }
        }
    }
    items
}

/// End of the number starting at `i`: digits, thousands groups (`1,080`:
/// groups of exactly three digits after a lead of one to three), a decimal
/// part.
fn number_end(b: &[u8], i: usize) -> usize {
    let digits = |mut j: usize| {
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        j
    };
    let mut j = digits(i);
    if j - i <= 3 {
        loop {
            let group = j + 1 < b.len() && b[j] == b',' && digits(j + 1) == j + 4;
            if !group {
                break;
            }
            j += 4;
        }
    }
    if j + 1 < b.len() && b[j] == b'.' && b[j + 1].is_ascii_digit() {
        j = digits(j + 1);
    }
    j
}

fn word_end(line: &str, i: usize) -> usize {
    line[i..]
        .char_indices()
        .find(|&(_, c)| !c.is_alphabetic())
        .map_or(line.len(), |(k, _)| i + k)
}

/// The kind and end of the `\command` at `i`.
fn command(line: &str, i: usize) -> (Kind, usize) {
    let b = line.as_bytes();
    let name_end = if b.get(i + 1).is_some_and(u8::is_ascii_alphabetic) {
        let mut j = i + 1;
        while j < b.len() && b[j].is_ascii_alphabetic() {
            j += 1;
        }
        j
    } else {
        // A one-character command: `\,`, `\%`, `\$`, `\(`; a lone `\` at the end.
        i + 1 + line[i + 1..].chars().next().map_or(0, char::len_utf8)
    };
    let name = &line[i + 1..name_end];
    if let Some(kind) = latex_kind(name) {
        return (kind, name_end);
    }
    if TEXT_COMMANDS.contains(&name) && b.get(name_end) == Some(&b'{') {
        // The braced argument is part of the word; an unclosed one ends the line.
        let mut depth = 0usize;
        for (k, &c) in b.iter().enumerate().skip(name_end) {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        return (Kind::Word, k + 1);
                    }
                }
                _ => {}
            }
        }
        return (Kind::Word, b.len());
    }
    if matches!(name, "{" | "}" | "\\") {
        return (Kind::Sep, name_end);
    }
    (Kind::Word, name_end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(text: &str) -> Vec<i8> {
        check(text, &StepOptions::default())
            .iter()
            .map(|s| s.label)
            .collect()
    }

    fn one(text: &str) -> i8 {
        let l = labels(text);
        assert_eq!(l.len(), 1, "{text:?}: {l:?}");
        l[0]
    }

    #[test]
    fn arithmetic_claims_are_decided_exactly() {
        assert_eq!(one("12 + 34 = 46"), CORRECT);
        assert_eq!(one(r"3 \cdot 17 = 41"), WRONG);
        assert_eq!(one(r"3 \cdot 17 = 51"), CORRECT);
        assert_eq!(one(r"\frac{3}{4} + \frac18 = \frac78"), CORRECT);
        assert_eq!(one(r"\frac{3}{4} + \frac18 = \frac68"), WRONG);
        assert_eq!(one("2^10 = 1024"), CORRECT);
        assert_eq!(one("10! = 3628800"), CORRECT);
        assert_eq!(one(r"$\sqrt{16} = 4$"), CORRECT);
        assert_eq!(one("7 × 8 = 56"), CORRECT);
        assert_eq!(one("1,000 + 2,500 = 3,500"), CORRECT);
        assert_eq!(one("50% = 0.5"), CORRECT);
        assert_eq!(one("50% = 50"), WRONG);
    }

    #[test]
    fn chains_check_every_link() {
        assert_eq!(one("2 + 3 = 5 = 10 / 2"), CORRECT);
        assert_eq!(one("2 + 3 = 5 = 10 / 3"), WRONG);
        // The first side continues a variable: only the links after it count.
        assert_eq!(one("x + 2 = 5 + 2 = 7"), CORRECT);
        assert_eq!(one("x + 2 = 5 + 2 = 8"), WRONG);
    }

    #[test]
    fn decimals_hold_to_the_precision_they_state() {
        assert_eq!(one("1/3 = 0.3333"), CORRECT);
        assert_eq!(one("0.3333 = 1/3"), CORRECT);
        assert_eq!(one("1/3 = 0.33"), WRONG);
        assert_eq!(one(r"\sqrt2 = 1.414"), CORRECT);
        assert_eq!(one("2.50 = 2.5"), CORRECT);
        assert_eq!(one("3.14159 = 3.1416"), CORRECT);
        assert_eq!(one("3.1416 = 3.14159"), CORRECT);
        assert_eq!(one("0.1 + 0.2 = 0.3"), CORRECT);
        assert_eq!(one("0.1 + 0.2 = 0.30000000000000004"), WRONG);
    }

    #[test]
    fn claims_inside_prose_are_found() {
        assert_eq!(one("so 37+45=82, then 82+19=101"), CORRECT);
        assert_eq!(one("so 37+45=82, then 82+19=102"), WRONG);
        assert_eq!(one("so 37+45=81, then 82+19=101"), WRONG);
        assert_eq!(one("She pays $12 + $8 = $20 in total."), CORRECT);
        assert_eq!(one("The total is 3+4 = 7 apples."), CORRECT);
        assert_eq!(one("3 + 4 = 7 and 7 + 5 = 13"), WRONG);
        assert_eq!(one("**Step 1:** 37+45=82"), CORRECT);
        assert_eq!(one("1) 3 + 4 = 7"), CORRECT);
        assert_eq!(one("- 3 + 4 = 8"), WRONG);
    }

    #[test]
    fn sides_the_text_continues_are_not_claims() {
        for text in [
            "x + 2 = 7",
            "x - 2 = 3",
            "2x = 10",
            "f(3) = 7",
            "3 x 4 = 12",
            "1/2 of 80 = 40",
            "half of 80 = 40",
            "the sum of 3 and 4 = 7",
            "3 apples + 4 = 7",
            "45 = 9 times 5",
            "45 = 9 apples + 36 apples",
            r"\sin 30^\circ = \frac12",
            "sin 30 = 0.5",
            "sqrt(16) = 4",
            "x_1 = 3",
            "the time 3:45 = 225 minutes",
            "a = 5",
            "p = 0.3",
            "no numbers here",
            "2 < 3",
            r"\pi \approx 3.14",
            "5 = 3x",
            "3 + 4 = y",
        ] {
            assert_eq!(one(text), UNCHECKED, "{text:?}");
        }
    }

    #[test]
    fn steps_and_their_spans() {
        let text = "  37+45=82 \n\n82+19=100\n #### 100";
        let steps = check(text, &StepOptions::default());
        let spans: Vec<(usize, usize, i8)> =
            steps.iter().map(|s| (s.start, s.end, s.label)).collect();
        assert_eq!(spans, [(2, 10, 1), (13, 22, 0), (24, 32, -1)]);
        // Spans count code points, not bytes.
        let text = "é 1+1=2\nπ: 2+2=5";
        let steps = check(text, &StepOptions::default());
        let spans: Vec<(usize, usize, i8)> =
            steps.iter().map(|s| (s.start, s.end, s.label)).collect();
        assert_eq!(spans, [(0, 7, 1), (8, 16, 0)]);
    }

    #[test]
    fn splits() {
        let opts = |split| StepOptions {
            split,
            ..StepOptions::default()
        };
        let spans = |text: &str, split| -> Vec<(usize, usize)> {
            check(text, &opts(split))
                .iter()
                .map(|s| (s.start, s.end))
                .collect()
        };
        let text = "a\nb\n\n  \nc\n";
        assert_eq!(spans(text, Split::Lines), [(0, 1), (2, 3), (8, 9)]);
        assert_eq!(spans(text, Split::Paragraphs), [(0, 3), (8, 9)]);
        let text = "Intro.\nStep 1: 2+2=4\nmore\n**Step 2.** 3+3=7";
        let steps = check(text, &opts(Split::Markers));
        let got: Vec<(usize, usize, i8)> =
            steps.iter().map(|s| (s.start, s.end, s.label)).collect();
        assert_eq!(got, [(0, 6, -1), (7, 25, 1), (26, 43, 0)]);
        let re = Split::new(SplitKind::Regex, Some(r",\s*")).expect("valid");
        let steps = check("37+45=82, 82+19=101, 101+23=125 #### 125", &opts(re));
        let got: Vec<(usize, usize, i8)> =
            steps.iter().map(|s| (s.start, s.end, s.label)).collect();
        assert_eq!(got, [(0, 8, 1), (10, 19, 1), (21, 40, 0)]);
        assert!(Split::new(SplitKind::Regex, None).is_err());
        assert!(Split::new(SplitKind::Regex, Some("(")).is_err());
        assert!(Split::new(SplitKind::Regex, Some("x*")).is_err());
        assert!(Split::new(SplitKind::Lines, Some(",")).is_err());
    }

    #[test]
    fn adversarial_input_is_bounded() {
        let tower = format!("{} = 1", "2^".repeat(200) + "2");
        assert_eq!(one(&tower), UNCHECKED);
        assert_eq!(one("9^9^9^9 = 3"), UNCHECKED);
        assert_eq!(one(&format!("{} = 1", "(".repeat(5000))), UNCHECKED);
        let nested = format!("{}1{} = 1", "(".repeat(200), ")".repeat(200));
        assert_eq!(one(&nested), UNCHECKED);
        let huge = format!("{} = 1", "9".repeat(5000));
        assert_eq!(one(&huge), UNCHECKED);
        assert_eq!(one("1/0 = 5"), WRONG);
        // Many claims: only the budget is decided, the rest are not.
        let many = "1+1=2, ".repeat(1000) + "1+1=3";
        assert_eq!(one(&many), CORRECT);
        let long = "x".repeat(300 * 1024);
        assert!(check(&long, &StepOptions::default()).is_empty());
        let lines = "1=1\n".repeat(10_000);
        assert_eq!(check(&lines, &StepOptions::default()).len(), 4096);
        for text in [
            "\\",
            "=",
            "==",
            "= =",
            "\\frac{",
            "1=\\",
            "é=é",
            "½ = 0.5",
            "\u{1c}1=1",
        ] {
            let _ = check(text, &StepOptions::default());
        }
    }

    #[test]
    fn batch_offsets() {
        let out = check_batch(
            &[Some("1+1=2\n2+2=5"), None, Some(""), Some("3=3")],
            &StepOptions::default(),
        );
        assert_eq!(out.offsets, [0, 2, 2, 2, 3]);
        assert_eq!(out.labels, [CORRECT, WRONG, CORRECT]);
        assert_eq!(out.starts, [0, 6, 0]);
        assert_eq!(out.ends, [5, 11, 3]);
    }
}
