//! Hedges: what the words of an answer say about its values (alternatives,
//! negation, bounds and doubt, restatements), and the candidates a
//! completion proposes after its final answer. docs/verify_semantics.md
//! ("Which answer counts", rules 3 and 8) states the rules.

use super::tokens::{bound_follows, Span, Tok, Tokens};
use super::words::{self, Class};
use super::{Hedge, Offer, OfferKind, OfferValue};

/// What the words of a marker's value say about its values.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Prose<'a> {
    /// Nothing to say: read the value as usual.
    Plain,
    /// Values offered as alternatives (`or`, `maybe`, an ellipsis, choice
    /// letters joined by `and` or `/`): the part of the text that holds them.
    Alternatives(&'a str),
    /// Every value is negated (`not 3`, `isn't 3 or 4`, `3 is wrong`).
    Negated,
    /// Every value is a bound or a doubt (`at least 3`, `3 or more`,
    /// `maybe 3`, `3?`).
    Qualified,
    /// The value breaks off (`3 or` at the end).
    Unfinished,
    /// Every value is an end of a range or one of a set of candidates
    /// (`between 4 and 6`, `5 to 7`, `one of 12, 13 and 14`).
    Range,
    /// Some values are negated, qualified, restated or explain; the last
    /// plain one ends here.
    Upto(usize),
}

/// A reading: the verdict, and the values that must equal the answer.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Reading<'a> {
    pub(super) prose: Prose<'a>,
    pub(super) offers: Vec<Offer<'a>>,
    /// More offers than are kept: a hedge of itself.
    pub(super) overflow: bool,
}

/// Offers kept per answer; more are a hedge (nobody restates an answer 16 times).
const MAX_OFFERS: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Neg {
    None,
    Pending,
    Applied,
}

/// What came between the last value and now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Since {
    /// Nothing but punctuation: the value is right before.
    Nothing,
    /// Only filler words (`is`, `the`): `3 is wrong` still speaks of 3.
    Filler,
    /// `or` / `and` right after the value (`3 or more`, `3 and up`).
    Joined,
    /// `at` right after the value (`3 at least`).
    At,
    Other,
}

/// A run of math: from its first token to its last value.
#[derive(Debug, Clone, Copy)]
struct Run {
    span: Span,
    int: Option<i64>,
    restated: bool,
}

/// A range being read (docs/verify_semantics.md rule 14): `between A and
/// B`, `from A to B`, `A to B`, `A through B`, `one of A, B and C`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Range {
    None,
    /// `between` (joined by `and`) or `from` (joined by `to`): the first end
    /// comes within the words left.
    Opened(Join, u8),
    /// The first end was read (its start).
    First(Join, usize),
    /// The join was read after the first end: the second end comes next.
    Joined(usize),
    /// `one of`: the start of `one`, the candidates read, the words left
    /// before the first.
    OneOf(usize, u8, u8),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Join {
    And,
    To,
}

/// Words after which `from A to B` and `A to B` are a change or a
/// conversion, not a range (`it rose from 5 to 7`, `round 4.6 to 5`).
const CHANGES: [&str; 40] = [
    "round",
    "rounds",
    "rounded",
    "rounding",
    "increase",
    "increases",
    "increased",
    "decrease",
    "decreases",
    "decreased",
    "rise",
    "rises",
    "rose",
    "grow",
    "grows",
    "grew",
    "go",
    "goes",
    "went",
    "fall",
    "falls",
    "fell",
    "drop",
    "drops",
    "dropped",
    "jump",
    "jumps",
    "jumped",
    "change",
    "changes",
    "changed",
    "convert",
    "converts",
    "converted",
    "add",
    "adds",
    "added",
    "adding",
    "move",
    "moved",
];

/// Words before `A-B` (a hyphen between two numbers, no spaces) that make it
/// a range, not a subtraction (`roughly 10-12`, `pages 4-6`).
const APPROX: [&str; 14] = [
    "about",
    "around",
    "roughly",
    "approximately",
    "approx",
    "circa",
    "somewhere",
    "anywhere",
    "some",
    "range",
    "ranges",
    "ranging",
    "pages",
    "between",
];

#[derive(Debug)]
struct Reader {
    neg: Neg,
    qual_pending: bool,
    any_val: bool,
    any_negated: bool,
    any_qualified: bool,
    /// Values after `because`, `e.g.`: read no further.
    stopped: bool,
    /// Reading stopped at a condition (`if`, `when`, `for`): an `otherwise`
    /// or `else` after it, or another value under the same word (`3 for odd
    /// n, 4 for even n`), makes the answer one case of several.
    condition: Option<&'static str>,
    /// A value was seen after the condition.
    case_value: bool,
    /// A word naming a case followed the condition (`for odd n`): a value
    /// after it is that case's, and the answer before it one case of several.
    case_named: bool,
    /// Reading the sentence of a value found without a marker: the long
    /// sentences of reasoning, where `because`, `also` or `respectively`
    /// say nothing about the value at its end.
    in_reasoning: bool,
    restating: bool,
    plain: Vec<usize>,
    /// The last value: its span, whether it is plain, whether it is a choice letter.
    last: Option<(Span, bool, bool)>,
    first_start: Option<usize>,
    since: Since,
    prev_word: Option<Class>,
    /// The run being read: its start, and whether it has a value.
    run: Option<(usize, bool)>,
    /// Where alternatives start, once a joiner follows a value, and whether
    /// that joiner is `or` (left dangling, the value breaks off), a doubt
    /// (left dangling, the value is a doubt) or another word.
    pending_or: Option<(usize, Class)>,
    alt: Option<Span>,
    /// Values joined by `and`: counted as alternatives when they are choice
    /// letters or when no other word is written.
    and_alt: Option<Span>,
    pending_and: Option<usize>,
    /// After `other`, `another`, `also`: the next value is another answer,
    /// whatever words come between (the first value's start).
    pending_another: Option<usize>,
    and_choices: bool,
    other_words: bool,
    runs: Vec<Run>,
    /// A value was an end of a range or a candidate of a set (rule 14).
    any_range: bool,
    range: Range,
    /// Words left during which a verb of change or conversion (see
    /// [`CHANGES`]) makes `from A to B` and `A to B` no range.
    change: u8,
    /// The last word was `any` (`any of 12, 13 and 14`).
    any: bool,
    /// The start of the last value when it is the word `one` (`one of ...`).
    one: Option<usize>,
    /// A range completed by the value being read: its first end's start.
    pending_range: Option<usize>,
}

/// Whether `before` (the sentence up to a list's first value) ends in a
/// copula or a colon that opens the list: `are`, `were`, `is`, `was`, `be`,
/// `include`, `:`.
fn opens_a_list(before: &str) -> bool {
    let t = before.trim_end_matches([' ', '$', '*', '\\', '(']);
    if t.ends_with(':') {
        return true;
    }
    let word = t
        .rsplit(|c: char| !c.is_ascii_alphabetic())
        .next()
        .unwrap_or("");
    ["are", "were", "is", "was", "be", "include", "includes"]
        .iter()
        .any(|c| word.eq_ignore_ascii_case(c))
}

impl Reader {
    fn new(in_reasoning: bool) -> Self {
        Reader {
            neg: Neg::None,
            qual_pending: false,
            any_val: false,
            any_negated: false,
            any_qualified: false,
            stopped: false,
            condition: None,
            case_value: false,
            case_named: false,
            in_reasoning,
            restating: false,
            plain: Vec::new(),
            last: None,
            first_start: None,
            since: Since::Other,
            prev_word: None,
            run: None,
            pending_or: None,
            alt: None,
            and_alt: None,
            pending_and: None,
            pending_another: None,
            and_choices: true,
            other_words: false,
            runs: Vec::new(),
            any_range: false,
            range: Range::None,
            change: 0,
            any: false,
            one: None,
            pending_range: None,
        }
    }

    /// The range reader's view of a value, before it is read as a value.
    fn range_value(&mut self, (start, _): Span, int: Option<i64>) {
        let joined = matches!(self.since, Since::Nothing | Since::Joined);
        self.range = match self.range {
            Range::Opened(join, _) => Range::First(join, start),
            Range::Joined(from) => {
                self.pending_range = Some(from);
                Range::None
            }
            Range::OneOf(from, n, words) if n == 0 || joined => {
                Range::OneOf(from.min(start), n.saturating_add(1), words)
            }
            Range::OneOf(..) => {
                self.close_one_of();
                Range::None
            }
            Range::First(..) | Range::None => Range::None,
        };
        self.one = (int == Some(1)).then_some(start);
    }

    /// The range reader's view of a word, before it is read as a word.
    fn range_word(&mut self, w: &str) {
        let is = |s: &str| w.eq_ignore_ascii_case(s);
        let to = is("to") || is("through") || is("thru");
        // `rose from 5 to 7`, `round 4.6 to 5`: a change within two words before.
        let change = self.change > 0;
        self.change = if CHANGES.iter().any(|c| is(c)) {
            3
        } else {
            self.change.saturating_sub(1)
        };
        let any = std::mem::replace(&mut self.any, is("any"));
        self.range = match self.range {
            Range::First(Join::And, from) if is("and") => Range::Joined(from),
            Range::First(Join::To, from) if to => Range::Joined(from),
            // `from 7 up to 9`, `from 7 all the way to 9`.
            Range::First(Join::To, from) if is("up") || is("all") || is("the") || is("way") => {
                Range::First(Join::To, from)
            }
            Range::Opened(join, n) if n > 0 => Range::Opened(join, n - 1),
            Range::OneOf(from, 0, n) if n > 0 => Range::OneOf(from, 0, n - 1),
            Range::OneOf(from, k, n) if k > 0 && (is("and") || is("or")) => {
                Range::OneOf(from, k, n)
            }
            Range::OneOf(..) => {
                self.close_one_of();
                Range::None
            }
            Range::None if is("between") => Range::Opened(Join::And, 2),
            Range::None if is("from") && !change => Range::Opened(Join::To, 2),
            // `5 to 7`, right after the value.
            Range::None if to && !change && self.since == Since::Nothing => match self.last {
                Some(((s, _), ..)) if self.one.is_none() => Range::Joined(s),
                _ => Range::None,
            },
            Range::None if is("of") && self.since == Since::Nothing => match self.one {
                Some(s) => Range::OneOf(s, 0, 2),
                None => Range::None,
            },
            // `any of 12, 13 and 14`: the candidates start after `of`.
            Range::None if is("of") && any => Range::OneOf(usize::MAX, 0, 2),
            _ => Range::None,
        };
    }

    /// The end of a sentence: a range still open lapses.
    fn range_stop(&mut self) {
        self.close_one_of();
        self.range = Range::None;
        self.change = 0;
    }

    /// `one of A, B and C` with two candidates or more is a set of candidates.
    fn close_one_of(&mut self) {
        if let Range::OneOf(from, n, _) = self.range {
            if n >= 2 {
                self.void_range(from);
            }
        }
    }

    /// The values from `start` on are the ends of a range or candidates of
    /// a set, not values; the `and` or `or` between them offers no
    /// alternative.
    fn void_range(&mut self, start: usize) {
        self.plain.retain(|&e| e <= start);
        if let Some((span, _, choice)) = self.last {
            if span.1 > start {
                self.last = Some((span, false, choice));
            }
        }
        self.any_range = true;
        self.and_alt = self.and_alt.filter(|a| a.1 <= start);
        self.alt = self.alt.filter(|a| a.1 <= start);
        self.pending_and = None;
    }

    fn value(&mut self, (start, end): Span, int: Option<i64>, choice: bool) {
        if self.stopped {
            self.case_value |= self.condition.is_some();
            if self.condition.is_some() && self.case_named {
                // `5, and for odd n it is 6`.
                self.void_last(false);
                self.condition = None;
            }
            return;
        }
        self.range_value((start, end), int);
        self.any_val = true;
        self.first_start.get_or_insert(start);
        let denied = self.neg != Neg::None;
        let plain = if denied {
            self.neg = Neg::Applied;
            self.any_negated = true;
            false
        } else if self.qual_pending {
            self.any_qualified = true;
            false
        } else {
            !self.restating
        };
        self.qual_pending = false;
        if plain {
            self.plain.push(end);
        }
        // The run: a value right after math or another value extends it.
        match self.run {
            Some((run_start, true)) if self.since == Since::Nothing => {
                if let Some(r) = self.runs.last_mut() {
                    r.span = (r.span.0.min(run_start), end);
                    r.int = None;
                }
            }
            _ => {
                let run_start = self.run.map_or(start, |(s, _)| s);
                self.push_run(Run {
                    span: (run_start, end),
                    int,
                    restated: self.restating,
                });
            }
        }
        let run_start = self.run.map_or(start, |(s, _)| s);
        self.run = Some((run_start, true));
        if let Some((from, _)) = self.pending_or.take() {
            self.alt = Some((from, end));
        } else if let Some(from) = self.pending_another.take() {
            self.alt = Some((self.alt.map_or(from, |a| a.0), end));
        } else if choice
            && !denied
            && self.since == Since::Nothing
            && self.last.is_some_and(|l| l.2)
        {
            // `B, D`: several choice letters are alternatives (`C, not D`
            // denies the other one: no alternative).
            let from = self.alt.map_or(run_start, |a| a.0);
            self.alt = Some((from, end));
        }
        if let Some(from) = self.pending_and {
            self.and_alt = Some((from, end));
            self.and_choices &= choice && self.last.is_some_and(|l| l.2);
            self.pending_and = None;
        }
        self.last = Some(((start, end), plain, choice));
        self.since = Since::Nothing;
        self.prev_word = None;
        if let Some(from) = self.pending_range.take() {
            self.void_range(from);
        }
    }

    fn push_run(&mut self, run: Run) {
        self.runs.push(run);
    }

    /// The last value turns out negated (`3 is wrong`) or qualified (`3 or more`, `3?`).
    fn void_last(&mut self, negated: bool) {
        if let Some((span, true, choice)) = self.last {
            if self.plain.last() == Some(&span.1) {
                self.plain.pop();
            }
            self.last = Some((span, false, choice));
            if negated {
                self.any_negated = true;
            } else {
                self.any_qualified = true;
            }
        }
    }

    fn after_value(&self) -> bool {
        self.last.is_some() && matches!(self.since, Since::Nothing | Since::Filler)
    }

    fn word(&mut self, w: &str) {
        if !self.stopped {
            self.range_word(w);
        }
        let class = words::class(w);
        if let Some(c) = self.condition {
            let other_case = w.eq_ignore_ascii_case("otherwise")
                || w.eq_ignore_ascii_case("else")
                || (self.case_value && w.eq_ignore_ascii_case(c));
            if other_case {
                // `3 if n is odd, and 4 otherwise`, `3 for odd n, 4 for
                // even n`: the answer of one case.
                self.void_last(false);
                self.condition = None;
            }
            self.case_named |= CASES.iter().any(|c| w.eq_ignore_ascii_case(c));
        }
        let run_has_value = matches!(self.run, Some((_, true)));
        let first = self.first_start;
        match class {
            Class::Or | Class::Hedging | Class::Doubt => {
                if run_has_value && self.after_value() {
                    let from = self.alt.map_or(self.run.map_or(0, |r| r.0), |a| a.0);
                    self.pending_or = Some((from, class));
                    self.since = Since::Joined;
                    self.run = None;
                } else if class == Class::Doubt && !self.any_val {
                    // `maybe 3`, `it could be 3`.
                    self.qual_pending = true;
                } else if class == Class::Doubt && self.last.is_some() {
                    // `3, I guess`: the value before is a doubt.
                    self.void_last(false);
                }
            }
            Class::And => {
                if self.after_value() {
                    let from = self.and_alt.map_or(self.run.map_or(0, |r| r.0), |a| a.0);
                    self.pending_and = Some(from);
                    self.since = Since::Joined;
                    self.run = None;
                }
            }
            // `not 3`; `it is impossible for it to be 3` (a judgement
            // before any value denies the value that follows).
            Class::Negation => self.neg = Neg::Pending,
            Class::Wrong if !self.any_val => self.neg = Neg::Pending,
            Class::Wrong if self.after_value() => {
                self.void_last(true);
                self.since = Since::Other;
            }
            Class::Right if self.neg == Neg::Pending && self.after_value() => {
                // `3 is not correct`, `3 is not the answer`.
                self.void_last(true);
                self.neg = Neg::None;
                self.since = Since::Other;
            }
            Class::Right | Class::Filler => {
                if self.neg == Neg::Applied {
                    // `not 10, it's 1,000`: the negation is over.
                    self.neg = Neg::None;
                }
                if w.eq_ignore_ascii_case("so") && self.since == Since::Joined {
                    // `3 or so`.
                    self.pending_or = None;
                    self.void_last(false);
                    self.since = Since::Other;
                } else if self.since == Since::Nothing {
                    self.since = Since::Filler;
                }
            }
            Class::Bound => self.qual_pending = true,
            Class::Comparative if self.since == Since::Joined => {
                // `3 or more`, `3 and over`.
                self.pending_or = None;
                self.pending_and = None;
                self.void_last(false);
                self.since = Since::Other;
            }
            Class::At => {
                if w.eq_ignore_ascii_case("up") && self.since == Since::Joined {
                    // `3 and up`.
                    self.pending_and = None;
                    self.void_last(false);
                    self.since = Since::Other;
                } else if self.since == Since::Nothing {
                    self.since = Since::At;
                }
            }
            Class::Extreme => {
                let after_at = self.prev_word == Some(Class::At);
                let up_to = w.eq_ignore_ascii_case("to");
                if after_at && self.since == Since::At && !up_to {
                    // `3 at least`.
                    self.void_last(false);
                    self.since = Since::Other;
                } else if after_at {
                    // `at least 3`, `up to 3`.
                    self.qual_pending = true;
                }
            }
            Class::Restate if self.any_val => {
                self.restating = true;
                self.reset_run();
            }
            Class::Explain | Class::Example if !self.plain.is_empty() && !self.in_reasoning => {
                if !self.stopped {
                    self.condition = ["if", "when", "for"]
                        .into_iter()
                        .find(|c| w.eq_ignore_ascii_case(c));
                }
                self.stopped = true;
            }
            Class::Another if first.is_some() && !self.in_reasoning => {
                match (first, self.last) {
                    // `3, though 5 is also possible`: a later value said to
                    // be another answer too.
                    (Some(f), Some((span, ..))) if self.after_value() && span.0 > f => {
                        self.alt = Some((self.alt.map_or(f, |a| a.0), span.1));
                    }
                    // `3 (the other root is 5)`.
                    _ => {
                        self.pending_another = first;
                        self.run = None;
                    }
                }
            }
            Class::Respectively => {
                if let (Some(f), Some((span, ..))) = (first, self.last) {
                    if self.runs.len() > 1 {
                        self.alt = Some((f, span.1));
                    }
                }
            }
            _ => {
                self.other_words = true;
                if self.neg == Neg::Applied {
                    self.neg = Neg::None;
                }
                self.reset_run();
            }
        }
        if !matches!(class, Class::Filler | Class::Right) || self.prev_word.is_none() {
            self.prev_word = Some(class);
        }
    }

    fn reset_run(&mut self) {
        self.run = None;
        self.pending_or = None;
        self.pending_and = None;
        self.since = Since::Other;
    }

    fn finish<'a>(mut self, v: &'a str) -> Reading<'a> {
        self.close_one_of();
        let dangling = self.pending_or.map(|(_, class)| class);
        let text = |(s, e): Span| v[s..e].trim();
        // `The possible answers are 3, 4 and 5.`: values joined by `and` that
        // a copula or a colon opens and that end the sentence's values are a
        // list of candidates, whatever words come before.
        let last_end = self.last.map(|l| l.0 .1);
        let listed = |(s, e): Span| Some(e) == last_end && opens_a_list(&v[..s]);
        let alt = self.alt.or(self
            .and_alt
            .filter(|&a| self.and_choices || !self.other_words || listed(a)));
        let prose = if dangling == Some(Class::Or) {
            Prose::Unfinished
        } else if dangling == Some(Class::Doubt) {
            // `3, maybe`.
            self.void_last(false);
            if self.plain.is_empty() {
                Prose::Qualified
            } else {
                Prose::Upto(*self.plain.last().unwrap_or(&0))
            }
        } else if let Some(span) = alt {
            if self.any_negated {
                Prose::Negated
            } else {
                Prose::Alternatives(text(span))
            }
        } else {
            match self.plain.last() {
                None if self.any_negated => Prose::Negated,
                None if self.any_qualified => Prose::Qualified,
                None if self.any_range => Prose::Range,
                None => Prose::Plain,
                Some(&end)
                    if self.any_negated
                        || self.any_qualified
                        || self.any_range
                        || self.stopped
                        || self.runs.iter().any(|r| r.restated) =>
                {
                    Prose::Upto(end)
                }
                Some(_) => Prose::Plain,
            }
        };
        let offer = |r: &Run, kind| Offer {
            value: match r.int {
                Some(n) => OfferValue::Int(n),
                None => OfferValue::Text(text(r.span)),
            },
            kind,
        };
        let mut offers = Vec::new();
        if let Some((s, e)) = alt {
            offers.extend(
                self.runs
                    .iter()
                    .filter(|r| r.span.0 >= s && r.span.1 <= e)
                    .map(|r| offer(r, OfferKind::Alternative)),
            );
        }
        if matches!(prose, Prose::Upto(_) | Prose::Plain) {
            offers.extend(
                self.runs
                    .iter()
                    .filter(|r| r.restated)
                    .map(|r| offer(r, OfferKind::Restated)),
            );
        }
        // Nobody offers or restates an answer more than MAX_OFFERS times.
        let overflow = offers.len() > MAX_OFFERS;
        offers.truncate(MAX_OFFERS);
        Reading {
            prose,
            offers,
            overflow,
        }
    }
}

/// Reads a value's values (numbers, `$…$` spans, LaTeX commands, choice
/// letters, number words, numerals) and words: `or` (or a hedging word, an
/// ellipsis) between values makes alternatives; `not`, `never`, `…n't`
/// before a value negates it, as `is wrong` or `is not correct` after it
/// does; a bound (`at least`, `more than`, `or more`) or a doubt (`maybe`,
/// `could be`, a question mark) qualifies it; values after `i.e.`,
/// `namely` or `equivalently` restate it, and values after `because` or
/// `e.g.` are not read. One pass, linear.
pub(super) fn read_prose(v: &str) -> Reading<'_> {
    read(v, false, false)
}

/// [`read_prose`] of the sentence a value found without a marker stands in:
/// `because`, `e.g.`, `also` and `respectively` are words like any other there.
pub(super) fn read_sentence(v: &str) -> Reading<'_> {
    read(v, true, false)
}

/// `math`: `v` is a box's content, where a dash between numbers is a minus
/// (`\\boxed{10 – 3}` is 7), never a range.
fn read(v: &str, in_reasoning: bool, math: bool) -> Reading<'_> {
    let mut r = Reader::new(in_reasoning);
    // The value just read, and whether an approximation word came right
    // before it (`roughly 10-12`); whether the last token is such a word.
    let mut prev: Option<(Span, bool)> = None;
    let mut approx = false;
    for tok in Tokens::new(v) {
        let before = prev.take();
        let after_approx = std::mem::take(&mut approx);
        match tok {
            Tok::Value { span, int, choice } => {
                r.value(span, int, choice);
                if let Some((p, approx_p)) = before {
                    if !math && !r.stopped && dash_range(v, p, span, approx_p) {
                        r.void_range(p.0);
                    }
                }
                prev = Some((span, after_approx));
            }
            Tok::Math((s, _)) => {
                r.run.get_or_insert((s, false));
                if r.since != Since::Nothing {
                    r.since = Since::Other;
                }
            }
            Tok::Word(w, _) => {
                r.word(w);
                approx = APPROX.iter().any(|a| w.eq_ignore_ascii_case(a));
            }
            Tok::Ellipsis(_) => {
                if r.after_value() && !r.stopped {
                    let from = r.alt.map_or(r.run.map_or(0, |x| x.0), |a| a.0);
                    r.pending_or = Some((from, Class::Hedging));
                    r.since = Since::Joined;
                    r.run = None;
                }
            }
            Tok::Slash(_) => {
                // `B/D`: choice letters offered together.
                if r.last.is_some_and(|l| l.2) && r.since == Since::Nothing {
                    let from = r.alt.map_or(r.run.map_or(0, |x| x.0), |a| a.0);
                    r.pending_or = Some((from, Class::Hedging));
                    r.since = Since::Joined;
                    r.run = None;
                }
            }
            Tok::Question(_) | Tok::Bound(_) => {
                if r.last.is_some() && r.since == Since::Nothing {
                    r.void_last(false);
                }
            }
            Tok::Stop(_) => {
                r.qual_pending = false;
                if r.neg == Neg::Applied {
                    r.neg = Neg::None;
                }
                r.since = Since::Other;
                r.range_stop();
            }
        }
    }
    r.finish(v)
}

/// Whether two numbers read one after the other are a range written with a
/// dash (rule 14): an en or em dash, `--` or a tilde between them in prose
/// (`5–7`, `5 — 7`, `5--7`, `5~7`, `$5$–$7$`),
/// or a hyphen (`10-12`, `10 - 12`) after an approximation or range word
/// (`roughly 10-12`, `pages 4-6`) or before a word (`5-7 days`). A hyphen
/// alone is a subtraction (`10-6`, `10-6 = 4`), and `$…$` is one value, so
/// math is never read this way.
fn dash_range(v: &str, (ps, pe): Span, (s, e): Span, approx: bool) -> bool {
    let number = |t: &str| {
        let t = t.strip_suffix('%').unwrap_or(t);
        // `$5$–$7$`: each end in its own math span.
        let t = t
            .strip_prefix('$')
            .and_then(|t| t.strip_suffix('$'))
            .unwrap_or(t);
        !t.is_empty()
            && t.bytes()
                .all(|c| c.is_ascii_digit() || c == b'.' || c == b',')
    };
    let (a, b) = (&v[ps..pe], &v[s..e]);
    if !number(a) {
        return false;
    }
    let rest = v[e..].trim_start_matches(' ');
    if rest.starts_with('=') {
        return false;
    }
    // The sign the number reader gave the second end belongs to the dash.
    let (gap, b) = match b.strip_prefix('-') {
        Some(b) => (format!("{}-", v[pe..s].trim()), b),
        None => (v[pe..s].trim().to_owned(), b),
    };
    if !number(b) {
        return false;
    }
    match gap.as_str() {
        // `5–7`, `5 — 7`, `5~7`, and LaTeX's `5--7`.
        "\u{2013}" | "\u{2014}" | "~" | "--" => true,
        // `roughly 10-12`, `5-7 days`, `5 - 7 days`.
        "-" => {
            let word: &str = rest
                .split(|c: char| !c.is_ascii_alphabetic())
                .next()
                .unwrap_or("");
            let word_after = v[e..].starts_with(' ')
                && word.len() >= 2
                && words::class(word) == Class::Other
                && !["plus", "minus", "times", "divided", "mod"]
                    .iter()
                    .any(|o| word.eq_ignore_ascii_case(o));
            approx || word_after
        }
        _ => false,
    }
}

/// Whether one extracted part hedges, and its offers. `math`: the part is a
/// box's content (a dash between numbers is a minus there).
pub(super) fn hedge_of(part: &str, math: bool) -> (Option<Hedge>, Vec<Offer<'_>>) {
    if !has_words(part) {
        return (None, Vec::new());
    }
    let r = read(part, false, math);
    let hedge = match r.prose {
        _ if r.overflow => Some(Hedge::Proposed),
        Prose::Alternatives(_) => Some(Hedge::Alternatives),
        Prose::Negated => Some(Hedge::Negated),
        Prose::Qualified => Some(Hedge::Qualified),
        Prose::Unfinished => Some(Hedge::Unfinished),
        Prose::Range => Some(Hedge::Range),
        // A box that only partly holds its answer (`\boxed{3 \text{ is wrong}, 4}`)
        // is read whole; the verdict above already voided what it must.
        Prose::Plain | Prose::Upto(_) => None,
    };
    (hedge, r.offers)
}

/// Words after which a value is a step of a check, not a proposal.
const CHECKING: [&str; 14] = [
    "let",
    "check",
    "checking",
    "verify",
    "verifying",
    "test",
    "confirm",
    "plug",
    "plugging",
    "substitute",
    "substituting",
    "double",
    "recall",
    "note",
];

/// Words that name one case of several after a condition word (`for odd
/// n`, `if x is negative`, `when n is even`).
const CASES: [&str; 8] = [
    "odd",
    "even",
    "negative",
    "positive",
    "nonnegative",
    "nonpositive",
    "otherwise",
    "else",
];

/// The candidates a completion proposes after its final answer (`\boxed{3}
/// or 4`, `The answer is 3. Or maybe 4.`, `Wait, it could be 4.`,
/// `Actually, the answer is 4`): a value that follows, within three words,
/// `or` opening a clause, a doubt or hedging word, `actually`, `instead`,
/// `rather`, or the word `answer`, or in a clause that names another case
/// (`For odd n, it is 4.`). Each must equal the answer. `None`: more
/// than [`MAX_OFFERS`] (a hedge of itself).
///
/// `retracted`: before any other value, the coda judges the answer wrong
/// (`\\boxed{3} is wrong`, `Wait, that's not right.`).
pub(super) fn proposals<'a>(coda: &'a str) -> Option<Coda<'a>> {
    let mut offers = Vec::new();
    let (mut retracted, mut negation, mut any_value) = (false, false, false);
    // A word of the clause names what a verdict in it is about.
    let mut named = false;
    // Words left before a cue lapses.
    let mut cue: Option<u8> = None;
    let mut clause_start = true;
    // A condition word (`if`, `for`, `when`, `unless`) read in this clause,
    // then a word naming a case (`odd`, `even`, `negative`, ...): the values
    // after it are another case's (`The answer is 5. For odd n, it is 6.`).
    let mut condition = false;
    let mut case_clause = false;
    // The proposal being read: its start, the end of its last value (None:
    // no value yet) and the integer of a lone number word.
    let mut open: Option<(usize, Option<usize>, Option<i64>)> = None;
    let close = |open: &mut Option<(usize, Option<usize>, Option<i64>)>,
                 offers: &mut Vec<Offer<'a>>| {
        if let Some((s, Some(e), int)) = open.take() {
            offers.push(Offer {
                value: match int {
                    Some(n) => OfferValue::Int(n),
                    None => OfferValue::Text(coda[s..e].trim()),
                },
                kind: OfferKind::After,
            });
        }
    };
    for tok in Tokens::new(coda) {
        match tok {
            Tok::Value { span, int, .. } => {
                any_value = true;
                if case_clause && open.is_none() {
                    open = Some((span.0, None, None));
                }
                match open.as_mut() {
                    Some(o) => {
                        o.2 = if o.1.is_none() && o.0 == span.0 {
                            int
                        } else {
                            None
                        };
                        o.1 = Some(span.1);
                    }
                    None if cue.is_some() => open = Some((span.0, Some(span.1), int)),
                    None => {}
                }
                cue = None;
                clause_start = false;
            }
            Tok::Math(span) => {
                if open.is_none() && cue.is_some() {
                    open = Some((span.0, None, None));
                    cue = None;
                }
                clause_start = false;
            }
            Tok::Word(w, _) => {
                close(&mut open, &mut offers);
                let class = words::class(w);
                if !any_value {
                    match class {
                        Class::Wrong if !named => retracted = true,
                        Class::Negation => negation = true,
                        Class::Right if negation => retracted = true,
                        // `It is not negative, so it works`, `The other option
                        // is wrong`: the verdict is the other word's.
                        Class::Other => (negation, named) = (false, true),
                        _ => {}
                    }
                }
                let starts = clause_start;
                clause_start = false;
                let is = |s: &str| w.eq_ignore_ascii_case(s);
                if ["if", "for", "when", "whenever", "unless"]
                    .iter()
                    .any(|c| is(c))
                {
                    condition = true;
                } else if condition && CASES.iter().any(|c| is(c)) {
                    case_clause = true;
                }
                if (class == Class::Or && starts)
                    || matches!(class, Class::Doubt | Class::Hedging)
                    || is("actually")
                    || is("instead")
                    || is("rather")
                    || is("answer")
                {
                    cue = Some(3);
                } else if matches!(class, Class::Explain | Class::Example)
                    || CHECKING.iter().any(|c| is(c))
                {
                    cue = None;
                } else if let Some(n) = cue {
                    cue = n.checked_sub(1);
                }
            }
            Tok::Stop(_) | Tok::Question(_) => {
                close(&mut open, &mut offers);
                cue = None;
                clause_start = true;
                named = false;
                condition = false;
                case_clause = false;
            }
            Tok::Ellipsis(_) | Tok::Slash(_) | Tok::Bound(_) => {}
        }
        if offers.len() > MAX_OFFERS {
            return None;
        }
    }
    close(&mut open, &mut offers);
    Some(Coda { offers, retracted })
}

/// What the text after the final answer says (see [`proposals`]).
pub(super) struct Coda<'a> {
    pub(super) offers: Vec<Offer<'a>>,
    pub(super) retracted: bool,
}

/// Whether the words before a marker in its clause doubt it (`Perhaps the
/// answer is 5`), make it a supposition (`If the answer is 5, ...`) or
/// deny it (`I don't think the answer is 5`): a qualified or negated answer.
pub(super) fn lead_in(words_before: &str) -> Option<Hedge> {
    let mut hedge = None;
    let mut negation = false;
    for w in words_before
        .split(|c: char| !(c.is_ascii_alphabetic() || c == '\''))
        .filter(|w| !w.is_empty())
    {
        let is = |list: &[&str]| list.iter().any(|a| w.eq_ignore_ascii_case(a));
        if is(&["but", "so", "therefore", "thus", "hence", "however", "now"]) {
            hedge = None;
            negation = false;
        } else if is(&[
            "maybe", "perhaps", "possibly", "possible", "might", "could", "may", "guess", "if",
            "suppose", "assume", "assuming", "whether", "unless", "unsure", "doubt", "wonder",
        ]) {
            hedge = Some(Hedge::Qualified);
        } else if words::class(w) == Class::Negation {
            negation = true;
        } else if negation && is(&["think", "believe", "sure", "certain"]) {
            hedge = Some(Hedge::Negated);
        }
    }
    hedge
}

/// Whether a part has anything the hedge reader reads besides numbers and
/// commands: a letter outside a command name, a question mark, a slash, an
/// ellipsis, a bound sign (`5+`) or a non-ASCII character. Most boxes have none (`12`,
/// `\\frac{1}{2}`): they cannot hedge, and are not read.
fn has_words(part: &str) -> bool {
    let b = part.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => {
                let start = i + 1;
                i = start;
                while i < b.len() && b[i].is_ascii_alphabetic() {
                    i += 1;
                }
                if matches!(&part[start..i], "ldots" | "dots" | "cdots") {
                    return true;
                }
                continue;
            }
            b'?' | b'/' | 0x80.. => return true,
            b'+' if i > 0 && b[i - 1].is_ascii_digit() && bound_follows(&b[i + 1..]) => {
                return true;
            }
            b'.' if b.get(i + 1) == Some(&b'.') => return true,
            c if c.is_ascii_alphabetic() => return true,
            _ => {}
        }
        i += 1;
    }
    false
}
