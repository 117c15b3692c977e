//! Around a value found without a marker: the sentence it stands in (read
//! for hedges) and the whole expression it is part of (the last number of
//! `\frac{639}{40}` is not the answer; the fraction is).

use super::fallback::number_at;

/// How far back a sentence start is looked for.
const MAX_SENTENCE: usize = 1000;

/// The sentence holding `text[start..end]`: from after the previous `. `,
/// `? `, `! `, `;` or line break (at most [`MAX_SENTENCE`] bytes back) to
/// the next one. Dots inside numbers (`3.5`) and `i.e.` end nothing.
pub(super) fn sentence_around(text: &str, start: usize, end: usize) -> (usize, usize) {
    let b = text.as_bytes();
    let e = (end..b.len())
        .find(|&i| ends_sentence(b, i))
        .unwrap_or(b.len());
    (sentence_start(text, start, MAX_SENTENCE), e.max(end))
}

/// The start of the sentence holding `text[at]`: [`sentence_around`]'s,
/// without looking for its end.
pub(super) fn sentence_of(text: &str, at: usize) -> usize {
    sentence_start(text, at, MAX_SENTENCE)
}

/// The start of the sentence holding `text[at]` ([`sentence_around`]'s),
/// looked for at most `back` bytes back: `at - back` (on a character
/// boundary) when it starts before that.
pub(super) fn sentence_start(text: &str, at: usize, back: usize) -> usize {
    let b = text.as_bytes();
    let mut s = at;
    let floor = at.saturating_sub(back);
    while s > floor && !ends_sentence(b, s - 1) {
        s -= 1;
    }
    while !text.is_char_boundary(s) {
        s += 1;
    }
    s
}

/// Whether `b[i]` ends a sentence: a line break, `;`, or `.`, `?`, `!`
/// before a space or the end (not the dot of an abbreviation or an
/// ellipsis).
fn ends_sentence(b: &[u8], i: usize) -> bool {
    match b[i] {
        b'\n' | b';' => true,
        b'.' | b'?' | b'!' => {
            b.get(i + 1).is_none_or(u8::is_ascii_whitespace)
                && !(b[i] == b'.' && (abbreviation(&b[..i]) || ellipsis(&b[..i])))
        }
        _ => false,
    }
}

/// The words of the clause before `end`: back to the last `,`, `;`, `:`,
/// sentence end or line break, at most 300 bytes.
pub(super) fn clause_before(text: &str, end: usize) -> &str {
    let b = text.as_bytes();
    let floor = end.saturating_sub(300);
    let mut s = end;
    while s > floor && !matches!(b[s - 1], b',' | b';' | b':' | b'.' | b'!' | b'?' | b'\n') {
        s -= 1;
    }
    while !text.is_char_boundary(s) {
        s += 1;
    }
    &text[s..end]
}

/// Whether a `.` ends an ellipsis (`3 ... 4`): a dot before it.
pub(super) fn ellipsis(before: &[u8]) -> bool {
    before.last() == Some(&b'.')
}

/// Whether the text before a `.` ends with an abbreviation that does not
/// end a sentence (`i.e.`, `e.g.`, `resp.`, `approx.`, `vs.`).
pub(super) fn abbreviation(before: &[u8]) -> bool {
    ["i.e", "e.g", "resp", "approx", "vs", "cf"]
        .iter()
        .any(|a| {
            before.len() >= a.len()
                && before[before.len() - a.len()..].eq_ignore_ascii_case(a.as_bytes())
                && (before.len() == a.len()
                    || !before[before.len() - a.len() - 1].is_ascii_alphabetic())
        })
}

/// The whole math expression in `text[from..]` that holds the number
/// `text[start..end]` (`\frac{639}{40}`, `(2, 4)`, `1+2i`, `x = 5`), or
/// `None` when it cannot be told whole (brackets that do not pair).
///
/// Math is numbers, single letters, LaTeX commands with their brace groups,
/// operators and brackets, with spaces between; a word, a `$`, `\text{…}`,
/// a sentence end or a line break ends it.
pub(super) fn expression_around(
    text: &str,
    from: usize,
    start: usize,
    end: usize,
) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let mut run: Option<(usize, usize)> = None;
    let mut i = from;
    while i < b.len() {
        let c = b[i];
        // A math token `[i, j)`, or a break (`None`).
        let token: Option<usize> = match c {
            b'0'..=b'9' => Some(number_at(text, i).1.max(i + 1)),
            b'\\' => {
                let mut j = i + 1;
                while j < b.len() && b[j].is_ascii_alphabetic() {
                    j += 1;
                }
                let cmd = &text[i + 1..j];
                if j == i + 1 {
                    // `\%`, `\,`, `\{`: an escaped symbol (`\\` breaks the line).
                    let next = text[i + 1..].chars().next().map_or(0, char::len_utf8);
                    (b.get(i + 1) != Some(&b'\\')).then_some(i + 1 + next)
                } else if matches!(cmd, "text" | "textbf" | "mbox" | "textit") {
                    None
                } else {
                    Some(brace_groups_end(b, j))
                }
            }
            b'{' => Some(brace_groups_end(b, i)),
            b'+' | b'-' | b'*' | b'/' | b'^' | b'_' | b'=' | b'<' | b'>' | b'(' | b')' | b'['
            | b']' | b'|' | b'\'' | b',' | b':' => Some(i + 1),
            b'!' if i > 0 && (b[i - 1].is_ascii_digit() || b[i - 1] == b')') => Some(i + 1),
            b'.' if b.get(i + 1).is_some_and(u8::is_ascii_digit) => Some(i + 1),
            b' ' | b'\t' => {
                i += 1;
                continue;
            }
            c if c.is_ascii_alphabetic() => {
                let mut j = i;
                while j < b.len()
                    && (b[j].is_ascii_alphabetic()
                        || (b[j] == b'\'' && b.get(j + 1).is_some_and(u8::is_ascii_alphabetic)))
                {
                    j += 1;
                }
                // A single letter is a variable (`1+2i`, `x = 5`); a word ends the
                // math, and so does the pronoun `I` before one (`3, I think`).
                if j > i + 1 || pronoun_i(b, i) {
                    if i >= end {
                        break;
                    }
                    run = None;
                    i = j;
                    continue;
                }
                Some(j)
            }
            c if c >= 0x80 => {
                let ch = text[i..].chars().next().unwrap_or(' ');
                let math = (ch.is_numeric() || !ch.is_alphanumeric())
                    && !matches!(ch, '…' | '“' | '”' | '’' | '‘' | '\u{a0}');
                math.then_some(i + ch.len_utf8())
            }
            _ => None,
        };
        match token {
            Some(j) => {
                run = Some((run.map_or(i, |r| r.0), j));
                i = j;
            }
            None => {
                if i >= end {
                    break;
                }
                run = None;
                i += 1;
                while !text.is_char_boundary(i) {
                    i += 1;
                }
            }
        }
    }
    let (s, e) = run.filter(|r| r.0 <= start && r.1 >= end)?;
    trim_expression(text, s, e, start, end)
}

/// The end of the brace groups starting at `j` (`{1}{2}` after `\frac`).
pub(super) fn brace_groups_end(b: &[u8], mut j: usize) -> usize {
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
    j.min(b.len())
}

/// Single letters that are units after a number (metres, grams, seconds,
/// hours, litres, kelvin, newtons, joules, watts, volts, amperes, coulombs,
/// tesla); any other letter is a variable.
const UNIT_LETTERS: &[u8] = b"mgshlLKNJWVACT";

/// `text[s..e]` without separators at its ends (`= 5,` is `5`) and
/// brackets left open or closed by the prose around it (`(which is 5)`);
/// `None` when the brackets inside do not pair or the number is cut away.
fn trim_expression(
    text: &str,
    mut s: usize,
    mut e: usize,
    start: usize,
    end: usize,
) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let sep = |c: u8| matches!(c, b',' | b':' | b'=' | b' ' | b'\t' | b'\'');
    loop {
        let before = (s, e);
        while e > s && sep(b[e - 1]) {
            e -= 1;
        }
        // A unit letter after a number (`5 m`, `10m`, `1,000.99m²`) is
        // decoration; a variable's letter is not (`10x`, `2i`, `3n`: the
        // whole expression or nothing).
        let mut u = e;
        while u > s && !b[u - 1].is_ascii() {
            u -= 1; // `²`, `³`
        }
        if u >= s + 2 && u > end && UNIT_LETTERS.contains(&b[u - 1]) {
            let before = if b[u - 2] == b' ' { u - 2 } else { u - 1 };
            if before > s && b[before - 1].is_ascii_digit() {
                e = before;
            }
        }
        while s < e && (sep(b[s]) || matches!(b[s], b'+' | b'*' | b'/' | b'^')) {
            s += 1;
        }
        // A closer with no opener inside, at the end: `5)`.
        if e > s && matches!(b[e - 1], b')' | b']') && !pairs(&b[s..e]) {
            let (open, close) = if b[e - 1] == b')' {
                (b'(', b')')
            } else {
                (b'[', b']')
            };
            let opens = b[s..e].iter().filter(|&&c| c == open).count();
            let closes = b[s..e].iter().filter(|&&c| c == close).count();
            if closes > opens {
                e -= 1;
            }
        }
        // An opener never closed, at the start: `(5`.
        if e > s && matches!(b[s], b'(' | b'[') && !pairs(&b[s..e]) {
            let (open, close) = if b[s] == b'(' {
                (b'(', b')')
            } else {
                (b'[', b']')
            };
            let opens = b[s..e].iter().filter(|&&c| c == open).count();
            let closes = b[s..e].iter().filter(|&&c| c == close).count();
            if opens > closes {
                s += 1;
            }
        }
        if (s, e) == before {
            break;
        }
    }
    // Half-open intervals (`[2, 5)`) pair a `[` with a `)`: count both kinds together.
    (s <= start && e >= end && pairs(&b[s..e])).then_some((s, e))
}

/// Whether the brackets of `b` pair up, `(` and `[` with `)` or `]` alike
/// (an interval may be half-open), and braces with braces.
fn pairs(b: &[u8]) -> bool {
    let (mut round, mut curly) = (0i64, 0i64);
    let mut k = 0;
    while k < b.len() {
        match b[k] {
            b'\\' => k += 1,
            b'(' | b'[' => round += 1,
            b')' | b']' => round -= 1,
            b'{' => curly += 1,
            b'}' => curly -= 1,
            _ => {}
        }
        if round < 0 || curly < 0 {
            return false;
        }
        k += 1;
    }
    round == 0 && curly == 0
}

/// Whether the letter at `i` is the pronoun `I`: a capital `I` standing
/// alone before a lower-case word (`3, I think that's it`), not a variable
/// or a numeral.
fn pronoun_i(b: &[u8], i: usize) -> bool {
    if b[i] != b'I' || b.get(i + 1) != Some(&b' ') {
        return false;
    }
    let word = b[i + 2..]
        .iter()
        .take_while(|c| c.is_ascii_lowercase())
        .count();
    word >= 2
}

#[cfg(test)]
mod tests {
    use super::*;

    fn around<'a>(text: &'a str, number: &str) -> Option<&'a str> {
        let start = text.rfind(number)?;
        expression_around(text, 0, start, start + number.len()).map(|(s, e)| &text[s..e])
    }

    #[test]
    fn the_whole_expression_or_nothing() {
        assert_eq!(
            around("so it is \\frac{639}{40}", "40"),
            Some("\\frac{639}{40}")
        );
        assert_eq!(around("the point is (2, 4).", "4"), Some("(2, 4)"));
        assert_eq!(around("so z = 1+2i", "2"), Some("z = 1+2i"));
        assert_eq!(around("we get 3 * 4 = 12 apples", "12"), Some("3 * 4 = 12"));
        assert_eq!(around("(which is 5)", "5"), Some("5"));
        assert_eq!(around("the total = 5,", "5"), Some("5"));
        assert_eq!(around("so 12\\% of it", "12"), Some("12\\%"));
        assert_eq!(around("the interval [2, 5)", "5"), Some("[2, 5)"));
        assert_eq!(around("so it is 5 cm", "5"), Some("5"));
        assert_eq!(around("it's 1,000.99m²", "1,000.99"), Some("1,000.99"));
        assert_eq!(around("the set {2, 3", "3"), None);
        assert_eq!(around("so -1,234.5 m", "-1,234.5"), Some("-1,234.5"));
    }

    #[test]
    fn sentences() {
        let t = "First 3. So it is 4, i.e. four. Then 5";
        let s = t.find('4').unwrap_or(0);
        let (a, b) = sentence_around(t, s, s + 1);
        assert_eq!(&t[a..b], " So it is 4, i.e. four");
        let t = "x = 3.5 here";
        assert_eq!(sentence_around(t, 4, 7), (0, t.len()));
    }
}
