//! Hedges: what the words of an answer say about its values (alternatives,
//! negation).

use super::fallback::{number_at, CHOICES};
use super::markers::find_close;
use super::Hedge;

/// What the words of a marker's value say about its values.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Prose<'a> {
    /// Nothing to say: read the value as usual.
    Plain,
    /// Values joined by `or`: the part of the text that holds them.
    Alternatives(&'a str),
    /// Every value is negated (`not 3`, `isn't 3 or 4`).
    Negated,
    /// Some values are negated; the last one that is not ends here.
    Upto(usize),
}

/// Words that offer the value after them as an alternative to the one
/// before, as `or` does (`3, perhaps 4`, `3, or maybe 4`); any other word
/// ends the alternatives (`3, or equivalently 6/2` answers 6/2).
pub(super) const HEDGING: [&str; 9] = [
    "maybe",
    "perhaps",
    "possibly",
    "probably",
    "likely",
    "alternatively",
    "otherwise",
    "else",
    "even",
];

/// Reads a value's values (numbers, `$…$` spans, LaTeX commands, choice
/// letters, bold) and words: `or` between values makes alternatives, `not`,
/// `never` or `…n't` before a value negates it (and the values joined to it
/// by `or`, `nor`, `and` or a comma) until another word. One pass, linear.
pub(super) fn read_prose(v: &str) -> Prose<'_> {
    #[derive(PartialEq)]
    enum Neg {
        None,
        Pending,
        Applied,
    }
    let b = v.as_bytes();
    let mut neg = Neg::None;
    let (mut any_val, mut any_negated, mut last_plain_end) = (false, false, None);
    // The run of math before an `or`: where it starts, whether it has a value.
    let mut run: Option<(usize, bool)> = None;
    let mut pending_or: Option<usize> = None; // run start, when `or` follows a value
    let mut alt: Option<(usize, usize)> = None;
    // Closers known to be absent from the rest (so unclosed openers stay linear).
    let mut unclosed = [false; 4];
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        // A value token: its end.
        let mut val_end = None;
        let mut word: Option<(usize, usize)> = None;
        match c {
            b'$' => {
                let (open, close, memo) = if b.get(i + 1) == Some(&b'$') {
                    (2, "$$", 0)
                } else {
                    (1, "$", 1)
                };
                match (!unclosed[memo])
                    .then(|| find_close(&v[i + open..], close))
                    .flatten()
                {
                    Some(k) => val_end = Some(i + open + k + close.len()),
                    None => {
                        unclosed[memo] = true;
                        i += open;
                        continue;
                    }
                }
            }
            b'\\' => {
                let n = b.get(i + 1).copied();
                if let Some((close, memo)) = match n {
                    Some(b'(') => Some(("\\)", 2)),
                    Some(b'[') => Some(("\\]", 3)),
                    _ => None,
                } {
                    match (!unclosed[memo])
                        .then(|| find_close(&v[i + 2..], close))
                        .flatten()
                    {
                        Some(k) => val_end = Some(i + 2 + k + 2),
                        None => {
                            unclosed[memo] = true;
                            i += 2;
                            continue;
                        }
                    }
                } else {
                    let mut j = i + 1;
                    while j < b.len() && b[j].is_ascii_alphabetic() {
                        j += 1;
                    }
                    let cmd = &v[i + 1..j];
                    if j == i + 1 {
                        i += 2; // `\$`, `\,`, `\{`: an escape, no value
                        continue;
                    }
                    if matches!(cmd, "text" | "textbf" | "mathrm" | "mbox" | "textit")
                        && b.get(j) == Some(&b'{')
                    {
                        i = j + 1; // the words inside are read as words
                        continue;
                    }
                    // A command and its brace groups: `\frac{1}{2}`, `\pi`.
                    while b.get(j) == Some(&b'{') {
                        let mut depth = 0usize;
                        while j < b.len() {
                            match b[j] {
                                b'{' => depth += 1,
                                b'}' => {
                                    depth -= 1;
                                    if depth == 0 {
                                        j += 1;
                                        break;
                                    }
                                }
                                b'\\' => j += 1,
                                _ => {}
                            }
                            j += 1;
                        }
                    }
                    val_end = Some(j.min(b.len()));
                }
            }
            b'0'..=b'9' if i == 0 || !b[i - 1].is_ascii_alphabetic() => {
                val_end = Some(number_at(v, i).1);
            }
            b'(' if b.get(i + 2) == Some(&b')') && CHOICES.contains(&b[i + 1]) => {
                val_end = Some(i + 3);
            }
            b'*' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                continue;
            }
            c if c.is_ascii_alphabetic() => {
                let mut j = i;
                while j < b.len()
                    && (b[j].is_ascii_alphanumeric()
                        || (b[j] == b'\'' && b.get(j + 1).is_some_and(u8::is_ascii_alphabetic)))
                {
                    j += 1;
                }
                word = Some((i, j));
            }
            _ => {
                i += 1;
                continue;
            }
        }
        if let Some((ws, we)) = word {
            let w = &v.as_bytes()[ws..we];
            let is = |s: &str| w.eq_ignore_ascii_case(s.as_bytes());
            let single = we - ws == 1;
            let bounded = b.get(we).is_none_or(|c| !c.is_ascii_alphabetic());
            if single && bounded && CHOICES.contains(&b[ws]) {
                val_end = Some(we); // a choice letter
            } else if single {
                // A variable (`x = 2 or x = -2`): math, part of the run.
                run.get_or_insert((ws, false));
                i = we;
                continue;
            } else {
                let negation = is("not")
                    || is("never")
                    || (w.len() >= 3 && w[w.len() - 3..].eq_ignore_ascii_case(b"n't"));
                if negation {
                    neg = Neg::Pending;
                } else if is("or") || is("nor") || HEDGING.iter().any(|h| is(h)) {
                    // `3 or 4`, `3, or maybe 4`, `3 (possibly 4)`.
                    if let Some((start, true)) = run {
                        pending_or = Some(alt.map_or(start, |(s, _)| s));
                    }
                } else if !is("and") {
                    if neg == Neg::Applied {
                        neg = Neg::None;
                    }
                    run = None;
                    pending_or = None;
                }
                i = we;
                continue;
            }
        }
        let Some(end) = val_end else {
            i += 1;
            continue;
        };
        let start = i;
        any_val = true;
        if neg != Neg::None {
            neg = Neg::Applied;
            any_negated = true;
        } else {
            last_plain_end = Some(end);
        }
        let run_start = run.map_or(start, |(s, _)| s);
        run = Some((run_start, true));
        if let Some(from) = pending_or {
            alt = Some((from, end));
        }
        i = end.max(i + 1);
    }
    match (any_val, any_negated, alt) {
        (true, true, _) if last_plain_end.is_none() => Prose::Negated,
        (_, true, Some(_)) => Prose::Negated,
        (_, false, Some((s, e))) => Prose::Alternatives(v[s..e].trim()),
        (_, true, None) => last_plain_end.map_or(Prose::Negated, Prose::Upto),
        _ => Prose::Plain,
    }
}

/// Whether one extracted part hedges.
pub(super) fn hedge_of(part: &str) -> Option<Hedge> {
    match read_prose(part) {
        Prose::Alternatives(_) => Some(Hedge::Alternatives),
        Prose::Negated => Some(Hedge::Negated),
        Prose::Plain | Prose::Upto(_) => None,
    }
}
