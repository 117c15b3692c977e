//! `\boxed{…}` / `\fbox{…}`: every box not inside another, braces matched in
//! one linear pass.

use super::hedges::hedge_of;
use super::scan::Scan;
use super::{Extracted, Rule};

impl<'a> Scan<'a> {
    /// Every box that is not inside another one, in order.
    pub(super) fn boxed(&self) -> Option<Extracted<'a>> {
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
}
pub(super) enum BoxStart {
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
pub(super) fn match_braces(bytes: &[u8], opens: &[BoxStart]) -> Vec<Option<usize>> {
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
