//! Whether the words around an extracted answer take it back.
//!
//! The choice and exact-match rewards compare one extracted string, so the
//! words the extraction left out decide whether it is an answer at all:
//! `A and C` cut to `C`, `C or D`, `(B) and (D)`, `not C`, `maybe C`, `C?`,
//! `C, or maybe D`. [`hedged`] reads the answer's own line on both sides of
//! it, token by token, and stops at the first ordinary word, so prose that
//! merely continues (`C, and the response should be...`, `C. Options A and B
//! are wrong`, `(C) 4.2 m`) leaves the answer alone.
//!
//! The rule (documented with `grpo_fast.rewards.ChoiceReward`; the verifier's
//! own extraction applies its hedge rules before this):
//! - before the answer: a negation (`not`, `never`, `…n't`, `neither`,
//!   `except`), a hedge (`maybe`, `perhaps`, `possibly`, `either`) or a joining
//!   word or sign (`and`, `or`, `nor`, `/`, `&`, `|`) right before it voids it;
//!   so does another option letter joined to it by a comma (`A, C`);
//! - after the answer: a `?`, an alternative (`or`, `nor`, `/`, `|`) or a
//!   hedge (`maybe`, `perhaps`, `possibly`, `alternatively`) voids it, at
//!   once or after a comma or `and`; so does another option letter after a
//!   comma, `and` or `&` (`C and D`, `C, D`).
//!
//! Linear in the window read (at most [`WINDOW`] bytes on each side).

/// Bytes of the answer's line read on each side of it.
const WINDOW: usize = 200;

/// One token of the statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    /// Says nothing: spaces, brackets, `$`, `**`, `\boxed`, `\text`, `.`, `:`.
    Filler,
    /// Joins values. `alt`: offers an alternative (`or`, `nor`, `/`, `|`);
    /// else lists them (`and`, `,`, `;`, `&`). `comma`: a `,` or `;`.
    Join { alt: bool, comma: bool },
    /// `maybe`, `perhaps`, `possibly`, `probably`, `alternatively`, `either`.
    Hedge,
    /// `not`, `never`, `…n't`, `neither`, `except`, `\neg`.
    Negation,
    /// `?`
    Question,
    /// An option letter, upper-cased: `C`, `(c)`, `\text{D}`.
    Letter(u8),
    /// Anything else: a word, a number, a symbol.
    Word,
}

/// Whether the statement around the answer `text[start..end]` hedges it.
/// `letter` is the answer's option letter when it is one (the scan then also
/// looks for competing letters).
pub fn hedged(text: &str, start: usize, end: usize, letter: Option<u8>) -> bool {
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
    let from = floor_boundary(text, line_start.max(start.saturating_sub(WINDOW)));
    let to = ceil_boundary(text, line_end.min(end.saturating_add(WINDOW)));
    let before = tokens(&text[from..start]);
    let after = tokens(&text[end..to]);
    hedged_before(&before, letter) || hedged_after(&after, letter)
}

fn hedged_before(before: &[Tok], letter: Option<u8>) -> bool {
    let mut seen_comma = false;
    for &t in before.iter().rev() {
        match t {
            Tok::Filler => continue,
            Tok::Negation | Tok::Hedge => return !seen_comma,
            Tok::Join { comma: false, .. } => return !seen_comma,
            Tok::Join { comma: true, .. } if !seen_comma => seen_comma = true,
            Tok::Letter(m) => return seen_comma && letter.is_some_and(|l| l != m),
            _ => return false,
        }
    }
    false
}

fn hedged_after(after: &[Tok], letter: Option<u8>) -> bool {
    let mut listed = false;
    for &t in after {
        match t {
            Tok::Filler => continue,
            Tok::Question | Tok::Hedge | Tok::Join { alt: true, .. } => return true,
            Tok::Join { alt: false, .. } => listed = true,
            Tok::Letter(m) => return listed && letter.is_some_and(|l| l != m),
            Tok::Negation | Tok::Word => return false,
        }
    }
    false
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// LaTeX commands that only wrap or space their argument.
const WRAPPERS: [&str; 17] = [
    "boxed",
    "fbox",
    "text",
    "textbf",
    "textit",
    "textrm",
    "mathrm",
    "mathbf",
    "mbox",
    "emph",
    "underline",
    "left",
    "right",
    "quad",
    "qquad",
    "displaystyle",
    "bf",
];

fn word_tok(w: &str) -> Tok {
    let is = |s: &str| w.eq_ignore_ascii_case(s);
    if is("or") || is("nor") {
        Tok::Join {
            alt: true,
            comma: false,
        }
    } else if is("and") {
        Tok::Join {
            alt: false,
            comma: false,
        }
    } else if [
        "maybe",
        "perhaps",
        "possibly",
        "probably",
        "alternatively",
        "either",
    ]
    .iter()
    .any(|h| is(h))
    {
        Tok::Hedge
    } else if ["not", "never", "neither", "except"].iter().any(|n| is(n))
        || (w.len() > 3 && w[w.len() - 3..].eq_ignore_ascii_case("n't"))
    {
        Tok::Negation
    } else {
        Tok::Word
    }
}

/// Whether a single letter at `s[at]` is a word rather than an option: an
/// abbreviation (`i.e.`, `e.g.`), a variable (`x = 3`, `n^2`), or `I`, `A`
/// and lower-case letters followed by a lower-case word (`I think`, `a
/// dog`) other than a joining one (`a or b`).
fn letter_is_word(s: &str, at: usize) -> bool {
    let c = s.as_bytes()[at];
    let rest = &s[at + 1..];
    let rb = rest.as_bytes();
    if rb.first() == Some(&b'.') && rb.get(1).is_some_and(u8::is_ascii_alphabetic) {
        return true; // `i.e.`, `e.g.`, `U.S.`
    }
    let next = rest.trim_start_matches([' ', '\t']);
    if next.starts_with(['=', '+', '*', '^', '_']) {
        return true;
    }
    if c.is_ascii_uppercase() && c != b'I' && c != b'A' {
        return false;
    }
    if next.len() == rest.len() {
        return false; // not followed by a space
    }
    let w_end = next
        .find(|ch: char| !ch.is_ascii_alphabetic())
        .unwrap_or(next.len());
    let w = &next[..w_end];
    w.starts_with(|ch: char| ch.is_ascii_lowercase())
        && !matches!(word_tok(w), Tok::Join { .. } | Tok::Hedge)
}

fn tokens(s: &str) -> Vec<Tok> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let (tok, next) = match c {
            b'\\' => {
                let mut j = i + 1;
                while j < b.len() && b[j].is_ascii_alphabetic() {
                    j += 1;
                }
                let cmd = &s[i + 1..j];
                if cmd.is_empty() {
                    // `\,`, `\{`, `\(`, `\$`, `\\`; `\&` joins.
                    let esc = b.get(i + 1).copied();
                    let tok = if esc == Some(b'&') {
                        Tok::Join {
                            alt: false,
                            comma: false,
                        }
                    } else {
                        Tok::Filler
                    };
                    // Past the escaped character whole (`\À` is two bytes
                    // after the backslash).
                    let width = s[i + 1..].chars().next().map_or(0, char::len_utf8);
                    (tok, i + 1 + width)
                } else {
                    let tok = match cmd {
                        "lor" | "vee" => Tok::Join {
                            alt: true,
                            comma: false,
                        },
                        "land" | "wedge" => Tok::Join {
                            alt: false,
                            comma: false,
                        },
                        "neg" | "lnot" | "not" => Tok::Negation,
                        _ if WRAPPERS.contains(&cmd) => Tok::Filler,
                        _ => Tok::Word,
                    };
                    (tok, j)
                }
            }
            b',' | b';' => (
                Tok::Join {
                    alt: false,
                    comma: true,
                },
                i + 1,
            ),
            b'&' => (
                Tok::Join {
                    alt: false,
                    comma: false,
                },
                i + 1,
            ),
            b'/' | b'|' => (
                Tok::Join {
                    alt: true,
                    comma: false,
                },
                i + 1,
            ),
            b'?' => (Tok::Question, i + 1),
            b'<' => (Tok::Filler, i + tag_len(&b[i..]).unwrap_or(1)),
            c if c.is_ascii_alphanumeric() => {
                let mut j = i;
                while j < b.len()
                    && (b[j].is_ascii_alphanumeric()
                        || (b[j] == b'\'' && b.get(j + 1).is_some_and(u8::is_ascii_alphabetic)))
                {
                    j += 1;
                }
                let tok = if j == i + 1 && c.is_ascii_alphabetic() && !letter_is_word(s, i) {
                    Tok::Letter(c.to_ascii_uppercase())
                } else {
                    word_tok(&s[i..j])
                };
                (tok, j)
            }
            c if c.is_ascii() => {
                let tok = if c.is_ascii_whitespace() || b"{}()[]$*\"'`.:!-_~#<>=".contains(&c) {
                    Tok::Filler
                } else {
                    Tok::Word
                };
                (tok, i + 1)
            }
            _ => {
                let ch = s[i..].chars().next().unwrap_or(' ');
                let tok = match ch {
                    '，' | '、' | '；' => Tok::Join {
                        alt: false,
                        comma: true,
                    },
                    '？' => Tok::Question,
                    '（' | '）' | '【' | '】' | '：' | '。' => Tok::Filler,
                    ch if ch.is_whitespace() || ('\u{2010}'..='\u{2027}').contains(&ch) => {
                        Tok::Filler
                    }
                    _ => Tok::Word,
                };
                (tok, i + ch.len_utf8())
            }
        };
        out.push(tok);
        i = next;
    }
    out
}

/// The length of a tag such as `</answer>` or `<|im_end|>` at the start of `b`.
fn tag_len(b: &[u8]) -> Option<usize> {
    let close = b.iter().take(64).position(|&c| c == b'>')?;
    let inner = &b[1..close];
    let name = inner.strip_prefix(b"/").unwrap_or(inner);
    let ok = !name.is_empty()
        && name
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'|' | b'-'));
    ok.then_some(close + 1)
}

/// Where `part` lies in `text` (`None` when it is not a slice of it).
pub fn offset_in(text: &str, part: &str) -> Option<usize> {
    let start = (part.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    (start + part.len() <= text.len() && text.is_char_boundary(start)).then_some(start)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Found by hypothesis (tests/test_rewards.py): a backslash before a
    // character of two or more bytes stepped into the middle of it.
    #[test]
    fn a_backslash_before_a_multibyte_character_is_read_past_it() {
        for text in [
            "0A\u{c0}\\\u{80}",
            "\\\u{e9}",
            "\\\u{7b54}5",
            "C \\\u{1f600}",
        ] {
            let t = tokens(text);
            assert!(!t.is_empty(), "{text:?}");
        }
    }

    /// Whether the statement hedges the letter `C` (the first standalone one
    /// after the marker `|`).
    fn hedges_c(line: &str) -> bool {
        let text = line.replace('|', "");
        let at = line.find('|').expect("marker");
        let c = at + text[at..].find('C').expect("C");
        hedged(&text, c, c + 1, Some(b'C'))
    }

    #[test]
    fn alternatives_negations_and_hedges_void_the_letter() {
        for line in [
            "The answer is |not C",
            "The answer is A and |C",
            "The answer is A, |C",
            "The answer is (A) and (|C)",
            "The answer is A/|C",
            "The answer is either A or |C",
            "The answer is |C or D",
            "The answer is |C, or maybe D",
            "The answer is |C. Or maybe D.",
            "The answer is |C and D",
            "The answer is |C & D",
            "The answer is |C, D",
            "The answer is |C (or D)",
            "The answer is |C?",
            "The answer is maybe |C",
            "It isn't |C",
            "\\boxed{|C} or D",
            "\\boxed{|C \\text{ or } D}",
            "The answer is |C \\lor D",
            "The answers are |C、D",
        ] {
            assert!(hedges_c(line), "{line}");
        }
    }

    #[test]
    fn prose_that_continues_leaves_the_letter_alone() {
        for line in [
            "The answer is |C",
            "Answer: (|C) 4.2 m",
            "The answer is |C, and the response should be brief",
            "The answer is |C. Options A and B are wrong.",
            "The answer is |C. I hope it is correct.",
            "The answer is |C, not D",
            "The answer is |C (not D)",
            "So A is out, and the answer is |C",
            "Neither A nor B; the answer is |C",
            "**Final Answer**: |C",
            "\\boxed{\\text{(|C)}}",
            "The answer is |C because a cube has six faces",
            "The answer is |C, i.e. three",
            "The answer is |C, e.g. the third one",
            "The answer is |C, since x = 3",
            "The answer is |C.\nOr maybe D.",
            "Or D? No.\nThe answer is |C",
            "<answer>|C</answer>",
            "The answer is |C<|im_end|>",
        ] {
            assert!(!hedges_c(line), "{line}");
        }
    }

    #[test]
    fn without_a_letter_only_words_decide() {
        let t = "The answer is Paris, or maybe London";
        let at = t.find("Paris").expect("found");
        assert!(hedged(t, at, at + 5, None));
        let t = "The answer is Paris, and London is second";
        let at = t.find("Paris").expect("found");
        assert!(!hedged(t, at, at + 5, None));
        let t = "The capital: Paris and London";
        let at = t.find("London").expect("found");
        assert!(hedged(t, at, at + 6, None));
    }

    #[test]
    fn windows_cut_inside_characters_and_offsets() {
        let t = format!("{}é C or D", "é".repeat(150));
        let c = t.find(" C").expect("found") + 1;
        assert!(hedged(&t, c, c + 1, Some(b'C')));
        let long = format!("C{}", " and".repeat(10_000));
        assert!(
            !hedged(&long, 0, 1, Some(b'C')),
            "no letter within the window"
        );
        assert_eq!(offset_in(&t, &t[c..c + 1]), Some(c));
        assert_eq!(offset_in(&t, "C"), None);
    }
}
