//! A table or list of cases is no answer (docs/verify_semantics.md rule 12):
//! rows or items that each give a value under a condition (`| n odd | 3 |`
//! then `| n even | 4 |`; `- if n is odd: 3` then `- if n is even: 4`) split
//! the answer by case, and the last case's value is not the answer. Rows of
//! items ending in a total, and numbered steps ending in a result, are no
//! case split: their last line states no condition.

use super::clause::sentence_of;
use super::fallback::last_number;
use super::markers::marker_value;
use super::tokens::{Tok, Tokens};

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

/// How far before an answer statement the one before it may end to be
/// read as another case of the same split.
const CASE_REACH: usize = 400;

/// Whether the answer stated by the marker whose value starts at `end`
/// (`the answer is`, `Answer:`) is one case of several in prose: another
/// answer statement ends shortly before it with another value, nothing
/// between them takes that one back (`not`, `wait`, `?`, ...), and its own
/// lead states a case (`For odd n the answer is 6`, `If x < 0, ...`,
/// `Otherwise, ...`, `In the second case, ...`) or both leads state a
/// condition (`If the triangle is acute, the answer is 5. If it is obtuse,
/// the answer is 6.`). `statements`: the completion's answer markers as
/// (start, end), in order.
pub(super) fn answers_another_case(
    text: &str,
    statements: &[(usize, usize)],
    end: usize,
    value: &str,
) -> bool {
    let Some(i) = statements.iter().rposition(|s| s.1 == end) else {
        return false;
    };
    let Some(&(prev_start, prev)) = i.checked_sub(1).and_then(|k| statements.get(k)) else {
        return false;
    };
    let start = statements[i].0;
    if prev > start || start - prev > CASE_REACH {
        return false;
    }
    let Some(before) = marker_value(text, prev) else {
        return false;
    };
    let prev_value = first_value(before.value);
    if prev_value == first_value(value) {
        return false; // the same answer stated again
    }
    // `the answer is not 5`, `5? No wait.`: read from the marker, and after
    // the value only what follows it directly or corrects it.
    let value_end = prev_value.as_ptr() as usize - text.as_ptr() as usize + prev_value.len();
    if value_end <= start && takes_back(&text[prev..value_end], &text[value_end..start]) {
        return false;
    }
    // Each lead: from its sentence's start, or from the statement before
    // when that is in the same sentence (`For n = 1 the answer is 5 and
    // for n = 2 the answer is 6`).
    let sentence = sentence_of(text, start);
    let lead = &text[sentence.max(prev)..start];
    let prev_sentence = sentence_of(text, prev_start);
    let prev_lead = &text[prev_sentence..prev_start];
    states_a_case(lead) || (has_condition(lead) && has_condition(prev_lead))
}

/// Whether the last value of a completion without a marker, starting at
/// `at`, ends values given case by case in prose: its lead names a case
/// and so does the lead of the value before it, in the same sentence
/// (`If n is even we get 5, and if n is odd we get 6.`) or in the sentence
/// before (`For n even: 5. For n odd: 6.`), with another value and nothing
/// taking that one back. Stricter than [`answers_another_case`]: two
/// conditions alone (`If we add 2 and 3 we get 5, and if we double it we
/// get 10.`) are a derivation, not cases.
pub(super) fn ends_prose_cases(text: &str, at: usize, value: &str) -> bool {
    let sentence = sentence_of(text, at);
    let mut floor = at.saturating_sub(CASE_REACH);
    while !text.is_char_boundary(floor) {
        floor += 1;
    }
    // The value before: in this sentence, else before it.
    for from in [sentence.max(floor), floor] {
        let upto = if from == floor && sentence > floor {
            sentence
        } else {
            at
        };
        let Some((prev_end, prev)) = last_number(&text[from..upto], 0) else {
            continue;
        };
        let prev_end = from + prev_end;
        let prev_at = prev_end - prev.len();
        let prev_sentence = sentence_of(text, prev_at);
        let prev_lead = &text[prev_sentence.max(from)..prev_at];
        let lead = &text[sentence.max(prev_end)..at];
        if prev.trim() != value.trim()
            && !takes_back("", &text[prev_end..at])
            && states_a_case(lead)
            && states_a_case(prev_lead)
        {
            return true;
        }
    }
    false
}

/// Whether an answer statement is taken back or questioned: a negation
/// between its marker and its value (`the answer is not 5`), or after the
/// value a question mark, a negation opening the next sentence (`5? No
/// wait.`, `5. No, ...`) or a correction word anywhere (`wait`, `actually`,
/// `wrong`, ...). A negation in the value's clause or later (`5, not 7.`,
/// `5, no doubt.`) takes nothing back.
fn takes_back(before_value: &str, after_value: &str) -> bool {
    fn words(t: &str) -> impl Iterator<Item = &str> {
        t.split(|c: char| !c.is_ascii_alphabetic())
            .filter(|w| !w.is_empty())
    }
    let is = |w: &str, list: &[&str]| list.iter().any(|c| w.eq_ignore_ascii_case(c));
    const NEGATIONS: [&str; 3] = ["not", "no", "isn"];
    const CORRECTIONS: [&str; 11] = [
        "wait",
        "actually",
        "wrong",
        "mistake",
        "incorrect",
        "oops",
        "sorry",
        "correction",
        "recheck",
        "scratch",
        "disregard",
    ];
    let after = after_value.trim_start_matches([' ', '$', '*', '}', ')']);
    // A negation opening the next sentence answers the value (`5. No, ...`);
    // one in its clause contrasts another (`5, not 7`).
    let next_sentence = after
        .strip_prefix(['.', '!', '\n'])
        .is_some_and(|t| words(t).next().is_some_and(|w| is(w, &NEGATIONS)));
    words(before_value).any(|w| is(w, &NEGATIONS))
        || after.starts_with('?')
        || next_sentence
        || words(after).any(|w| is(w, &CORRECTIONS))
}

/// Words that open a condition.
const CONDITIONS: [&str; 8] = [
    "if", "for", "when", "whenever", "unless", "assuming", "suppose", "given",
];

fn has_condition(lead: &str) -> bool {
    lead.split(|c: char| !c.is_ascii_alphabetic())
        .any(|w| CONDITIONS.iter().any(|c| w.eq_ignore_ascii_case(c)))
}

/// The first value of a marker's text (`5` of `5 and for n = 2 ...`).
fn first_value(v: &str) -> &str {
    Tokens::new(v)
        .find_map(|t| match t {
            Tok::Value { span, .. } | Tok::Math(span) => Some(&v[span.0..span.1]),
            _ => None,
        })
        .unwrap_or(v)
        .trim()
}

/// Whether the words before an answer statement name one case of several:
/// `otherwise`, `else`; an ordinal or numbered case (`in the second case`,
/// `Case 2:`); or a condition word (`if`, `for`, `when`, `unless`,
/// `assuming`, `suppose`, `given`) followed by a case word (`odd`, `even`,
/// `negative`, `positive`, `zero`, `prime`, ...) or a relation (`n = 1`,
/// `x > 0`, `\le`). `Since n is odd` states a fact, no case.
fn states_a_case(lead: &str) -> bool {
    let words: Vec<&str> = lead
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| !w.is_empty())
        .collect();
    let is = |w: &str, list: &[&str]| list.iter().any(|c| w.eq_ignore_ascii_case(c));
    if words.iter().any(|w| is(w, &["otherwise", "else"])) {
        return true;
    }
    const ORDINALS: [&str; 8] = [
        "first", "second", "third", "fourth", "last", "other", "former", "latter",
    ];
    for (k, w) in words.iter().enumerate() {
        if is(w, &["case"]) {
            let after = &lead[w.as_ptr() as usize - lead.as_ptr() as usize + w.len()..];
            let numbered = after
                .trim_start()
                .starts_with(|c: char| c.is_ascii_digit() || matches!(c, 'I' | 'V' | 'X'));
            if numbered || (k > 0 && is(words[k - 1], &ORDINALS)) {
                return true;
            }
        }
    }
    const CASE_WORDS: [&str; 10] = [
        "odd",
        "even",
        "negative",
        "positive",
        "nonnegative",
        "nonpositive",
        "zero",
        "nonzero",
        "prime",
        "composite",
    ];
    let Some(k) = words.iter().position(|w| is(w, &CONDITIONS)) else {
        return false;
    };
    let cond_at = words[k].as_ptr() as usize - lead.as_ptr() as usize;
    let rest = &lead[cond_at..];
    words[k + 1..].iter().any(|w| is(w, &CASE_WORDS))
        || rest.contains(['=', '<', '>', '≤', '≥', '≠'])
        || ["\\le", "\\ge", "\\ne", "\\lt", "\\gt"]
            .iter()
            .any(|c| rest.contains(c))
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
