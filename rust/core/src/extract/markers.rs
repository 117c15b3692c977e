//! The line markers (`<answer>`, `the final answer is`, `####`, `answer:`,
//! `answer is`): one Aho-Corasick pass, and the value after a marker.

use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use memchr::memmem;

use super::fallback::trim_value;
use super::hedges::{read_prose, Prose};
use super::region::special_token_at;

// Marker patterns; the index is the pattern id of the automaton.
pub(super) const TAG_OPEN: usize = 0;
pub(super) const TAG_CLOSE: usize = 1;
pub(super) const FINAL_ANSWER: usize = 2;
pub(super) const GSM8K: usize = 3;
pub(super) const ANSWER_COLON: usize = 4;
pub(super) const ANSWER_IS: usize = 5;
pub(super) const PATTERNS: [&str; 6] = [
    "<answer>",
    "</answer>",
    "final answer is",
    "####",
    "answer:",
    "answer is",
];

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
    /// End of the last match of each pattern.
    pub(super) last_end: [Option<usize>; PATTERNS.len()],
    /// The last closed `<answer>…</answer>` pair: (content start, content end).
    pub(super) last_tag: Option<(usize, usize)>,
}

impl Markers {
    pub(super) fn new(text: &str) -> Self {
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

/// The value after a line marker ending at `start`.
///
/// A value that opens with `$`, `$$`, `\(` or `\[` runs to its closing
/// delimiter; otherwise it runs to the end of the line or of the sentence
/// (a `.` followed by a space). Trailing punctuation and bold markers go.
pub(super) fn marker_value(text: &str, start: usize) -> Option<&str> {
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
pub(super) fn line_value(s: &str) -> Option<&str> {
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
pub(super) fn find_close(inner: &str, close: &str) -> Option<usize> {
    let bytes = inner.as_bytes();
    memmem::find_iter(bytes, close.as_bytes()).find(|&k| {
        let slashes = bytes[..k].iter().rev().take_while(|&&b| b == b'\\').count();
        slashes % 2 == 0
    })
}

/// Whether `rest` goes on with the word `or` (`or`, `\text{ or }`).
pub(super) fn starts_with_or(rest: &str) -> bool {
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
