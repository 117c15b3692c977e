//! Answers that are not mathematics: text of several words, compared whole,
//! and choice letters as models write them (`\boxed{c}`, `DDDDD`, `(C) 4.2 m`).

/// A gold of more words than this is a sentence, not an answer.
pub(super) const MAX_ANSWER_WORDS: usize = 6;

/// The verdict of every completion against a gold that is prose.
pub(super) const UNSCORABLE_PROSE: &str =
    "unscorable gold: prose, not an answer (a text answer is at most 6 words)";

/// Wrappers around an answer that do not change it.
const WRAPPERS: [(&str, &str); 6] = [
    ("$", "$"),
    ("\\(", "\\)"),
    ("**", "**"),
    ("\\text{", "}"),
    ("\\textbf{", "}"),
    ("\\mathrm{", "}"),
];

fn unwrap(mut s: &str) -> &str {
    loop {
        let before = s.len();
        s = s.trim().trim_end_matches(['.', '!']).trim_end();
        for (open, close) in WRAPPERS {
            if let Some(inner) = s.strip_prefix(open).and_then(|r| r.strip_suffix(close)) {
                s = inner;
            }
        }
        if s.len() == before {
            return s;
        }
    }
}

/// The normalised text of an answer that is several words (`New York`,
/// `\text{all odd positive integers}`, `no solution`): lower case, single
/// spaces, `\text{}` and trailing punctuation gone. `None` for anything
/// with digits or mathematics in it, for one word, or for single letters
/// (`x y`), which the math engine reads.
pub(super) fn prose_words(part: &str) -> Option<String> {
    if part.len() > 400 {
        return None;
    }
    // `\text{New} \text{York}`: the commands go, their contents stay.
    let mut plain = String::with_capacity(part.len());
    let b = part.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            let j = b[i + 1..]
                .iter()
                .position(|c| !c.is_ascii_alphabetic())
                .map_or(b.len(), |k| i + 1 + k);
            match &part[i + 1..j] {
                "text" | "textbf" | "mathrm" | "mbox" | "textit" | "textnormal"
                    if b.get(j) == Some(&b'{') =>
                {
                    i = j + 1;
                }
                "" if b.get(i + 1) == Some(&b' ') => {
                    plain.push(' ');
                    i += 2;
                }
                _ => return None,
            }
            continue;
        }
        let c = part[i..].chars().next()?;
        match c {
            '{' | '}' | '$' | '*' => plain.push(' '),
            '~' => plain.push(' '),
            c if c.is_alphabetic() || c.is_whitespace() || matches!(c, '-' | '\'' | ',') => {
                plain.push(c);
            }
            '.' | '!' => plain.push(' '),
            _ => return None,
        }
        i += c.len_utf8();
    }
    let words: Vec<String> = plain
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty() && *w != "-")
        .map(str::to_lowercase)
        .collect();
    let long = words.iter().any(|w| w.chars().count() >= 3);
    (words.len() >= 2 && long).then(|| words.join(" "))
}

/// How many words of two letters or more a text has outside LaTeX command
/// names (`the red one` has 3, `x^2 + 1` none).
pub(super) fn prose_word_count(part: &str) -> usize {
    let b = part.as_bytes();
    let mut n = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_alphabetic() {
            let start = i;
            while i < b.len() && b[i].is_ascii_alphabetic() {
                i += 1;
            }
            let command = start > 0 && b[start - 1] == b'\\';
            if i - start >= 2 && !command {
                n += 1;
            }
        } else {
            i += 1;
        }
    }
    n
}

/// A gold that is one capital letter is a choice letter (`C`, and `K` of a
/// longer option list).
const CHOICES: std::ops::RangeInclusive<char> = 'A'..='Z';

/// The letters that label an option's text against a gold value (`(C) 42`).
const LABELS: std::ops::RangeInclusive<char> = 'A'..='J';

/// The letter of a gold that is a choice: `C`, `(C)`, `C.`, `C)`,
/// `\text{(C)}`, `$C$` (upper case, A to Z).
pub(super) fn gold_choice(part: &str) -> Option<char> {
    let s = unwrap(part);
    let s = s
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or(s);
    let s = s.strip_suffix([')', ':']).unwrap_or(s);
    let mut chars = s.chars();
    let c = chars.next()?;
    (chars.next().is_none() && CHOICES.contains(&c)).then_some(c)
}

/// The choice letter a completion's answer names, in any case: `C`, `c`,
/// `(c)`, `DDDDD` (a letter repeated, as some prompts ask), `(C) 4.2 m` and
/// `C) 42` (the letter with its option's text), `F, and ...`. `None`
/// when it names none (`CD`, `42`, `a cat`).
pub(super) fn pred_choice(part: &str) -> Option<char> {
    let s = unwrap(part);
    let b = s.as_bytes();
    let upper = |c: u8| c.to_ascii_uppercase() as char;
    let is_choice = |c: u8| CHOICES.contains(&upper(c));
    // `(C)…`.
    if b.len() >= 3 && b[0] == b'(' && b[2] == b')' && is_choice(b[1]) {
        return Some(upper(b[1]));
    }
    let first = *b.first()?;
    if !is_choice(first) {
        return None;
    }
    // `DDDDD`: one letter, repeated.
    let run = b
        .iter()
        .take_while(|c| c.eq_ignore_ascii_case(&first))
        .count();
    if run == b.len() && run <= crate::extract::MAX_LETTER_RUN {
        return Some(upper(first));
    }
    // `C) 42`, `C. 42`, `C: 42`, `F, and ...`; an upper-case letter before
    // a space (`C 42`), not a lower-case one (`a cat`).
    let next = b[1];
    let labelled =
        matches!(next, b')' | b'.' | b':' | b',') || (next == b' ' && first.is_ascii_uppercase());
    (run == 1 && labelled).then_some(upper(first))
}

/// The option text after a choice label (`(C) 42` → `42`, `C) 4.2 m` →
/// `4.2 m`), which answers a gold value as the letter answers a gold letter.
pub(super) fn after_choice_label(part: &str) -> Option<&str> {
    let s = unwrap(part);
    let b = s.as_bytes();
    let label = if b.len() >= 3 && b[0] == b'(' && b[2] == b')' {
        3
    } else if b.len() >= 2 && matches!(b[1], b')' | b'.' | b':') {
        2
    } else {
        return None;
    };
    let letter = if label == 3 { b[1] } else { b[0] };
    if !LABELS.contains(&(letter as char)) {
        return None;
    }
    let rest = s[label..].trim_start_matches([' ', ':']).trim();
    (!rest.is_empty()).then_some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_compared_whole() {
        assert_eq!(prose_words("New York").as_deref(), Some("new york"));
        assert_eq!(
            prose_words("\\text{All odd positive integers.}").as_deref(),
            Some("all odd positive integers")
        );
        assert_eq!(
            prose_words("\\text{New} \\text{York}").as_deref(),
            Some("new york")
        );
        for not in [
            "Paris",
            "x y",
            "5 apples",
            "x = 2",
            "\\frac{1}{2}",
            "a b",
            "",
        ] {
            assert_eq!(prose_words(not), None, "{not}");
        }
        assert_eq!(prose_word_count("the red one"), 3);
        assert_eq!(prose_word_count("\\frac{x}{2} + \\sqrt{y}"), 0);
    }

    #[test]
    fn choice_letters_as_models_write_them() {
        for (s, want) in [
            ("C", Some('C')),
            ("c", Some('C')),
            ("(c)", Some('C')),
            ("DDDDD", Some('D')),
            ("(C) 4.2 m", Some('C')),
            ("C) 42", Some('C')),
            ("F, and the response", Some('F')),
            ("\\text{(B)}", Some('B')),
            ("CD", None),
            ("42", None),
            ("a cat", None),
            ("K", Some('K')),
            ("KKKKK", Some('K')),
            ("ccccc", Some('C')),
            ("ABCD", None),
            ("CCCCCCCCCCC", None),
            ("k", Some('K')),
        ] {
            assert_eq!(pred_choice(s), want, "{s:?}");
        }
        assert_eq!(gold_choice("(C)"), Some('C'));
        assert_eq!(gold_choice("c"), None);
        assert_eq!(gold_choice("C) 42"), None);
        assert_eq!(after_choice_label("(C) 4.2 m"), Some("4.2 m"));
        assert_eq!(after_choice_label("C. 42"), Some("42"));
        assert_eq!(after_choice_label("42"), None);
    }
}
