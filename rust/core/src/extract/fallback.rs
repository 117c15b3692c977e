//! The no-marker rules: a bare answer, and the last bold, math span, choice
//! letter or number near the end.

use memchr::memmem;

/// Unit words that may end a bare answer after its value (the math parser
/// reads any trailing word as decoration; extraction needs to know that this
/// one is not prose).
pub(super) const UNIT_WORDS: [&str; 40] = [
    "cm", "mm", "km", "kg", "mg", "ml", "hr", "hrs", "ft", "lb", "lbs", "oz", "mi", "yd", "mph",
    "kmh", "min", "sec", "units", "unit", "meters", "metres", "meter", "inches", "inch", "feet",
    "miles", "cents", "dollars", "degrees", "seconds", "minutes", "hours", "days", "weeks",
    "months", "years", "grams", "liters", "litres",
];

/// Whether a short text is an answer rather than prose: one line, non-empty,
/// and no words but LaTeX commands and `\text{…}` contents, unless the text
/// is one word (`yes`, `x^2+2x+1`, `\frac{0}{1}`, `\text{odd}`, `1 000`).
pub(super) fn looks_like_an_answer(t: &str) -> bool {
    let b = t.as_bytes();
    // Reasoning tags (left in the text by `think: false`) are not part of an answer.
    if b.is_empty() || b.contains(&b'\n') || memmem::find(b, b"think>").is_some() {
        return false;
    }
    let mut words = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            let start = i + 1;
            let mut j = start;
            while j < b.len() && b[j].is_ascii_alphabetic() {
                j += 1;
            }
            let cmd = &t[start..j];
            i = j.max(start + 1);
            if matches!(
                cmd,
                "text" | "textbf" | "mathrm" | "mbox" | "textit" | "operatorname"
            ) && b.get(j) == Some(&b'{')
            {
                // Words inside `\text{…}` are the answer, not prose.
                i = b[j..]
                    .iter()
                    .position(|&c| c == b'}')
                    .map_or(b.len(), |k| j + k + 1);
            }
            continue;
        }
        // Letters of any script: `Итого: 5`, `Peut-être 5` are prose, not
        // variables.
        let letter = |k: usize| {
            b[k].is_ascii_alphabetic()
                || (b[k] >= 0x80 && t[k..].chars().next().is_some_and(char::is_alphabetic))
        };
        if t.is_char_boundary(i) && letter(i) {
            let start = i;
            let mut len = 0;
            let mut foreign = false;
            while i < b.len() && t.is_char_boundary(i) && letter(i) {
                let w = t[i..].chars().next().map_or(1, char::len_utf8);
                foreign |= w > 1;
                i += w;
                len += 1;
            }
            // Letters glued to symbols (`1orW(x)`, `2xy`) are math, not a word.
            let apart = |c: Option<&u8>| {
                c.is_none_or(|c| c.is_ascii_whitespace() || b".,;:!?\"'".contains(c))
            };
            // Letters of another script than the Latin alphabet are never a
            // variable's, glued or not (`Peut-être`).
            let word = foreign && len >= 2
                || apart(start.checked_sub(1).and_then(|k| b.get(k))) && apart(b.get(i));
            // A unit after a value (`2\pi cm`, `12 meters.`) is decoration.
            let unit = start > 0
                && t[i..].trim_end_matches(['.', '!']).is_empty()
                && UNIT_WORDS.contains(&t[start..i].to_ascii_lowercase().as_str());
            if len >= 2 && word && !unit {
                // A word is an answer only alone (`yes`, `odd.`).
                words += 1;
                let rest = t[..start].len() + t[i..].trim_end_matches(['.', '!']).len();
                if words > 1 || len > 12 || rest > 0 {
                    return false;
                }
            }
            continue;
        }
        i += 1;
    }
    true
}

/// The byte offset where the last `tail_len` bytes start (a char boundary).
pub(super) fn tail_start(text: &str, tail_len: usize) -> usize {
    let mut i = text.len().saturating_sub(tail_len);
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

pub(super) fn trim_value(v: &str) -> &str {
    let mut v = v.trim();
    loop {
        let before = v.len();
        v = v.trim_end_matches(['.', ',', ';', '!', ' ', '\t', '\r']);
        v = v.strip_suffix("**").unwrap_or(v);
        if v.len() == before {
            return v;
        }
    }
}

/// The last complete `**…**` pair: (end, content).
pub(super) fn last_bold(text: &str, max_len: usize) -> Option<(usize, &str)> {
    let mut open: Option<usize> = None;
    let mut last = None;
    for at in memmem::find_iter(text.as_bytes(), b"**") {
        // memmem reports non-overlapping matches, so `***` is one `**` then `*`.
        match open.take() {
            Some(o) => {
                let content = text[o..at].trim();
                if content.len() <= max_len && !content.contains('\n') {
                    last = Some((at + 2, trim_value(content)));
                }
            }
            None => open = Some(at + 2),
        }
    }
    last
}

/// The last complete `$…$`, `$$…$$`, `\(…\)` or `\[…\]` span: (end, span).
/// Delimiters are paired from the start of the text, so a `$` in the middle
/// of a span never opens a new one.
pub(super) fn last_math_span(text: &str) -> Option<(usize, &str)> {
    let bytes = text.as_bytes();
    // The closing delimiter of the open span, and where it opened.
    let mut open: Option<(&[u8], usize)> = None;
    let mut last = None;
    let mut i = 0;
    while let Some(k) = memchr::memchr2(b'$', b'\\', &bytes[i..]) {
        let at = i + k;
        let next = bytes.get(at + 1).copied();
        let (token, len): (&[u8], usize) = match (bytes[at], next) {
            (b'\\', Some(b'(')) => (b"\\(", 2),
            (b'\\', Some(b')')) => (b"\\)", 2),
            (b'\\', Some(b'[')) => (b"\\[", 2),
            (b'\\', Some(b']')) => (b"\\]", 2),
            (b'\\', Some(_)) => (b"", 2), // any other escape, `\$` included
            (b'\\', None) => (b"", 1),
            (_, Some(b'$')) => (b"$$", 2),
            _ => (b"$", 1),
        };
        i = at + len;
        match open {
            Some((close, start)) if token == close => {
                last = Some((i, text[start..i].trim()));
                open = None;
            }
            Some((b"$", start)) if token == b"$$" => {
                // `$x$$y$`: the first `$` closes, the second opens.
                last = Some((at + 1, &text[start..at + 1]));
                open = Some((b"$", at));
            }
            Some(_) => {}
            None => {
                let close: &[u8] = match token {
                    b"\\(" => b"\\)",
                    b"\\[" => b"\\]",
                    b"$$" => b"$$",
                    b"$" => b"$",
                    _ => continue,
                };
                open = Some((close, at));
            }
        }
        if i >= bytes.len() {
            break;
        }
    }
    last
}

pub(super) const CHOICES: std::ops::RangeInclusive<u8> = b'A'..=b'J';

/// The last `(X)` in the tail, or a lone capital letter ending the text
/// (`…so the best option is B.`): (end, letter). Against a gold that is a
/// letter (`letter_gold`), any capital counts (`K`), and so does one letter
/// repeated as some prompts ask (`the string would be CCCC`): the part is
/// the run, which the verifier reads as its letter; a run of different
/// letters (`ABCD`) is no choice.
pub(super) fn last_choice(text: &str, tail: usize, letter_gold: bool) -> Option<(usize, &str)> {
    let bytes = text.as_bytes();
    let is_choice = |c: u8| {
        if letter_gold {
            c.is_ascii_uppercase()
        } else {
            CHOICES.contains(&c)
        }
    };
    let mut last = None;
    let region = &bytes[tail..];
    for k in memchr::memchr_iter(b'(', region) {
        let at = tail + k;
        if bytes.get(at + 2) == Some(&b')') && is_choice(bytes[at + 1]) {
            last = Some((at + 3, &text[at + 1..at + 2]));
        }
    }
    let t = trim_value(text.trim_end_matches(['$', '*', ')', '}']));
    let end = t.as_ptr() as usize - text.as_ptr() as usize + t.len();
    if end >= 1 && end > tail && is_choice(bytes[end - 1]) {
        let letter = bytes[end - 1];
        let run = if letter_gold {
            bytes[..end]
                .iter()
                .rev()
                .take(MAX_LETTER_RUN + 1)
                .take_while(|&&c| c == letter)
                .count()
        } else {
            1
        };
        let start = end - run;
        let lone = run <= MAX_LETTER_RUN
            && (start == 0
                || !(bytes[start - 1].is_ascii_alphanumeric() || unit_before(&text[..start])));
        if lone && last.is_none_or(|(e, _)| e < end) {
            last = Some((end, &text[start..end]));
        }
    }
    last
}

/// The longest run of one letter read as that letter (`DDDDD`).
pub(crate) const MAX_LETTER_RUN: usize = 10;

/// Whether `before` ends in a degree sign (`5°`, `5^\\circ`, `5^{\\circ}`,
/// spaces allowed): a capital letter after it is a unit (`5°C`), not a
/// choice letter.
fn unit_before(before: &str) -> bool {
    let t = before.trim_end_matches([' ', '}', '{', '^', '$']);
    t.ends_with('°') || t.ends_with("\\circ") || t.ends_with('º')
}

/// The last number starting in the tail: `-1,234.5`, `3/4`, `12%`: (end, number).
pub(super) fn last_number(text: &str, tail: usize) -> Option<(usize, &str)> {
    let bytes = text.as_bytes();
    // Back up so that a number straddling the tail start is read whole.
    let mut i = tail;
    while i > 0 && (bytes[i - 1].is_ascii_digit() || matches!(bytes[i - 1], b'.' | b',')) {
        i -= 1;
    }
    let mut last = None;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        if i > 0 && bytes[i - 1].is_ascii_alphabetic() {
            // `AZYUK2A`, `x2`: part of a name, not a number.
            i = digits_end(bytes, i);
            continue;
        }
        let (start, end) = number_at(text, i);
        last = Some((end, &text[start..end]));
        i = end;
    }
    last
}

/// The number whose first digit is at `i`: (start, end), a sign, thousands
/// groups, decimals, `a/b`, a plain-text mixed number and a percent included.
pub(super) fn number_at(text: &str, i: usize) -> (usize, usize) {
    let bytes = text.as_bytes();
    let mut start = i;
    if start > 0 && bytes[start - 1] == b'-' {
        start -= 1;
    }
    let mut j = digits_end(bytes, i);
    // A mixed number `4 4/9` (plain text): integer, space, fraction.
    if bytes.get(j) == Some(&b' ') {
        let a = digits_end(bytes, j + 1);
        if a > j + 1 && bytes.get(a) == Some(&b'/') {
            let b = digits_end(bytes, a + 1);
            if b > a + 1 {
                return (start, start + percent_end(text, b, start).len());
            }
        }
    }
    // Digit groups joined by commas are read whole and the parser decides
    // what they are: thousands (`1,250`), a decimal comma (`2,74`) or a list
    // (`1,2,3`, which never answers a single-valued gold, unlike its last
    // number alone).
    while bytes.get(j) == Some(&b',') && bytes.get(j + 1).is_some_and(u8::is_ascii_digit) {
        j = digits_end(bytes, j + 1);
    }
    if bytes.get(j) == Some(&b'.') && bytes.get(j + 1).is_some_and(u8::is_ascii_digit) {
        j = digits_end(bytes, j + 1);
    }
    if bytes.get(j) == Some(&b'/') && bytes.get(j + 1).is_some_and(u8::is_ascii_digit) {
        j = digits_end(bytes, j + 1);
    }
    (start, start + percent_end(text, j, start).len())
}

/// `text[start..j]` extended over a percent sign or word after it
/// (`12%`, `12\%`, `12 percent`, `4 4/9pct`).
pub(super) fn percent_end(text: &str, j: usize, start: usize) -> &str {
    let rest = &text[j..];
    let glued = rest.trim_start_matches(' ');
    let spaces = rest.len() - glued.len();
    for (word, needs_no_space) in [
        ("%", true),
        ("\\%", true),
        ("percentage", false),
        ("percent", false),
        ("pct", false),
    ] {
        let (cand, skip) = if needs_no_space {
            (rest, 0)
        } else {
            (glued, spaces)
        };
        if skip > 1 {
            continue;
        }
        let b = cand.as_bytes();
        if b.len() >= word.len() && b[..word.len()].eq_ignore_ascii_case(word.as_bytes()) {
            let end = j + skip + word.len();
            // A word must end there (`percentage`, not `pctx`).
            if needs_no_space
                || !text
                    .as_bytes()
                    .get(end)
                    .is_some_and(u8::is_ascii_alphabetic)
            {
                return &text[start..end];
            }
        }
    }
    &text[start..j]
}

pub(super) fn digits_end(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}
