//! Where in a completion the answer may be: special tokens at the end are
//! not text, and reasoning (`<think>…</think>`) is not the answer.

use std::sync::OnceLock;

use memchr::memmem;

use super::ExtractOptions;

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

pub(super) struct Finders {
    pub(super) boxes: memmem::Finder<'static>,
    think: memmem::Finder<'static>,
}

pub(super) fn finders() -> &'static Finders {
    static F: OnceLock<Finders> = OnceLock::new();
    F.get_or_init(|| Finders {
        boxes: memmem::Finder::new("box"),
        think: memmem::Finder::new("think>"),
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
