//! What the rules read of one text, and the rules in priority order.

use super::fallback::{
    last_bold, last_choice, last_math_span, last_number, looks_like_an_answer, tail_start,
};
use super::hedges::{hedge_of, read_prose, Prose};
use super::markers::{marker_value, Markers, ANSWER_COLON, ANSWER_IS, FINAL_ANSWER, GSM8K};
use super::region::{answer_region, finders};
use super::{ExtractOptions, Extracted, Hedge, Rule};

/// What the rules read of one text. Boxes come from SIMD substring search;
/// the other markers from one Aho-Corasick pass, run only when a rule asks
/// (a boxed completion never pays for it).
pub(super) struct Scan<'a> {
    pub(super) text: &'a str,
    /// Start of every `\boxed` / `\fbox` and the length of its keyword, in order.
    pub(super) boxes: Vec<(usize, usize)>,
    markers: std::cell::OnceCell<Markers>,
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
        }
    }

    /// The scan of a completion's answer region ([`answer_region`]).
    pub(super) fn completion(text: &'a str, opts: &ExtractOptions) -> Result<Self, &'static str> {
        answer_region(text, opts).map(Scan::new)
    }

    fn markers(&self) -> &Markers {
        self.markers.get_or_init(|| Markers::new(self.text))
    }

    pub(super) fn apply(&self, rule: Rule, opts: &ExtractOptions) -> Option<Extracted<'a>> {
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
