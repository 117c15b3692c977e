//! The line markers (`<answer>`, `the final answer is`, `####`, `answer:`,
//! `answer is`): one Aho-Corasick pass, and the value after a marker.

use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use memchr::memmem;

use super::clause::{abbreviation, ellipsis};
use super::fallback::trim_value;
use super::region::special_token_at;

// Marker patterns; the index is the pattern id of the automaton.
pub(super) const TAG_OPEN: usize = 0;
pub(super) const TAG_CLOSE: usize = 1;
pub(super) const FINAL_ANSWER: usize = 2;
pub(super) const GSM8K: usize = 3;
pub(super) const ANSWER_COLON: usize = 4;
pub(super) const ANSWER_IS: usize = 5;
/// `**Final Answer**: 3`: an `answer:` marker.
const BOLD_COLON: usize = 6;
/// `answer` alone: a heading (`# Answer`, `**Final Answer**`) when it is
/// all its line says; the answer is then on the next line.
const HEADING: usize = 7;
/// `Ans: 3`, and the Chinese and Japanese `答：` folded to it
/// ([`super::foreign`]): an `answer:` marker that starts a word.
const ANS_COLON: usize = 8;
pub(super) const PATTERNS: [&str; 9] = [
    "<answer>",
    "</answer>",
    "final answer is",
    "####",
    "answer:",
    "answer is",
    "answer**:",
    "answer",
    "ans:",
];
/// The markers whose last occurrence is kept.
const KINDS: usize = 6;

pub(super) fn markers() -> &'static AhoCorasick {
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
pub(super) struct Markers {
    /// End of the last match of each pattern (for a heading, the start of
    /// the line its answer is on).
    pub(super) last_end: [Option<usize>; KINDS],
    /// The last closed `<answer>…</answer>` pair: (content start, content
    /// end, end of the closing tag).
    pub(super) last_tag: Option<(usize, usize, usize)>,
    /// (start, end) of every `answer is`, `final answer is` and `answer:`
    /// that is a marker, in order (the answers stated before the last, for
    /// rule 12's cases); the end is where its value starts to be read.
    pub(super) statements: Vec<(usize, usize)>,
}

impl Markers {
    pub(super) fn new(text: &str) -> Self {
        let mut m = Markers {
            last_end: [None; KINDS],
            last_tag: None,
            statements: Vec::new(),
        };
        let bytes = text.as_bytes();
        // The current line: its start, and where its heading decoration
        // (`#`, `*`, spaces, `final `) ends; found once per line, so a long
        // line of hits stays linear.
        let mut line = (0, None::<usize>);
        let mut seen = 0;
        for hit in markers().find_iter(text) {
            let id = hit.pattern().as_usize();
            match id {
                TAG_CLOSE => {
                    if let Some(open) = m.last_end[TAG_OPEN].take() {
                        m.last_tag = Some((open, hit.start(), hit.end()));
                    }
                }
                FINAL_ANSWER | ANSWER_IS if verdict_follows(&text[hit.end()..]) => {
                    // `my answer is correct.`: a judgement, not a marker.
                }
                // `plans: 5`, `Trans:`: a word's end, no marker.
                ANS_COLON if hit.start() > 0 && bytes[hit.start() - 1].is_ascii_alphanumeric() => {}
                // `Answer:` ending its line: the answer is on the next one.
                ANSWER_COLON | BOLD_COLON | ANS_COLON => {
                    let at = heading_answer(bytes, hit.end()).unwrap_or(hit.end());
                    m.statements.push((hit.start(), at));
                    m.last_end[ANSWER_COLON] = Some(at);
                }
                HEADING => {
                    if let Some(k) = memchr::memrchr(b'\n', &bytes[seen..hit.start()]) {
                        line = (seen + k + 1, None);
                    }
                    seen = hit.start();
                    let deco = *line
                        .1
                        .get_or_insert_with(|| heading_decoration(bytes, line.0));
                    if deco == hit.start() {
                        if let Some(at) = heading_answer(bytes, hit.end()) {
                            m.last_end[ANSWER_COLON] = Some(at);
                        }
                    }
                }
                _ => {
                    if matches!(id, FINAL_ANSWER | ANSWER_IS) {
                        m.statements.push((hit.start(), hit.end()));
                    }
                    m.last_end[id] = Some(hit.end());
                }
            }
        }
        m
    }
}

/// Where the decoration a heading starts with ends: `#`, `*`, spaces, and
/// the word `final` (`## Final Answer`, `**Final Answer**`).
fn heading_decoration(b: &[u8], line_start: usize) -> usize {
    let mut i = line_start;
    while b
        .get(i)
        .is_some_and(|c| matches!(c, b'#' | b'*' | b' ' | b'\t'))
    {
        i += 1;
    }
    if b.len() >= i + 6 && b[i..i + 6].eq_ignore_ascii_case(b"final ") {
        i += 6;
        while b.get(i) == Some(&b' ') {
            i += 1;
        }
    }
    i
}

/// The start of the answer under a heading ending at `end` (`Answer`,
/// then `**`, `:` or spaces, then a line break): the next line that is not
/// empty. `None` when the line goes on or nothing follows.
fn heading_answer(b: &[u8], end: usize) -> Option<usize> {
    let mut i = end;
    while b
        .get(i)
        .is_some_and(|c| matches!(c, b'*' | b':' | b' ' | b'\t' | b'#' | b'\r'))
    {
        i += 1;
    }
    if b.get(i) != Some(&b'\n') {
        return None;
    }
    while b.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    (i < b.len()).then_some(i)
}

/// Whether a judgement of the answer follows `answer is` (`my answer is
/// correct.`, `the answer is not right`, `the answer is as follows`): up to
/// two adverbs, then a judging word. Reads a few words, whatever the text.
fn verdict_follows(rest: &str) -> bool {
    const ADVERBS: [&str; 8] = [
        "not",
        "indeed",
        "definitely",
        "also",
        "still",
        "probably",
        "clearly",
        "now",
    ];
    const JUDGEMENTS: [&str; 23] = [
        "correct",
        "incorrect",
        "right",
        "wrong",
        "valid",
        "invalid",
        "consistent",
        "reasonable",
        "plausible",
        "verified",
        "confirmed",
        "complete",
        "sound",
        "accurate",
        "below",
        "above",
        "boxed",
        "given",
        "shown",
        "clear",
        "obvious",
        "as",
        "in",
    ];
    // Words only: a value first (`is $9999$, \boxed{1}`, `is 5, as shown`)
    // leaves the marker a marker, whatever words follow the value.
    let mut words = rest
        .split_ascii_whitespace()
        .map(|t| t.trim_matches(|c: char| matches!(c, '.' | ',' | ';' | ':' | '!' | '*' | '"')))
        .filter(|w| !w.is_empty())
        .take(3);
    for _ in 0..3 {
        let Some(w) = words.next() else {
            return false;
        };
        if !w.bytes().all(|c| c.is_ascii_alphabetic() || c == b'\'') {
            return false;
        }
        let is = |list: &[&str]| list.iter().any(|a| w.eq_ignore_ascii_case(a));
        if is(&JUDGEMENTS) {
            return true;
        }
        if !is(&ADVERBS) {
            return false;
        }
    }
    false
}

/// A marker's value, and where its sentence ends (what follows is the coda,
/// read for other candidates).
pub(super) struct MarkerValue<'a> {
    /// The value itself: a `$…$` / `\(…\)` span when the value opens with
    /// one, else the sentence.
    pub(super) value: &'a str,
    /// The value's sentence, read for hedges.
    pub(super) sentence: &'a str,
    /// Offset in the text where the value's sentence (or span) ends.
    pub(super) end: usize,
}

/// The value after a line marker ending at `start`.
///
/// A value that opens with `$`, `$$`, `\(` or `\[` runs to its closing
/// delimiter; otherwise it runs to the end of the line or of the sentence
/// (a `.` or `?` followed by a space). Trailing punctuation and bold
/// markers go (a question mark stays: it questions the value).
pub(super) fn marker_value(text: &str, start: usize) -> Option<MarkerValue<'_>> {
    let mut s = &text[start..];
    s = s.trim_start_matches([' ', '\t', ':']);
    s = s.strip_prefix("**").unwrap_or(s);
    s = s.trim_start_matches([' ', '\t', ':']);
    let offset = |part: &str| part.as_ptr() as usize - text.as_ptr() as usize;
    // No sentence: the empty one where the value would start (an offset
    // within `text`, unlike a static "").
    let sentence = line_value(s).unwrap_or(&s[..0]);
    let mut end = offset(sentence) + sentence.len();
    for (open, close) in [("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")] {
        if let Some(inner) = s.strip_prefix(open) {
            if let Some(k) = find_close(inner, close) {
                let v = &s[..open.len() + k + close.len()];
                end = end.max(offset(v) + v.len());
                if v.len() > open.len() + close.len() {
                    return Some(MarkerValue {
                        value: v,
                        sentence: if sentence.is_empty() { v } else { sentence },
                        end,
                    });
                }
                return None;
            }
        }
    }
    (!sentence.is_empty()).then_some(MarkerValue {
        value: sentence,
        sentence,
        end,
    })
}

/// A marker's value read as text: its line up to the end of the sentence, or
/// up to a special token.
pub(super) fn line_value(s: &str) -> Option<&str> {
    let line = s.split('\n').next().unwrap_or("");
    // A special token ends the line (`Answer: 72<|im_end|> ...`).
    let line = memchr::memchr_iter(b'<', line.as_bytes())
        .find(|&at| special_token_at(line.as_bytes(), at).is_some())
        .map_or(line, |at| &line[..at]);
    let bytes = line.as_bytes();
    let sentence_end = (0..bytes.len())
        .find(|&i| {
            matches!(bytes[i], b'.' | b'?')
                && bytes.get(i + 1).is_some_and(|b| *b == b' ')
                && !(bytes[i] == b'.' && (abbreviation(&bytes[..i]) || ellipsis(&bytes[..i])))
        })
        .map_or(line.len(), |i| i + usize::from(bytes[i] == b'?'));
    let v = trim_value(&line[..sentence_end]);
    (!v.is_empty()).then_some(v)
}

/// The first `close` in `inner` that is not escaped (`$\$18$` closes at
/// its second `$`).
pub(super) fn find_close(inner: &str, close: &str) -> Option<usize> {
    let bytes = inner.as_bytes();
    memmem::find_iter(bytes, close.as_bytes()).find(|&k| {
        let slashes = bytes[..k].iter().rev().take_while(|&&b| b == b'\\').count();
        slashes % 2 == 0
    })
}
