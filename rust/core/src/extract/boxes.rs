//! `\boxed{…}` / `\fbox{…}`: every box not inside another, braces matched in
//! one linear pass.

use super::attributed::attributed;
use super::hedges::hedge_of;
use super::scan::Scan;
use super::{Extracted, Hedge, Rule, UNCLOSED_BOX};

/// Different boxes kept as one answer; more are a hedge of themselves.
const MAX_BOXES: usize = 64;

/// Boxes read for rule 16's cues at most; the ones after them are dropped too.
const MAX_ATTRIBUTED: usize = 64;

impl<'a> Scan<'a> {
    /// Every box that is not inside another one, in order.
    pub(super) fn boxed(&self) -> Result<Option<Extracted<'a>>, &'static str> {
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
        let mut parts: Vec<&'a str> = Vec::new();
        // Box contents seen, white space removed: one answer boxed twice is one.
        let mut seen: std::collections::HashSet<std::borrow::Cow<'a, str>> =
            std::collections::HashSet::new();
        let mut resume = 0;
        let mut dropped = 0; // attributed boxes seen
        for (open, close) in opens.iter().zip(closes) {
            let (start, content, end) = match *open {
                BoxStart::Brace(start, brace) => match close {
                    Some(c) => (start, brace + 1..c, c + 1),
                    // Cut off while writing its answer: no answer at all.
                    None => return Err(UNCLOSED_BOX),
                },
                BoxStart::Bare(start, from, to) => (start, from..to, to),
            };
            if start < resume {
                continue; // nested in the previous box
            }
            resume = end;
            let part = text[content].trim();
            // A blank copied from the problem (`\boxed{\phantom{7}}`,
            // `\boxed{}`) is no answer; the same answer boxed twice is one.
            if is_placeholder(part) || parts.len() > MAX_BOXES {
                continue;
            }
            let key = squeezed(part);
            if seen.contains(&key) {
                continue;
            }
            // `The format is \boxed{42}`, `For example, \boxed{5}`: not this
            // completion's answer (rule 16); a later box or marker is. Past
            // MAX_ATTRIBUTED such boxes, every box is taken for one (the
            // clause reads stay bounded).
            if dropped == MAX_ATTRIBUTED || attributed(text, start, end) {
                dropped = (dropped + 1).min(MAX_ATTRIBUTED);
                continue;
            }
            seen.insert(key);
            parts.push(part);
        }
        if parts.is_empty() {
            return Ok(None);
        }
        let too_many = parts.len() > MAX_BOXES;
        let mut e = Extracted::new(parts, Rule::Boxed);
        if too_many {
            // Nobody boxes 65 different answers: candidates, not an answer
            // (and not worth parsing).
            e.parts.truncate(1);
            e.hedge = Some(Hedge::Proposed);
            return Ok(Some(e));
        }
        // A box that hedges (`\boxed{381 or 391}`, `\boxed{not 3}`) says so.
        for p in e.parts.clone() {
            let (hedge, offers) = hedge_of(p, true);
            if e.hedge.is_none() {
                e.hedge = hedge;
            }
            e.offers.extend(offers);
        }
        self.read_coda(&mut e, resume);
        Ok(Some(e))
    }
}

/// A box's content without its white space (`(1, 2)` and `(1,2)` are one answer).
fn squeezed(part: &str) -> std::borrow::Cow<'_, str> {
    if part.bytes().any(|c| c.is_ascii_whitespace()) {
        std::borrow::Cow::Owned(part.split_ascii_whitespace().collect())
    } else {
        std::borrow::Cow::Borrowed(part)
    }
}

/// Whether a box holds only a blank to fill in: nothing, white space,
/// `\phantom{…}`, `\hspace{…}`, `\quad`, `\square`, `\underline{…}` of
/// blanks, underscores or question marks.
fn is_placeholder(part: &str) -> bool {
    let b = part.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' | b'\n' | b'~' | b'_' | b'?' | b'{' | b'}' | b'.' => i += 1,
            b'\\' => {
                let mut j = i + 1;
                while j < b.len() && b[j].is_ascii_alphabetic() {
                    j += 1;
                }
                match &part[i + 1..j] {
                    // `\,`, `\ `, `\_`.
                    "" => i += 1 + part[i + 1..].chars().next().map_or(0, char::len_utf8),
                    "phantom" | "hphantom" | "vphantom" | "hspace" => {
                        i = skip_group(b, j);
                    }
                    "quad" | "qquad" | "square" | "Box" | "blacksquare" | "underline" | "text"
                    | "mbox" | "ldots" | "dots" => i = j,
                    _ => return false,
                }
            }
            _ => return false,
        }
    }
    true
}

/// The end of the brace group at `j` (or `j` when none opens there).
fn skip_group(b: &[u8], j: usize) -> usize {
    if b.get(j) != Some(&b'{') {
        return j;
    }
    let mut depth = 0usize;
    let mut k = j;
    while k < b.len() {
        match b[k] {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return k + 1;
                }
            }
            b'\\' => k += 1,
            _ => {}
        }
        k += 1;
    }
    b.len()
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
