//! The tokens the hedge reader reads: values, the math between them, words,
//! and the punctuation that matters between values. One pass, linear: an
//! unclosed `$` or `\(` is remembered as unclosed, so it is looked for once.

use super::clause::brace_groups_end;
use super::fallback::{number_at, CHOICES};
use super::markers::find_close;
use super::words;

/// A byte range of the text read.
pub(super) type Span = (usize, usize);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tok<'a> {
    /// A value: a number, a `$…$` span, a LaTeX command with its groups, a
    /// choice letter, a number word, a Roman numeral or non-ASCII digits.
    /// `int` is the value of a number word or numeral (`four`, `IV`).
    Value {
        span: Span,
        int: Option<i64>,
        choice: bool,
    },
    /// Math that is no value alone: a single letter, a relation or operator command.
    Math(Span),
    /// A word of two letters or more (`i.e.` and `e.g.` are `ie` and `eg`).
    Word(&'a str, Span),
    /// `...`, `…`, `\ldots`, `\dots`, `\cdots`.
    Ellipsis(Span),
    Question(Span),
    /// A bound written as a sign after its value: `5+` (five or more) ending
    /// the text or followed by a space and a word.
    Bound(Span),
    Slash(Span),
    /// The end of a sentence or line: `. ` (or `.` at the end), `;`, a newline.
    Stop(Span),
}

pub(super) struct Tokens<'a> {
    v: &'a str,
    i: usize,
    /// Closers known to be absent from the rest (`$`, `$$`, `\)`, `\]`).
    unclosed: [bool; 4],
}

impl<'a> Tokens<'a> {
    pub(super) fn new(v: &'a str) -> Self {
        Tokens {
            v,
            i: 0,
            unclosed: [false; 4],
        }
    }

    /// The end of a delimited span opened at `i` (`open` bytes long), if it closes.
    fn span(&mut self, i: usize, open: usize, close: &str, memo: usize) -> Option<usize> {
        if self.unclosed[memo] {
            return None;
        }
        match find_close(&self.v[i + open..], close) {
            Some(k) => Some(i + open + k + close.len()),
            None => {
                self.unclosed[memo] = true;
                None
            }
        }
    }
}

/// Commands that are spacing or layout: no token.
const LAYOUT: [&str; 12] = [
    "quad",
    "qquad",
    "left",
    "right",
    "displaystyle",
    "textstyle",
    "big",
    "Big",
    "bigl",
    "bigr",
    "hline",
    "newline",
];

/// Commands that are relations or operators: math, no value alone.
const OPERATORS: [&str; 24] = [
    "le",
    "ge",
    "leq",
    "geq",
    "lt",
    "gt",
    "neq",
    "ne",
    "approx",
    "sim",
    "pm",
    "mp",
    "cdot",
    "times",
    "div",
    "to",
    "in",
    "notin",
    "cup",
    "cap",
    "implies",
    "Rightarrow",
    "rightarrow",
    "equiv",
];

const TEXT: [&str; 7] = [
    "text",
    "textbf",
    "mathrm",
    "mbox",
    "textit",
    "textnormal",
    "operatorname",
];

impl<'a> Iterator for Tokens<'a> {
    type Item = Tok<'a>;

    fn next(&mut self) -> Option<Tok<'a>> {
        let v = self.v;
        let b = v.as_bytes();
        while self.i < b.len() {
            let i = self.i;
            let c = b[i];
            let value = |end: usize| Tok::Value {
                span: (i, end),
                int: None,
                choice: false,
            };
            match c {
                b'$' => {
                    let (open, close, memo) = if b.get(i + 1) == Some(&b'$') {
                        (2, "$$", 0)
                    } else {
                        (1, "$", 1)
                    };
                    match self.span(i, open, close, memo) {
                        Some(end) => {
                            self.i = end;
                            return Some(value(end));
                        }
                        None => self.i += open,
                    }
                }
                b'\\' => {
                    let n = b.get(i + 1).copied();
                    if let Some((close, memo)) = match n {
                        Some(b'(') => Some(("\\)", 2)),
                        Some(b'[') => Some(("\\]", 3)),
                        _ => None,
                    } {
                        match self.span(i, 2, close, memo) {
                            Some(end) => {
                                self.i = end;
                                return Some(value(end));
                            }
                            None => {
                                self.i += 2;
                                continue;
                            }
                        }
                    }
                    let mut j = i + 1;
                    while j < b.len() && b[j].is_ascii_alphabetic() {
                        j += 1;
                    }
                    let cmd = &v[i + 1..j];
                    if j == i + 1 {
                        // `\$`, `\,`, `\{`: an escape, no token (`\\` is a line break).
                        self.i = i + 1 + v[i + 1..].chars().next().map_or(0, char::len_utf8);
                        if n == Some(b'\\') {
                            return Some(Tok::Stop((i, i + 2)));
                        }
                        continue;
                    }
                    if TEXT.contains(&cmd) && b.get(j) == Some(&b'{') {
                        self.i = j + 1; // the words inside are read as words
                        continue;
                    }
                    self.i = j;
                    if matches!(cmd, "ldots" | "dots" | "cdots" | "dotsc" | "dotsb") {
                        return Some(Tok::Ellipsis((i, j)));
                    }
                    if LAYOUT.contains(&cmd) {
                        continue;
                    }
                    if OPERATORS.contains(&cmd) {
                        return Some(Tok::Math((i, j)));
                    }
                    // A command and its brace groups: `\frac{1}{2}`, `\pi`.
                    let end = brace_groups_end(b, j);
                    self.i = end;
                    return Some(value(end));
                }
                b'0'..=b'9' if i == 0 || !b[i - 1].is_ascii_alphabetic() => {
                    let (start, end) = number_at(v, i);
                    self.i = end.max(i + 1);
                    return Some(Tok::Value {
                        span: (start, end),
                        int: None,
                        choice: false,
                    });
                }
                b'(' if b.get(i + 2) == Some(&b')') && CHOICES.contains(&b[i + 1]) => {
                    self.i = i + 3;
                    return Some(Tok::Value {
                        span: (i, i + 3),
                        int: None,
                        choice: true,
                    });
                }
                b'.' if b[i..].starts_with(b"...") => {
                    let mut j = i + 3;
                    while b.get(j) == Some(&b'.') {
                        j += 1;
                    }
                    self.i = j;
                    return Some(Tok::Ellipsis((i, j)));
                }
                b'.' if b.get(i + 1).is_none_or(u8::is_ascii_whitespace) => {
                    self.i = i + 1;
                    return Some(Tok::Stop((i, i + 1)));
                }
                b';' | b'\n' => {
                    self.i = i + 1;
                    return Some(Tok::Stop((i, i + 1)));
                }
                b'?' => {
                    self.i = i + 1;
                    return Some(Tok::Question((i, i + 1)));
                }
                b'/' => {
                    self.i = i + 1;
                    return Some(Tok::Slash((i, i + 1)));
                }
                b'+' if i > 0 && b[i - 1].is_ascii_digit() && bound_follows(&b[i + 1..]) => {
                    self.i = i + 1;
                    return Some(Tok::Bound((i, i + 1)));
                }
                c if c.is_ascii_alphabetic() => return Some(self.word(i)),
                c if c >= 0x80 => {
                    let ch = v[i..].chars().next().unwrap_or(' ');
                    let len = ch.len_utf8();
                    if ch == '…' {
                        self.i = i + len;
                        return Some(Tok::Ellipsis((i, i + len)));
                    }
                    if ch.is_numeric() {
                        // Full-width, Arabic-Indic, superscript digits, `½`: a value.
                        let end = v[i..]
                            .char_indices()
                            .find(|&(_, c)| !(c.is_numeric() || c.is_ascii_digit()))
                            .map_or(v.len(), |(k, _)| i + k);
                        self.i = end;
                        return Some(value(end));
                    }
                    if ch.is_alphabetic() {
                        return Some(self.word(i));
                    }
                    self.i = i + len;
                }
                _ => self.i += 1,
            }
        }
        None
    }
}

impl<'a> Tokens<'a> {
    /// The word, letter or numeral starting at `i` (a letter).
    fn word(&mut self, i: usize) -> Tok<'a> {
        let v = self.v;
        let b = v.as_bytes();
        // `i.e.` and `e.g.` (the dots would end a sentence).
        for (abbr, name) in [("i.e.", "ie"), ("e.g.", "eg")] {
            if b.len() >= i + 4
                && b[i..i + 4].eq_ignore_ascii_case(abbr.as_bytes())
                && b.get(i + 4).is_none_or(|c| !c.is_ascii_alphanumeric())
            {
                self.i = i + 4;
                return Tok::Word(name, (i, i + 4));
            }
        }
        // Letters, digits, and an apostrophe before an ASCII letter (`it's`);
        // bytes while they are ASCII, characters otherwise.
        let mut j = i;
        let mut letters = 0;
        while j < b.len() {
            let c = b[j];
            let width = if c.is_ascii_alphanumeric()
                || (c == b'\'' && b.get(j + 1).is_some_and(u8::is_ascii_alphabetic))
            {
                1
            } else if c < 0x80 {
                break;
            } else {
                match v[j..].chars().next() {
                    Some(ch) if ch.is_alphanumeric() => ch.len_utf8(),
                    _ => break,
                }
            };
            j += width;
            letters += 1;
        }
        self.i = j;
        let w = &v[i..j];
        let followed_by_word = b.get(j) == Some(&b' ')
            && b.get(j + 1)
                .is_some_and(|c| c.is_ascii_alphabetic() && b.get(j + 2) != Some(&b')'));
        if letters == 1 {
            // `a` and `I` before a word are words (`is not a valid answer`).
            if (w == "a" || w == "I") && followed_by_word {
                return Tok::Word(w, (i, j));
            }
            // Spanish and Italian `o` (`or`) between values (`5 o 6`): a word.
            let value_follows = b.get(j) == Some(&b' ')
                && b.get(j + 1)
                    .is_some_and(|c| c.is_ascii_digit() || matches!(c, b'$' | b'-' | b'\\'));
            if (w == "o" || w == "ó") && i > 0 && b[i - 1] == b' ' && value_follows {
                return Tok::Word(w, (i, j));
            }
            // A capital inside arithmetic (`A e^x + B e^{-x}`) is a
            // constant, not a choice letter.
            let before = b[..i].iter().rev().find(|&&c| c != b' ');
            let after = b[j..].iter().find(|&&c| c != b' ');
            let operator = |c: Option<&u8>| {
                c.is_some_and(|c| {
                    matches!(c, b'+' | b'-' | b'*' | b'^' | b'_' | b'=' | b'<' | b'>')
                })
            };
            if CHOICES.contains(&b[i]) && !operator(before) && !operator(after) {
                return Tok::Value {
                    span: (i, j),
                    int: None,
                    choice: true,
                };
            }
            return Tok::Math((i, j));
        }
        if let Some(n) = words::roman(w) {
            return Tok::Value {
                span: (i, j),
                int: Some(n),
                choice: false,
            };
        }
        if let Some(n) = words::number_word(w) {
            // `twenty-one`.
            if b.get(j) == Some(&b'-') {
                let k = b[j + 1..]
                    .iter()
                    .position(|c| !c.is_ascii_alphabetic())
                    .map_or(b.len(), |k| j + 1 + k);
                if let Some(n) = words::hyphenated(w, &v[j + 1..k]) {
                    self.i = k;
                    return Tok::Value {
                        span: (i, k),
                        int: Some(n),
                        choice: false,
                    };
                }
            }
            return Tok::Value {
                span: (i, j),
                int: Some(n),
                choice: false,
            };
        }
        Tok::Word(w, (i, j))
    }
}

/// Whether what follows a `+` glued to a number makes it a bound (`5+`,
/// `5+ people`, `5+.`), not an operator (`5+3`, `5 + x`, `5+\sqrt2`).
pub(super) fn bound_follows(rest: &[u8]) -> bool {
    match rest.first() {
        None => true,
        Some(b' ' | b'\t') => {
            let word = rest.iter().skip_while(|c| c.is_ascii_whitespace());
            word.take_while(|c| c.is_ascii_alphabetic()).count() >= 2
        }
        Some(c) => matches!(c, b'.' | b',' | b';' | b')' | b'$' | b'*' | b'\n' | b'}'),
    }
}
