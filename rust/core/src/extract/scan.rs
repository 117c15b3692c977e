//! What the rules read of one text, and the rules in priority order.

use super::attributed::attributed;
use super::cases::{answers_another_case, ends_case_split, ends_prose_cases};
use super::clause::{clause_before, expression_around, sentence_around};
use super::fallback::{
    last_bold, last_choice, last_math_span, last_number, looks_like_an_answer, tail_start,
};
use super::hedges::{hedge_of, lead_in, proposals, read_prose, read_sentence, Prose};
use super::markers::{
    marker_value, Markers, ANSWER_COLON, ANSWER_IS, FINAL_ANSWER, GSM8K, PATTERNS,
};
use super::region::finders;
use super::retract::retraction;
use super::stated::{is_arithmetic, is_stated};
use super::{ExtractOptions, Extracted, Hedge, Offer, OfferKind, OfferValue, Rule};

/// What the rules read of one text. Boxes come from SIMD substring search;
/// the other markers from one Aho-Corasick pass, run only when a rule asks
/// (a boxed completion never pays for it).
pub(super) struct Scan<'a> {
    pub(super) text: &'a str,
    /// Start of every `\boxed` / `\fbox` and the length of its keyword, in order.
    pub(super) boxes: Vec<(usize, usize)>,
    markers: std::cell::OnceCell<Markers>,
    /// The gold is a choice letter (see [`super::Hints::choice`]).
    pub(super) prefer_choice: bool,
}

impl<'a> Scan<'a> {
    pub(super) fn new(text: &'a str) -> Self {
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
            prefer_choice: false,
        }
    }

    fn markers(&self) -> &Markers {
        self.markers.get_or_init(|| Markers::new(self.text))
    }

    /// The answer `rule` finds, `Ok(None)` when it finds none, or `Err`
    /// when the completion can have no answer (an unclosed box).
    pub(super) fn apply(
        &self,
        rule: Rule,
        opts: &ExtractOptions,
    ) -> Result<Option<Extracted<'a>>, &'static str> {
        let one = |part: &'a str| Extracted::new(vec![part], rule);
        Ok(match rule {
            Rule::Boxed => return self.boxed(),
            Rule::AnswerTag => self.answer_tag(),
            Rule::FinalAnswer => self.after(FINAL_ANSWER, rule),
            Rule::Gsm8k => self.after(GSM8K, rule),
            Rule::AnswerColon => self.after(ANSWER_COLON, rule),
            Rule::AnswerIs => self.after(ANSWER_IS, rule),
            Rule::LastValue => self.last_value(opts),
            Rule::Bold | Rule::Choice | Rule::MathSpan | Rule::LastNumber => {
                let tail = tail_start(self.text, opts.tail_len);
                self.candidate(rule, tail, opts)
                    .map(|(start, end, part)| self.in_its_sentence(start, end, part, rule))
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
                (bare && looks_like_an_answer(t)).then(|| {
                    let mut e = one(t);
                    let (hedge, offers) = hedge_of(t, true);
                    e.hedge = hedge;
                    e.offers = offers;
                    e
                })
            }
        })
    }

    /// The content of the last closed `<answer>…</answer>` pair, its hedges
    /// and what the text after it proposes.
    fn answer_tag(&self) -> Option<Extracted<'a>> {
        let (start, end, close) = self.markers().last_tag?;
        let part = self.text[start..end].trim();
        let mut e = Extracted::new(vec![part], Rule::AnswerTag);
        let (hedge, offers) = hedge_of(part, false);
        e.hedge = hedge;
        e.offers = offers;
        self.read_coda(&mut e, close);
        Some(e)
    }

    /// The candidates the text after the answer (from `end`) proposes, added
    /// to its offers (too many: a hedge).
    pub(super) fn read_coda(&self, e: &mut Extracted<'a>, end: usize) {
        // The answer may close a math span (`$\\boxed{3}$`): its closer is no opener.
        let coda = self.text[end..].trim_start_matches([' ', '$']);
        let coda = coda
            .strip_prefix("\\)")
            .or_else(|| coda.strip_prefix("\\]"))
            .unwrap_or(coda);
        match proposals(coda) {
            Some(c) => {
                e.offers.extend(c.offers);
                if c.retracted {
                    e.hedge.get_or_insert(Hedge::Negated);
                }
            }
            None => {
                e.hedge.get_or_insert(Hedge::Proposed);
            }
        }
        take_back(e, coda);
    }

    /// The value after the last occurrence of a line marker, its hedges and
    /// offers.
    ///
    /// A value that is prose (`Answer: The largest $n$ is 34.`) gives way to
    /// the last plain mathematical value inside it (`5, not 3` answers 5;
    /// `5 because x = 2` answers 5). Once a marker is found its value is the
    /// answer: values offered as alternatives (`1, 2, or 3`, `(A) or (C)`)
    /// are the answer together, and a value that is only negated (`not 3`),
    /// qualified (`at least 3`, `maybe 3`, `3?`) or unfinished (`3 or`) is a
    /// hedge; the text never falls back to the last value of the completion.
    fn after(&self, id: usize, rule: Rule) -> Option<Extracted<'a>> {
        let marker_end = self.markers().last_end[id]?;
        let mv = marker_value(self.text, marker_end)?;
        // `Bob says the answer is 8`: someone else's answer gives way to the
        // rules after this one (rule 16).
        let value_at = mv.value.as_ptr() as usize - self.text.as_ptr() as usize;
        if attributed(self.text, value_at, value_at + mv.value.len()) {
            return None;
        }
        let reading = read_prose(mv.sentence);
        let mut e = Extracted::new(vec![mv.value], rule);
        e.offers = reading.offers;
        take_back(&mut e, mv.sentence);
        self.read_coda(&mut e, mv.end);
        if matches!(id, ANSWER_IS | FINAL_ANSWER) {
            // `Perhaps the answer is 5`, `If the answer is 5, ...`.
            let start = marker_end - PATTERNS[id].len();
            let clause = clause_before(self.text, start);
            if let Some(h) = lead_in(clause) {
                e.hedge = Some(h);
                return Some(e);
            }
        }
        // `For even n the answer is 5; for odd n the answer is 6.`: the last
        // of answers stated case by case is one case (rule 12).
        if matches!(id, ANSWER_IS | FINAL_ANSWER | ANSWER_COLON)
            && e.hedge.is_none()
            && answers_another_case(self.text, &self.markers().statements, marker_end, mv.value)
        {
            e.hedge = Some(Hedge::Cases);
            return Some(e);
        }
        if reading.overflow {
            e.hedge = Some(Hedge::Proposed);
            return Some(e);
        }
        let v = mv.sentence;
        let is_span = mv.value.as_ptr() != v.as_ptr() || mv.value.len() != v.len();
        let upto = match reading.prose {
            Prose::Alternatives(region) => {
                e.parts = vec![region];
                e.hedge = Some(Hedge::Alternatives);
                return Some(e);
            }
            Prose::Negated => return Some(hedged(e, Hedge::Negated)),
            Prose::Qualified => return Some(hedged(e, Hedge::Qualified)),
            Prose::Unfinished => return Some(hedged(e, Hedge::Unfinished)),
            Prose::Range => return Some(hedged(e, Hedge::Range)),
            // A `$…$` span opened the value: it is the answer.
            Prose::Plain if is_span => return Some(e),
            Prose::Plain => v.len(),
            Prose::Upto(end) => end,
        };
        // A letter with its option's text (`the best answer is C: 42
        // apples`): against a letter gold it is the answer whole, not the
        // option's last number; two options offered (`C: 42 apples or D: 43
        // pears`) are alternatives against any gold.
        if !is_span && choice_label(v) {
            let v = v[..upto.min(v.len())].trim_end();
            if v[1..].split(' ').skip(1).any(choice_label) {
                e.parts = vec![v];
                e.hedge = Some(Hedge::Alternatives);
                return Some(e);
            }
            if self.prefer_choice {
                e.parts = vec![v];
                return Some(e);
            }
        }
        let v = v.trim_end_matches('?');
        if !is_span && upto >= v.len() && looks_like_an_answer(v) {
            e.parts = vec![v];
            return Some(e);
        }
        let fallback = if is_span { mv.value } else { v };
        // `Answer: 7 (a common mistake is 8)`: the marker's value is the last
        // one the prose does not attribute to someone else (rule 16).
        match last_own_value(&v[..upto.min(v.len())]) {
            Own::Value(p) => e.parts = vec![p],
            Own::None => e.parts = vec![fallback],
            Own::Attributed => return Some(hedged(e, Hedge::Attributed)),
        }
        Some(e)
    }

    /// The latest-ending of the no-marker candidates near the end, read in
    /// its sentence.
    fn last_value(&self, opts: &ExtractOptions) -> Option<Extracted<'a>> {
        let tail = tail_start(self.text, opts.tail_len);
        if self.prefer_choice {
            // Against a choice letter, the letter near the end answers, not
            // the numbers of the reasoning after it.
            if let Some((start, end, part)) = self.candidate(Rule::Choice, tail, opts) {
                return Some(self.in_its_sentence(start, end, part, Rule::Choice));
            }
        }
        // On a tie the wrapper wins: `**5**` and `$5$` end after their number.
        [Rule::Bold, Rule::MathSpan, Rule::Choice, Rule::LastNumber]
            .into_iter()
            .filter_map(|rule| {
                self.candidate(rule, tail, opts)
                    .map(|(start, end, part)| (end, start, rule, part))
            })
            .fold(
                None,
                |best: Option<(usize, usize, Rule, &'a str)>, c| match best {
                    Some(b) if b.0 >= c.0 => Some(b),
                    _ => Some(c),
                },
            )
            .map(|(end, start, rule, part)| self.in_its_sentence(start, end, part, rule))
    }

    /// A value found without a marker, read in its sentence: a hedge there
    /// (`It can't be 3.`, `maybe 3`, `3 or 4`) is its hedge; an earlier plain
    /// value of the sentence answers when this one is only a bound or a
    /// negation (`12, which is more than 3`); the text after the sentence is
    /// read for other candidates.
    fn in_its_sentence(
        &self,
        start: usize,
        end: usize,
        part: &'a str,
        rule: Rule,
    ) -> Extracted<'a> {
        let offset = |p: &str| p.as_ptr() as usize - self.text.as_ptr() as usize;
        let (s, e_) = sentence_around(self.text, start, end);
        let sentence = &self.text[s..e_];
        let reading = read_sentence(sentence);
        let mut e = Extracted::new(vec![part], rule);
        e.offers = reading.offers;
        take_back(&mut e, &self.text[end..e_]);
        self.read_coda(&mut e, e_);
        if reading.overflow {
            e.hedge = Some(Hedge::Proposed);
            return e;
        }
        match reading.prose {
            // Alternatives earlier in the sentence are reasoning, not this value's.
            Prose::Alternatives(region) if offset(region) + region.len() >= end => {
                e.parts = vec![region];
                e.hedge = Some(Hedge::Alternatives);
            }
            Prose::Alternatives(_) => e.offers.retain(|o| o.kind == OfferKind::Denied),
            Prose::Negated => e.hedge = Some(Hedge::Negated),
            Prose::Qualified => e.hedge = Some(Hedge::Qualified),
            Prose::Unfinished => e.hedge = Some(Hedge::Unfinished),
            Prose::Range => e.hedge = Some(Hedge::Range),
            Prose::Upto(upto) if s + upto < end => {
                // The value itself is negated, qualified or a restatement.
                match last_plain_value(&sentence[..upto]) {
                    Some(p) => e.parts = vec![p],
                    None => e.hedge = Some(Hedge::Negated),
                }
            }
            Prose::Plain | Prose::Upto(_) => {}
        }
        // `A common wrong answer is 9.`, `e.g. 3 + 4 = 7` (rule 16).
        if e.hedge.is_none() && attributed(self.text, start, end) {
            e.hedge = Some(Hedge::Attributed);
        }
        // `| n odd | 3 |` then `| n even | 4 |`: one case of several.
        if e.hedge.is_none() && ends_case_split(self.text, start, part) {
            e.hedge = Some(Hedge::Cases);
        }
        // `For n even: 5. For n odd: 6.`: values given case by case in prose.
        if e.hedge.is_none() && ends_prose_cases(self.text, start, part) {
            e.hedge = Some(Hedge::Cases);
        }
        // An operand expression with prose after it restates the question.
        if e.hedge.is_none()
            && rule != Rule::Choice
            && e.parts.len() == 1
            && is_arithmetic(e.parts[0])
        {
            let p = e.parts[0];
            let (ps, pe) = if p.as_ptr() == part.as_ptr() {
                (start, end)
            } else {
                (offset(p), offset(p) + p.len())
            };
            if !is_stated(self.text, ps, pe) {
                e.hedge = Some(Hedge::Unevaluated);
            }
        }
        e
    }

    /// The last candidate of a no-marker rule ending after `tail`: (start,
    /// end, part). The last number is the whole expression it is part of,
    /// or nothing (`\frac{639}{40}`, never `40`).
    fn candidate(
        &self,
        rule: Rule,
        tail: usize,
        opts: &ExtractOptions,
    ) -> Option<(usize, usize, &'a str)> {
        let text = self.text;
        let offset = |part: &str| part.as_ptr() as usize - text.as_ptr() as usize;
        let found = match rule {
            Rule::Bold => last_bold(text, opts.max_bold_len),
            Rule::MathSpan => last_math_span(text),
            Rule::Choice => last_choice(text, tail, self.prefer_choice),
            Rule::LastNumber => {
                let (end, number) = last_number(text, tail)?;
                let start = offset(number);
                let (from, _) = sentence_around(text, start, end);
                let (s, e) = expression_around(text, from, start, end)?;
                Some((e.max(end), &text[s..e]))
            }
            _ => None,
        };
        found
            .filter(|&(end, part)| end > tail && !part.is_empty())
            .map(|(end, part)| (offset(part).min(end), end, part))
    }
}

/// What `text` (after the answer, or its sentence) takes back (rule 4): `so
/// 16 is not the answer after all`, `although this is incorrect`, `I made an
/// error`.
fn take_back<'a>(e: &mut Extracted<'a>, text: &'a str) {
    let r = retraction(text);
    if r.retracted {
        e.hedge.get_or_insert(Hedge::Negated);
    }
    e.offers.extend(r.denied.iter().map(|&(s, t)| Offer {
        value: OfferValue::Text(text[s..t].trim()),
        kind: OfferKind::Denied,
    }));
}

/// Whether `v` opens with a choice label: `(C) …`, `C: …`, `C) …`, `C. …`.
fn choice_label(v: &str) -> bool {
    let b = v.as_bytes();
    match b {
        [b'(', c, b')', ..] => c.is_ascii_uppercase(),
        [c, b':' | b')' | b'.', rest @ ..] => {
            c.is_ascii_uppercase() && rest.first().is_none_or(|&r| r == b' ')
        }
        _ => false,
    }
}

/// An extraction that hedges.
fn hedged(mut e: Extracted<'_>, hedge: Hedge) -> Extracted<'_> {
    e.hedge = Some(hedge);
    e
}

/// What [`last_own_value`] finds.
enum Own<'a> {
    Value(&'a str),
    None,
    Attributed,
}

/// How many attributed values [`last_own_value`] steps back over.
const MAX_OWN_TRIES: usize = 4;

/// The latest-ending value inside a piece of prose that its clause does not
/// attribute to an example, a wrong answer or someone else (rule 16).
fn last_own_value(w: &str) -> Own<'_> {
    let mut rest = w;
    for _ in 0..MAX_OWN_TRIES {
        let Some(p) = last_plain_value(rest) else {
            break;
        };
        let at = p.as_ptr() as usize - w.as_ptr() as usize;
        if !attributed(w, at, at + p.len()) {
            return Own::Value(p);
        }
        rest = &w[..at];
        if rest.trim().is_empty() {
            return Own::Attributed;
        }
    }
    if rest.len() < w.len() {
        Own::Attributed
    } else {
        Own::None
    }
}

/// The latest-ending value inside a piece of prose: bold, a math span, a
/// choice letter or a number with the expression it is part of (rule 2:
/// `the set [4, 6]` answers the interval, never 6).
fn last_plain_value(w: &str) -> Option<&str> {
    let number = last_number(w, 0).map(|(end, n)| {
        let start = n.as_ptr() as usize - w.as_ptr() as usize;
        let (from, _) = sentence_around(w, start, end);
        match expression_around(w, from, start, end) {
            Some((s, e)) => (e.max(end), &w[s..e]),
            None => (end, n),
        }
    });
    [
        last_bold(w, usize::MAX),
        last_math_span(w),
        last_choice(w, 0, false),
        number,
    ]
    .into_iter()
    .flatten()
    .filter(|(_, part)| !part.is_empty())
    .fold(None, |best: Option<(usize, &str)>, c| match best {
        Some(b) if b.0 >= c.0 => Some(b),
        _ => Some(c),
    })
    .map(|(_, part)| part)
}
