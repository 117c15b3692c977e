//! Where in a completion the answer may be: special tokens at the end are
//! not text, and reasoning (`<think>…</think>`) is not the answer.

use std::sync::OnceLock;

use memchr::memmem;

use super::ExtractOptions;

/// Why a completion has no answer region (see [`answer_region`]).
pub const UNCLOSED_THINK: &str = "no answer: the reasoning never closes (<think> without </think>)";

/// The part of a completion that may hold its answer (docs/verify_semantics.md
/// rules 7 and 9): special tokens at its end (`<|im_end|>`, `</s>`, `<eos>`,
/// `<pad>`, ..., repeated) are dropped; with [`ExtractOptions::think`], only
/// the text after the last `</think>` counts, and a completion whose last
/// reasoning tag opens (`<think>` never closed) has none.
///
/// Tags are read as models write them: in any case, with spaces inside
/// (`<THINK>`, `<think >`, `< /think>`), and `<thinking>` alike. They are
/// found in one SIMD pass over `<`; boxes are then looked for in the region
/// only.
pub fn answer_region<'a>(text: &'a str, opts: &ExtractOptions) -> Result<&'a str, &'static str> {
    let text = strip_special_tokens(text);
    if !opts.think {
        return Ok(text);
    }
    let bytes = text.as_bytes();
    let mut last = None;
    for k in memchr::memchr_iter(b'<', bytes) {
        if let Some((close, end)) = think_tag(bytes, k) {
            last = Some(if close { Ok(end) } else { Err(UNCLOSED_THINK) });
        }
    }
    match last {
        None => Ok(text),
        Some(Ok(from)) => Ok(&text[from..]),
        Some(Err(why)) => Err(why),
    }
}

/// The reasoning tag opening at `b[k]` (a `<`): whether it closes, and its end.
fn think_tag(b: &[u8], k: usize) -> Option<(bool, usize)> {
    let spaces = |mut i: usize| {
        while b.get(i).is_some_and(|c| *c == b' ') && i < k + 8 {
            i += 1;
        }
        i
    };
    let mut i = spaces(k + 1);
    let close = b.get(i) == Some(&b'/');
    if close {
        i = spaces(i + 1);
    }
    let word =
        |i: usize, w: &[u8]| b.len() >= i + w.len() && b[i..i + w.len()].eq_ignore_ascii_case(w);
    if !word(i, b"think") {
        return None;
    }
    i += 5;
    if word(i, b"ing") {
        i += 3;
    }
    let i = spaces(i);
    (b.get(i) == Some(&b'>')).then_some((close, i + 1))
}

pub(super) struct Finders {
    pub(super) boxes: memmem::Finder<'static>,
}

pub(super) fn finders() -> &'static Finders {
    static F: OnceLock<Finders> = OnceLock::new();
    F.get_or_init(|| Finders {
        boxes: memmem::Finder::new("box"),
    })
}

/// Fixed special tokens besides the `<|...|>` family (and DeepSeek's
/// `<｜...｜>`), which are recognised by their shape.
pub(super) const SPECIAL_TOKENS: [&str; 8] = [
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
pub(super) fn special_token_at(bytes: &[u8], at: usize) -> Option<usize> {
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
pub(super) fn strip_special_tokens(text: &str) -> &str {
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
