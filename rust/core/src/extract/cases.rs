//! A table or list of cases is no answer (docs/verify_semantics.md rule 12):
//! rows or items that each give a value under a condition (`| n odd | 3 |`
//! then `| n even | 4 |`; `- if n is odd: 3` then `- if n is even: 4`) split
//! the answer by case, and the last case's value is not the answer. Rows of
//! items ending in a total, and numbered steps ending in a result, are no
//! case split: their last line states no condition.

use super::fallback::last_number;

/// Whether the value starting at `at` ends a case split: it sits in a table
/// row or list item whose words before it state a condition, and the row or
/// item before it (of the same table or list) states one too, with another
/// value.
pub(super) fn ends_case_split(text: &str, at: usize, value: &str) -> bool {
    let ls = text[..at].rfind('\n').map_or(0, |k| k + 1);
    let Some(kind) = line_kind(&text[ls..]) else {
        return false;
    };
    if !conditional(&text[ls..at]) {
        return false;
    }
    // The sibling before: skip a table's separator row.
    let mut end = ls;
    for _ in 0..2 {
        if end == 0 {
            return false;
        }
        let ps = text[..end - 1].rfind('\n').map_or(0, |k| k + 1);
        let prev = &text[ps..end - 1];
        end = ps;
        if kind == Kind::Table && is_separator(prev) {
            continue;
        }
        let Some((_, v)) = last_number(prev, 0) else {
            return false;
        };
        let label = &prev[..v.as_ptr() as usize - prev.as_ptr() as usize];
        return line_kind(prev) == Some(kind) && conditional(label) && v.trim() != value.trim();
    }
    false
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Table,
    Bullet,
    Numbered,
}

fn line_kind(line: &str) -> Option<Kind> {
    let t = line.trim_start();
    if t.starts_with('|') {
        return Some(Kind::Table);
    }
    if t.starts_with("- ") || t.starts_with("* ") || t.starts_with("+ ") || t.starts_with("• ") {
        return Some(Kind::Bullet);
    }
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    (digits > 0
        && digits < 4
        && t[digits..].starts_with([')', '.'])
        && t[digits + 1..].starts_with(' '))
    .then_some(Kind::Numbered)
}

fn is_separator(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('|') && t.bytes().all(|c| matches!(c, b'|' | b'-' | b':' | b' '))
}

/// Whether the words before a row's value state a condition: `if`, `when`,
/// `for`, `case`, `odd`, `even`, `otherwise`, ... or a relation (`n = 1`,
/// `x < 0`, `\ge`). The `=` that gives the value (`7 \times 2 = 14`) states
/// none.
fn conditional(line: &str) -> bool {
    let line = line.trim_end_matches([' ', '=', '$', '|']);
    // A list's own number is no relation: read after the marker.
    let t = line.trim_start().trim_start_matches(|c: char| {
        c.is_ascii_digit() || matches!(c, '-' | '*' | '+' | '•' | '|')
    });
    let word = t.split(|c: char| !c.is_ascii_alphabetic()).any(|w| {
        [
            "if",
            "when",
            "whenever",
            "for",
            "case",
            "cases",
            "odd",
            "even",
            "otherwise",
            "else",
            "unless",
            "le",
            "ge",
            "leq",
            "geq",
            "neq",
            "lt",
            "gt",
        ]
        .iter()
        .any(|c| w.eq_ignore_ascii_case(c))
    });
    word || t.contains(['=', '<', '>', '≤', '≥', '≠'])
}
