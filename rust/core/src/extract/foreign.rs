//! Other languages (docs/verify_semantics.md rule 13): answer markers and
//! hedge words of German, French, Spanish, Italian, Portuguese, Russian,
//! Chinese and Japanese are read as the English ones, and letters of other
//! scripts next to a number are words, not variables.
//!
//! Like [`super::hidden`], folding writes over the bytes of a copy and keeps
//! every offset: a foreign marker or word becomes its English equivalent
//! padded with spaces (`答案是` is `answer is`, `Antwort:` is `answer:`,
//! `或` is `or `); a run of letters of another script (Cyrillic, CJK, kana,
//! hangul, ...) that touches a number is blanked (`5个苹果`, `5 рублей`,
//! `5円` read 5); full-width sentence punctuation (`：`, `。`, `，`, `？`)
//! becomes its ASCII sign. Every replacement is ASCII written over whole
//! characters, so the copy stays UTF-8. A text with none of these is not
//! copied.

use std::borrow::Cow;
use std::sync::OnceLock;

use aho_corasick::{packed, AhoCorasick, AhoCorasickBuilder, MatchKind};

/// (foreign text, English text of at most its byte length). Matched without
/// ASCII case; a pattern of a spaced script only as whole words.
const FOLDS: &[(&str, &str)] = &[
    // A negated marker (`Die Antwort ist nicht 5`, `La respuesta no es 5`):
    // the answer is not the value, as `the answer is not 5`.
    ("antwort ist nicht", "answer is not"),
    ("réponse n'est pas", "answer is not"),
    ("reponse n'est pas", "answer is not"),
    ("respuesta no es", "answer is not"),
    ("risposta non è", "answer is not"),
    ("resposta não é", "answer is not"),
    // `no es 5`, `non è 5`, `n'est pas 5`: `isn't` (Spanish `no` alone is
    // not read: `5, no 6` is `5, not 6` in Spanish and a correction in
    // English); Italian `non` before a space is `not` (`5, non 6`;
    // `non-negative` keeps its hyphen).
    ("no es", "isn't"),
    ("non è", "isn't"),
    ("n'est pas", "isn't"),
    ("non ", "not "),
    // Doubt in two words or a hyphen (`Peut-être 5.`, `Tal vez 5.`), and the
    // conditional modals read as `could` (`Il pourrait être 5.`): what one
    // word of the English list says.
    ("peut-être", "maybe"),
    ("peut-etre", "maybe"),
    ("tal vez", "maybe"),
    ("pourrait", "could"),
    ("podría", "could"),
    ("podria", "could"),
    ("potrebbe", "could"),
    ("poderia", "could"),
    ("könnte", "could"),
    ("koennte", "could"),
    // German
    ("antwort:", "answer:"),
    ("antwort ist", "answer is"),
    ("antwort lautet", "answer is"),
    ("antwort lautet:", "answer:"),
    // French (`Réponse :` with the French space before the colon)
    ("réponse:", "answer:"),
    ("réponse :", "answer:"),
    ("réponse est", "answer is"),
    ("réponse finale:", "answer:"),
    ("réponse finale :", "answer:"),
    ("réponse finale est", "answer is"),
    ("RÉPONSE:", "answer:"),
    ("RÉPONSE :", "answer:"),
    ("reponse:", "answer:"),
    ("reponse :", "answer:"),
    ("reponse est", "answer is"),
    // Spanish
    ("respuesta:", "answer:"),
    ("respuesta es", "answer is"),
    ("respuesta final:", "answer:"),
    ("respuesta final es", "answer is"),
    // Italian
    ("risposta:", "answer:"),
    ("risposta è", "answer is"),
    ("risposta finale:", "answer:"),
    ("risposta finale è", "answer is"),
    // Portuguese
    ("resposta:", "answer:"),
    ("resposta é", "answer is"),
    ("resposta final:", "answer:"),
    ("resposta final é", "answer is"),
    // Russian (ASCII case folding leaves Cyrillic as written)
    ("ответ:", "answer:"),
    ("Ответ:", "answer:"),
    ("ОТВЕТ:", "answer:"),
    ("ответ", "answer"),
    ("Ответ", "answer"),
    ("ОТВЕТ", "answer"),
    ("ответ —", "answer is"),
    ("Ответ —", "answer is"),
    ("ответ равен", "answer is"),
    ("Ответ равен", "answer is"),
    ("ответ будет", "answer is"),
    ("Ответ будет", "answer is"),
    ("может быть", "maybe"),
    ("Может быть", "maybe"),
    ("или", "or"),
    ("Или", "or"),
    ("не", "not"),
    ("Не", "not"),
    ("возможно", "maybe"),
    ("Возможно", "maybe"),
    ("наверное", "maybe"),
    ("Наверное", "maybe"),
    // Chinese
    ("答案是", "answer is"),
    ("答案为", "answer is"),
    ("答案為", "answer is"),
    ("答案：", "answer:"),
    ("答案:", "answer:"),
    ("或者", " or"),
    ("或", " or"),
    ("还是", " or"),
    ("還是", " or"),
    ("可能", " maybe"),
    ("也许", " maybe"),
    ("也許", " maybe"),
    ("或许", " maybe"),
    ("或許", " maybe"),
    ("大概", " maybe"),
    ("不可能", " cannot"),
    ("不是", " not"),
    ("不对", " wrong"),
    ("不對", " wrong"),
    // `答：5`, Chinese and Japanese: too short for `answer:`.
    ("答：", "ans:"),
    ("答:", "ans:"),
    // Japanese
    ("答えは", "answer is"),
    ("答え：", "answer:"),
    ("答え:", "answer:"),
    ("解答：", "answer:"),
    ("解答は", "answer is"),
    ("正解は", "answer is"),
    ("または", " or"),
    ("かもしれない", " maybe"),
    ("かもしれません", " maybe"),
    ("たぶん", " maybe"),
    ("多分", " maybe"),
    ("ではない", " is wrong"),
    ("ではありません", " is wrong"),
    ("じゃない", " is wrong"),
    // `か` between values (`5か6`); elsewhere it is a particle.
    ("か", " or"),
];

/// The index of `か` in [`FOLDS`].
const KA: usize = FOLDS.len() - 1;

/// The first letters of the Latin patterns of [`FOLDS`] (ASCII-lowercased),
/// searched in their place: every Latin pattern starts with exactly one,
/// and none starts another (a test checks both), so at most one is found at
/// a position, and a pattern is found where its stem is.
const LATIN_STEMS: &[&str] = &[
    "antwort",
    "réponse",
    "rÉponse",
    "reponse",
    "respuesta",
    "risposta",
    "resposta",
    "no es",
    "non ",
    "n'est pas",
    "peut-",
    "tal vez",
    "pourrait",
    "podr",
    "potrebbe",
    "poderia",
    "könnte",
    "koennte",
];

/// The search for [`FOLDS`], in two parts that never overlap: the Latin
/// patterns (first byte ASCII) and the others (first letter Cyrillic or CJK,
/// no ASCII letter inside). One case-insensitive automaton of all of them has
/// no prefilter (aho-corasick builds none without ASCII case), so it stepped
/// through every byte of every text (90% of `verify`'s time on 16,000 ASCII
/// characters). Now the Latin ones are searched case-sensitively in an
/// ASCII-lowercased copy (the same match: ASCII case folding is per byte)
/// with aho-corasick's packed (Teddy, SIMD) searcher, which the automaton's
/// own choice passes over (it takes a start-byte prefilter, and `a`, `n`, `r`
/// start most words), and the others only in a text that is not ASCII. The
/// packed searcher looks for the 18 [`LATIN_STEMS`], not the 47 patterns:
/// over 32 patterns it takes its slower form (16 bytes a step, not 32), and
/// a stem found is then read on as each of its patterns.
struct Folds {
    /// The stems (an automaton where the CPU has no packed searcher).
    latin: Result<packed::Searcher, AhoCorasick>,
    /// For each stem, its patterns lowercased, longest first, with their
    /// index in [`FOLDS`].
    stem_patterns: Vec<Vec<(Vec<u8>, usize)>>,
    /// The other patterns, and the index in [`FOLDS`] of each.
    other: AhoCorasick,
    other_ids: Vec<usize>,
}

fn folds() -> &'static Folds {
    static AC: OnceLock<Folds> = OnceLock::new();
    AC.get_or_init(|| {
        let (latin, other): (Vec<usize>, Vec<usize>) =
            (0..FOLDS.len()).partition(|&i| FOLDS[i].0.as_bytes()[0].is_ascii());
        let mut stem_patterns: Vec<Vec<(Vec<u8>, usize)>> = vec![Vec::new(); LATIN_STEMS.len()];
        for &i in &latin {
            let p = FOLDS[i].0.to_ascii_lowercase().into_bytes();
            if let Some(k) = LATIN_STEMS.iter().position(|s| p.starts_with(s.as_bytes())) {
                stem_patterns[k].push((p, i));
            }
        }
        for list in &mut stem_patterns {
            list.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
        }
        let packed = packed::Config::new()
            .match_kind(packed::MatchKind::LeftmostLongest)
            .only_teddy_fat(Some(true))
            .builder()
            .extend(LATIN_STEMS)
            .build();
        Folds {
            latin: packed.ok_or_else(|| {
                AhoCorasickBuilder::new()
                    .match_kind(MatchKind::LeftmostLongest)
                    .build(LATIN_STEMS)
                    .expect("fixed fold stems always build")
            }),
            stem_patterns,
            other: AhoCorasickBuilder::new()
                .match_kind(MatchKind::LeftmostLongest)
                .build(other.iter().map(|&i| FOLDS[i].0))
                .expect("fixed fold patterns always build"),
            other_ids: other,
        }
    })
}

impl Folds {
    /// The first stem in `lower[from..]`: its start and index.
    fn next_stem(&self, lower: &[u8], from: usize) -> Option<(usize, usize)> {
        let span = aho_corasick::Span::from(from..lower.len());
        let m = match &self.latin {
            Ok(p) => p.find_in(lower, span),
            Err(a) => a.find(aho_corasick::Input::new(lower).span(span)),
        }?;
        Some((m.start(), m.pattern().as_usize()))
    }
}

/// The matches of [`FOLDS`] in `s` as (start, end, index in [`FOLDS`]), in
/// order: those of one automaton of all the patterns, matched without ASCII
/// case, leftmost-longest.
fn fold_matches(s: &str) -> Vec<(usize, usize, usize)> {
    thread_local! {
        /// The lowercased copy, its buffer kept between calls.
        static LOWER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    LOWER.with_borrow_mut(|lower| {
        lower.clear();
        lower.extend_from_slice(s.as_bytes());
        lower.make_ascii_lowercase();
        fold_matches_in(s, lower)
    })
}

/// [`fold_matches`] with `lower`, `s` ASCII-lowercased.
fn fold_matches_in(s: &str, lower: &[u8]) -> Vec<(usize, usize, usize)> {
    let f = folds();
    let mut hits: Vec<(usize, usize, usize)> = Vec::new();
    // Every stem in order: the first with a pattern is the leftmost match,
    // its longest pattern the longest there; the search goes on after it.
    let mut from = 0;
    while let Some((start, stem)) = f.next_stem(lower, from) {
        let rest = &lower[start..];
        match f.stem_patterns[stem]
            .iter()
            .find(|(p, _)| rest.starts_with(p))
        {
            Some((p, id)) => {
                hits.push((start, start + p.len(), *id));
                from = start + p.len();
            }
            None => from = start + 1,
        }
    }
    if !s.is_ascii() {
        let at = hits.len();
        hits.extend(
            f.other
                .find_iter(s)
                .map(|m| (m.start(), m.end(), f.other_ids[m.pattern().as_usize()])),
        );
        if at > 0 && at < hits.len() {
            hits.sort_unstable();
        }
    }
    hits
}

/// A letter of a script written without spaces between words (CJK, kana,
/// hangul, Thai), or of a spaced script other than Latin and Greek (whose
/// letters are variables): next to a number, a word, never a variable.
fn foreign_letter(c: char) -> bool {
    matches!(c as u32,
        0x0400..=0x052F // Cyrillic
        | 0x0590..=0x05FF // Hebrew
        | 0x0600..=0x06FF // Arabic
        | 0x0900..=0x097F // Devanagari
        | 0x0E00..=0x0E7F // Thai
        | 0x3040..=0x30FF // kana
        | 0x3400..=0x4DBF
        | 0x4E00..=0x9FFF
        | 0xF900..=0xFAFF // CJK ideographs
        | 0xAC00..=0xD7AF // hangul
        | 0xFF66..=0xFF9F) // half-width kana
}

/// A letter of a script written without spaces (a fold of it needs no word
/// boundary).
fn unspaced(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF)
}

fn digit(c: char) -> bool {
    c.is_ascii_digit() || ('０'..='９').contains(&c)
}

/// The full-width sentence punctuation and its ASCII sign.
fn punctuation(c: char) -> Option<u8> {
    Some(match c {
        '：' => b':',
        '。' => b'.',
        '，' | '、' => b',',
        '！' => b'!',
        '？' => b'?',
        '；' => b';',
        '（' => b'(',
        '）' => b')',
        _ => return None,
    })
}

/// `text` with other languages' markers and words in English and foreign
/// words next to numbers blanked, at the same offsets (see the module doc).
pub(super) fn fold(text: Cow<'_, str>) -> Cow<'_, str> {
    let s: &str = &text;
    let mut out: Option<Vec<u8>> = None;
    let prev_char = |at: usize| s[..at].chars().next_back();
    let next_char = |at: usize| s[at..].chars().next();
    for (start, end, id) in fold_matches(s) {
        let (pat, to) = FOLDS[id];
        if !pat.chars().any(unspaced) {
            // A spaced script's word: whole words only (`не` in `неверно`).
            let first_letter = pat.chars().next().is_some_and(char::is_alphabetic);
            let last_letter = pat.chars().next_back().is_some_and(char::is_alphabetic);
            if (first_letter && prev_char(start).is_some_and(char::is_alphabetic))
                || (last_letter && next_char(end).is_some_and(char::is_alphabetic))
            {
                continue;
            }
        }
        if id == KA {
            let near_digit = |c: Option<char>| c.is_some_and(|c| digit(c) || c == '$');
            let before = s[..start].trim_end_matches([' ', '\t']).chars().next_back();
            let after = s[end..].trim_start_matches([' ', '\t']).chars().next();
            if !(near_digit(before) && near_digit(after)) {
                continue;
            }
        }
        let buf = out.get_or_insert_with(|| s.as_bytes().to_vec());
        let span = &mut buf[start..end];
        span.fill(b' ');
        span[..to.len()].copy_from_slice(to.as_bytes());
    }
    if s.is_ascii() {
        return match out.map(String::from_utf8) {
            Some(Ok(t)) => Cow::Owned(t),
            _ => text,
        };
    }
    // Runs of foreign letters next to a number, and full-width punctuation.
    // Read in the folded copy (folded words are ASCII now, and stay).
    let mut buf = out.unwrap_or_else(|| s.as_bytes().to_vec());
    let folded = String::from_utf8_lossy(&buf).into_owned();
    let mut run: Option<usize> = None;
    let mut last_visible: Option<char> = None;
    let mut before_run: Option<char> = None;
    for (i, c) in folded
        .char_indices()
        .chain(std::iter::once((folded.len(), '\n')))
    {
        if foreign_letter(c) {
            if run.is_none() {
                run = Some(i);
                before_run = last_visible;
            }
            continue;
        }
        if let Some(start) = run {
            if c == ' ' || c == '\t' {
                continue;
            }
            // The run (and the spaces after it) ends here: blank its letters
            // when a number touches it on either side.
            if before_run.is_some_and(digit) || digit(c) {
                let end = folded[start..i].trim_end_matches([' ', '\t']).len() + start;
                buf[start..end].fill(b' ');
            }
            run = None;
        }
        if let Some(p) = punctuation(c) {
            buf[i..i + c.len_utf8()].fill(b' ');
            let at = if p == b')' { i + c.len_utf8() - 1 } else { i };
            buf[at] = p;
        }
        if c != ' ' && c != '\t' {
            last_visible = Some(c);
        }
    }
    match String::from_utf8(buf) {
        Ok(t) if t != s => Cow::Owned(t),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{extract_answer, ExtractOptions, Hedge, Rule};
    use super::fold;

    fn found(text: &str) -> Option<(Vec<&str>, Rule, Option<Hedge>)> {
        extract_answer(text, &ExtractOptions::default()).map(|e| (e.parts, e.rule, e.hedge))
    }

    /// `fold_matches` merges two searches: no match of one can overlap a
    /// match of the other.
    #[test]
    fn the_two_fold_searches_never_overlap() {
        for (pat, _) in super::FOLDS {
            if pat.as_bytes()[0].is_ascii() {
                assert!(pat.chars().all(|c| (c as u32) < 0x100), "{pat}");
            } else {
                assert!(
                    pat.chars().next().is_some_and(|c| (c as u32) >= 0x400),
                    "{pat}"
                );
                assert!(!pat.chars().any(|c| c.is_ascii_alphanumeric()), "{pat}");
            }
        }
    }

    /// Every Latin pattern starts with exactly one stem, and no stem starts
    /// another: a stem found is the only one at its position.
    #[test]
    fn every_latin_pattern_has_one_stem() {
        for (pat, _) in super::FOLDS {
            if !pat.as_bytes()[0].is_ascii() {
                continue;
            }
            let p = pat.to_ascii_lowercase();
            let n = super::LATIN_STEMS
                .iter()
                .filter(|s| p.starts_with(*s))
                .count();
            assert_eq!(n, 1, "{pat}");
        }
        for a in super::LATIN_STEMS {
            assert_eq!(a.to_ascii_lowercase(), *a, "{a}");
            for b in super::LATIN_STEMS {
                assert!(a == b || !b.starts_with(a), "{a} starts {b}");
            }
        }
    }

    /// The split search finds what one case-insensitive automaton of all the
    /// patterns finds, on texts made of patterns in random case, their
    /// pieces and English.
    #[test]
    fn the_split_search_is_the_single_automaton() {
        use aho_corasick::{AhoCorasickBuilder, MatchKind};
        let single = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostLongest)
            .build(super::FOLDS.iter().map(|f| f.0))
            .unwrap();
        let mut pieces: Vec<String> = super::FOLDS.iter().map(|f| f.0.to_owned()).collect();
        for f in super::FOLDS {
            let cut =
                f.0.char_indices()
                    .nth(f.0.chars().count() / 2)
                    .map_or(0, |c| c.0);
            pieces.push(f.0[..cut].to_owned());
            pieces.push(f.0[cut..].to_owned());
        }
        pieces.extend(
            [
                " ", "the ", "answer", "none", "5", "Non", "NO ES", "n", "r", "$", "个", "ы",
                "antwort", "podr", "peut-", "nonn", "no", "RÉ", "ré", "e", "s",
            ]
            .map(String::from),
        );
        let mut next = super::super::test_rng(0x2545_f491_4f6c_dd1d_u64);
        for _ in 0..20_000 {
            let mut text = String::new();
            for _ in 0..1 + next(8) {
                let p = &pieces[next(pieces.len())];
                if next(2) == 0 {
                    text.push_str(&p.to_ascii_uppercase());
                } else {
                    text.push_str(p);
                }
            }
            let want: Vec<_> = single
                .find_iter(&text)
                .map(|m| (m.start(), m.end(), m.pattern().as_usize()))
                .collect();
            assert_eq!(super::fold_matches(&text), want, "{text:?}");
        }
    }

    #[test]
    fn foreign_markers_are_markers() {
        for (text, rule) in [
            ("Antwort: 5", Rule::AnswerColon),
            ("Die Antwort ist 5.", Rule::AnswerIs),
            ("Réponse : 5", Rule::AnswerColon),
            ("la réponse est 5", Rule::AnswerIs),
            ("Respuesta: 5", Rule::AnswerColon),
            ("la respuesta es 5", Rule::AnswerIs),
            ("la risposta è 5", Rule::AnswerIs),
            ("a resposta é 5", Rule::AnswerIs),
            ("Ответ: 5", Rule::AnswerColon),
            ("答案：5", Rule::AnswerColon),
            ("答案是5。", Rule::AnswerIs),
            ("所以答案为5个苹果。", Rule::AnswerIs),
            ("答えは5です。", Rule::AnswerIs),
            ("答え：5円", Rule::AnswerColon),
            ("答：5", Rule::AnswerColon),
            ("答: 5个苹果", Rule::AnswerColon),
            ("La risposta è 5, non 6.", Rule::AnswerIs),
        ] {
            assert_eq!(found(text), Some((vec!["5"], rule, None)), "{text}");
        }
    }

    #[test]
    fn foreign_hedge_words_hedge() {
        for text in [
            "La respuesta es 5 o 6.",
            "La risposta è 5 o 6.",
            "答案是5或6",
            "答案是5还是6",
            "答えは5か6です",
            "答案可能是5",
            "答案不是5",
            "答えはたぶん5",
            "答えは5ではない",
            "Ответ: не 5",
            "La respuesta no es 5.",
            "La risposta non è 5.",
            "La réponse n'est pas 5.",
            "A resposta não é 5.",
            "Die Antwort ist nicht 5.",
        ] {
            // Not the committed answer 5: a hedge, or several values.
            let Some(f) = found(text) else { continue };
            assert!(f.2.is_some() || f.0 != ["5"], "{text}: {f:?}");
        }
        // A word of a spaced script folds only whole: `не` in `неверно` is no `not`.
        assert_eq!(fold("неверно x".into()), "неверно x");
        // `non` folds only before a space: `non-negative` keeps its hyphen.
        assert_eq!(fold("non-negative".into()), "non-negative");
        assert_eq!(fold("5, non 6".into()), "5, not 6");
        // `か` is a particle except between values.
        assert_eq!(fold("わかる".into()), "わかる");
    }

    #[test]
    fn folding_keeps_offsets_and_utf8_at_every_boundary() {
        // Every cut of texts mixing one-, two-, three- and four-byte
        // characters around markers, numbers and full-width signs: the fold
        // keeps the length, stays UTF-8, and nothing panics.
        let texts = [
            "答案是5。ответ: 5 рублей; Réponse : ５ или 6 😀5个😀 答えは5か6",
            "é5è不是5円ó 5 o 6 答え：５，６？",
        ];
        for text in texts {
            for (cut, _) in text.char_indices() {
                for part in [&text[..cut], &text[cut..]] {
                    let folded = fold(part.into());
                    assert_eq!(folded.len(), part.len(), "{part}");
                    let _ = extract_answer(part, &ExtractOptions::default());
                }
            }
        }
    }
}
