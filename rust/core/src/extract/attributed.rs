//! Values that are not the completion's own answer (rule 16): a worked
//! example's value, a format template, a wrong or common answer, what
//! someone else says or might say (`A common wrong answer is 9.`, `The
//! format is \boxed{42}.`, `Student A answered 12.`, `Bob says the answer is
//! 8.`, `the grader should accept 5`).
//!
//! The cue must stand before the value in the same clause: the clause runs
//! back from the value to the sentence's start or to a word that starts a
//! new thought (`so`, `but`, `therefore`, `now`, ...), so `The answer is 12,
//! as in the example.` and `For example, 2 + 2 = 4. Now the answer is 16.`
//! keep their answer. A dropped box or marker gives way to the rules after it
//! (a later committed answer pays); a value found without a marker whose
//! clause is attributed is no answer.

use super::clause::sentence_start;

/// How far back a clause start is looked for.
const MAX_CLAUSE: usize = 300;

/// Words (lower case) that start a new clause: what follows is the
/// completion's own statement again.
const BREAKS: &[&str] = &[
    "so",
    "but",
    "therefore",
    "thus",
    "hence",
    "however",
    "now",
    "instead",
    "whereas",
    "actually",
    "our",
    "ours",
    "here",
    "correct",
    "right",
    "true",
    // German, French, Spanish, Italian (rule 13's languages): `so`, `but`,
    // `our`.
    "daher",
    "deshalb",
    "somit",
    "aber",
    "unser",
    "unsere",
    "donc",
    "ainsi",
    "mais",
    "notre",
    "entonces",
    "pero",
    "nuestro",
    "nuestra",
    "quindi",
    "dunque",
    "pertanto",
    "nostro",
    "nostra",
];

/// Words that name an example (lower case): a cue as the last word before
/// the value (`Example: 9`) or as the first word of its clause (`**Example:**
/// the answer is 8.`).
const EXAMPLES: &[&str] = &[
    "example",
    "examples",
    "sample",
    "beispiel",
    "beispielsweise",
    "exemple",
    "ejemplo",
    "esempio",
];

/// An adjective that, before one of [`OF_ANSWERS`], names an answer that is
/// not the completion's: `a common wrong answer`, `a typical mistake`.
const NOT_OURS: &[&str] = &[
    "sample",
    "example",
    "wrong",
    "incorrect",
    "common",
    "typical",
    "frequent",
    "naive",
    "tempting",
    "popular",
    "mistaken",
    "erroneous",
];

/// What [`NOT_OURS`] qualifies.
const OF_ANSWERS: &[&str] = &[
    "answer",
    "answers",
    "approach",
    "method",
    "result",
    "guess",
    "solution",
    "mistake",
    "mistakes",
    "error",
    "errors",
    "trap",
    "pitfall",
    "misconception",
    "response",
];

/// Verbs reporting what someone says or thinks: a cue unless their subject
/// is `I` or `we` (`As we said, the answer is 5`) or they are an idiom
/// (`That said, ...`).
const REPORTING: &[&str] = &[
    "says",
    "said",
    "claims",
    "claimed",
    "believes",
    "believed",
    "guessed",
    "guesses",
    "suggests",
    "suggested",
    "replied",
    "replies",
    "argues",
    "argued",
    "insists",
    "insisted",
    "thinks",
];

/// Verbs that report someone else's answer when one of [`PEOPLE`] comes
/// before them and the value ends the sentence (`Student A answered 12.`,
/// `Many students write 7.`, but `Tom answered 12 questions.`, `so he
/// answered 12.`: a word problem's people are not cues).
const REPORTING_LAST: &[&str] = &[
    "answered", "answers", "answer", "wrote", "writes", "write", "put",
];

/// Others whose answers [`REPORTING_LAST`] reports.
const PEOPLE: &[&str] = &[
    "student",
    "students",
    "someone",
    "somebody",
    "people",
    "person",
    "friend",
    "friends",
    "teacher",
    "classmate",
    "classmates",
    "others",
    "many",
    "everyone",
    "anyone",
    "grader",
    "checker",
];

/// A grader or checker named before the value: its instruction, never the
/// completion's answer (`The grader will accept 9.`). A word problem's people
/// (a judge scoring a dive) are not among them.
const GRADERS: &[&str] = &[
    "grader",
    "graders",
    "grading",
    "scorer",
    "checker",
    "autograder",
    "verifier",
    "evaluator",
];

/// What `according to` names as someone else's view (`According to my
/// classmate, ...`; `according to the formula` is the completion's own).
const SOURCES: &[&str] = &[
    "my", "his", "her", "their", "him", "them", "someone", "others",
];

/// Verbs of an instruction that, before `your`, restate the prompt's
/// instruction (`Write your answer as \boxed{42}`, `Put your final answer in
/// \boxed{7}`): an instruction's value, never the completion's answer
/// (`Therefore, your answer is 5.` has none and stays the completion's own).
const INSTRUCT: &[&str] = &[
    "write", "put", "give", "present", "enter", "express", "format", "box", "place", "provide",
    "state", "submit", "report", "type",
];

/// Two-word cues (lower case): an example, a template, a modal of someone
/// else's view, a grader's instruction.
const PAIRS: &[(&str, &str)] = &[
    ("for", "example"),
    ("for", "instance"),
    ("an", "example"),
    ("example", "is"),
    ("example", "would"),
    ("such", "as"),
    ("e", "g"),
    ("format", "is"),
    ("format", "would"),
    ("format", "should"),
    ("format", "looks"),
    ("format", "like"),
    ("formatted", "like"),
    ("template", "is"),
    ("might", "think"),
    ("might", "say"),
    ("might", "answer"),
    ("might", "write"),
    ("might", "guess"),
    ("might", "get"),
    ("may", "think"),
    ("would", "say"),
    ("an", "illustration"),
    ("for", "illustration"),
    ("should", "look"),
    ("one", "might"),
    ("example", "where"),
    ("example", "above"),
    ("format", "it"),
    ("format", "your"),
    ("formatted", "as"),
    ("mark", "this"),
    ("mark", "it"),
    ("should", "accept"),
    ("should", "treat"),
    ("treat", "this"),
    ("treat", "it"),
    ("tempting", "to"),
    // `zum Beispiel`, `z.B.`, `par exemple`, `p. ex.`, `por ejemplo`,
    // `p. ej.`, `por exemplo`, `ad esempio`, `per esempio`.
    ("zum", "beispiel"),
    ("z", "b"),
    ("par", "exemple"),
    ("p", "ex"),
    ("por", "ejemplo"),
    ("p", "ej"),
    ("por", "exemplo"),
    ("ad", "esempio"),
    ("per", "esempio"),
];

/// The words the personal-voice check reads before a verb: `I said`, `we
/// write`, `That said`, `Having said`.
const OWN: &[&str] = &["i", "we", "that", "having"];

/// Every cue word of the lists above as a set of hashed keys (a Bloom-style
/// filter of one hash): most words of prose are in no list and are passed
/// over after one lookup instead of a comparison with each cue (the box at
/// the end of a long completion reads up to [`MAX_CLAUSE`] bytes of words).
/// With about 300 cue words in [`FILTER_BITS`] bits, few other words share a
/// cue's bit (a key of first letter and length let most short words of
/// English through to the lists).
const FILTER: [u64; FILTER_BITS / 64] = {
    let mut f = [0u64; FILTER_BITS / 64];
    let mut l = 0;
    while l < LISTS.len() {
        let mut i = 0;
        while i < LISTS[l].len() {
            f = with_key(f, LISTS[l][i]);
            i += 1;
        }
        l += 1;
    }
    let mut i = 0;
    while i < PAIRS.len() {
        f = with_key(f, PAIRS[i].0);
        f = with_key(f, PAIRS[i].1);
        i += 1;
    }
    f
};

/// The size of [`FILTER`] in bits.
const FILTER_BITS: usize = 4096;

/// `word`'s bit in [`FILTER`]: an FNV-1a hash of its ASCII-lowercased bytes;
/// none for an empty word.
const fn key(word: &str) -> Option<usize> {
    let b = word.as_bytes();
    if b.is_empty() {
        return None;
    }
    let mut h: u32 = 0x811c_9dc5;
    let mut i = 0;
    while i < b.len() {
        h ^= b[i].to_ascii_lowercase() as u32;
        h = h.wrapping_mul(0x0100_0193);
        i += 1;
    }
    Some((h as usize) % FILTER_BITS)
}

const fn with_key(mut f: [u64; FILTER_BITS / 64], cue: &str) -> [u64; FILTER_BITS / 64] {
    if let Some(k) = key(cue) {
        f[k / 64] |= 1 << (k % 64);
    }
    f
}

/// The first words of [`PAIRS`], as [`FILTER`]: a cue word of another list
/// (`so`, `that`) is not compared with every pair.
const PAIR_FILTER: [u64; FILTER_BITS / 64] = {
    let mut f = [0u64; FILTER_BITS / 64];
    let mut i = 0;
    while i < PAIRS.len() {
        f = with_key(f, PAIRS[i].0);
        i += 1;
    }
    f
};

/// Whether `word` may be a cue word (no word of any list is missed).
fn maybe_cue(word: &str) -> bool {
    in_filter(&FILTER, word)
}

/// Whether `word` may start one of [`PAIRS`] (none is missed).
fn maybe_pair(word: &str) -> bool {
    in_filter(&PAIR_FILTER, word)
}

fn in_filter(filter: &[u64; FILTER_BITS / 64], word: &str) -> bool {
    key(word).is_some_and(|k| filter[k / 64] & (1 << (k % 64)) != 0)
}

/// The lists a cue word is in, one bit each (see [`cues_of`]).
const LISTS: [&[&str]; 11] = [
    BREAKS,
    GRADERS,
    SOURCES,
    INSTRUCT,
    EXAMPLES,
    NOT_OURS,
    OF_ANSWERS,
    REPORTING,
    REPORTING_LAST,
    PEOPLE,
    OWN,
];
const IN_BREAKS: u16 = 1 << 0;
const IN_GRADERS: u16 = 1 << 1;
const IN_SOURCES: u16 = 1 << 2;
const IN_INSTRUCT: u16 = 1 << 3;
const IN_EXAMPLES: u16 = 1 << 4;
const IN_NOT_OURS: u16 = 1 << 5;
const IN_OF_ANSWERS: u16 = 1 << 6;
const IN_REPORTING: u16 = 1 << 7;
const IN_REPORTING_LAST: u16 = 1 << 8;
const IN_PEOPLE: u16 = 1 << 9;
const IN_OWN: u16 = 1 << 10;

/// The lists of [`LISTS`] that hold `word` (without ASCII case), as bits:
/// one hash for a word of prose, one table lookup for a cue word.
fn cues_of(word: &str) -> u16 {
    type Table = hashbrown::HashMap<Box<[u8]>, u16, foldhash::fast::FixedState>;
    static TABLE: std::sync::OnceLock<Table> = std::sync::OnceLock::new();
    if word.len() > MAX_CUE || !maybe_cue(word) {
        return 0;
    }
    let table = TABLE.get_or_init(|| {
        let mut t = Table::default();
        for (i, list) in LISTS.iter().enumerate() {
            for cue in *list {
                let key = cue.as_bytes().to_ascii_lowercase().into_boxed_slice();
                *t.entry(key).or_default() |= 1 << i;
            }
        }
        t
    });
    let mut buf = [0u8; MAX_CUE];
    let key = &mut buf[..word.len()];
    key.copy_from_slice(word.as_bytes());
    key.make_ascii_lowercase();
    table.get(&*key).copied().unwrap_or(0)
}

/// The longest word of [`LISTS`] (bytes).
const MAX_CUE: usize = {
    let mut max = 0;
    let mut l = 0;
    while l < LISTS.len() {
        let mut i = 0;
        while i < LISTS[l].len() {
            if LISTS[l][i].len() > max {
                max = LISTS[l][i].len();
            }
            i += 1;
        }
        l += 1;
    }
    max
};

/// Whether the value `text[at..end]` stands in a clause attributed to an
/// example, a template, a wrong answer or someone else.
pub(super) fn attributed(text: &str, at: usize, end: usize) -> bool {
    let clause = clause_before(text, at);
    let is = |w: &str, cue: &str| w.eq_ignore_ascii_case(cue);
    // The words after the last break word, which starts the clause that
    // governs the value (`as correct`, `as true` are a grader's words, no
    // break), read from the value back; each word's lists looked up once.
    let mut words: Vec<&str> = Vec::new();
    let mut cues: Vec<u16> = Vec::new();
    let mut back = clause
        .rsplit(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .peekable();
    while let Some(w) = back.next() {
        let c = cues_of(w);
        if c & IN_BREAKS != 0 && !back.peek().is_some_and(|p| is(p, "as")) {
            break;
        }
        words.push(w);
        cues.push(c);
    }
    words.reverse();
    cues.reverse();
    let ends_sentence = text[end.min(text.len())..]
        .trim_start_matches(['}', '$', '*', '"', '\'', ')', ' '])
        .chars()
        .next()
        .is_none_or(|c| matches!(c, '.' | '!' | '\n' | ',' | ';'));
    // `Example: 9`, `**Example:** the answer is 8.`, `beispielsweise 7`.
    if cues.last().is_some_and(|c| c & IN_EXAMPLES != 0)
        || cues.first().is_some_and(|c| c & IN_EXAMPLES != 0)
        || quoted_then_reported(text, clause, at)
    {
        return true;
    }
    let cue = |k: usize, list: u16| cues.get(k).is_some_and(|c| c & list != 0);
    words.iter().enumerate().any(|(k, w)| {
        let own = k > 0 && cue(k - 1, IN_OWN);
        let next = words.get(k + 1).copied().unwrap_or("");
        (cue(k, IN_NOT_OURS) && cue(k + 1, IN_OF_ANSWERS))
            || (cue(k, IN_REPORTING) && !own)
            || (cue(k, IN_REPORTING_LAST)
                && !own
                && ends_sentence
                && cues[..k].iter().any(|c| c & IN_PEOPLE != 0))
            || (maybe_pair(w) && PAIRS.iter().any(|(a, b)| is(w, a) && is(next, b)))
            || cue(k, IN_GRADERS)
            || (cue(k, IN_INSTRUCT) && is(next, "your"))
            || (is(w, "according") && is(next, "to") && cue(k + 2, IN_SOURCES | IN_PEOPLE))
    })
}

/// Whether the value starting at `at` stands inside a quotation opened in its
/// `clause` and the sentence names a speaker after the quotation closes:
/// `"The answer is 6," he said.` (`"... 6," I said.` is the completion's own).
/// The closing quote is looked for from the value's start: a marker's value
/// runs to the end of its sentence, past the quote.
fn quoted_then_reported(text: &str, clause: &str, at: usize) -> bool {
    // One pass over the bytes: `"` and the UTF-8 of `\u{201c}` / `\u{201d}`.
    let b = clause.as_bytes();
    let (mut straight, mut curly) = (0usize, 0isize);
    for (i, &c) in b.iter().enumerate() {
        if c == b'"' {
            straight += 1;
        } else if c == 0xE2 && b.get(i + 1) == Some(&0x80) {
            match b.get(i + 2) {
                Some(0x9C) => curly += 1,
                Some(0x9D) => curly -= 1,
                _ => {}
            }
        }
    }
    if straight % 2 == 0 && curly <= 0 {
        return false;
    }
    let rest = &text[at.min(text.len())..];
    let rest = &rest[..floor_boundary(rest, MAX_CLAUSE)];
    let Some(close) = rest.find(['"', '\u{201d}', '\n']) else {
        return false;
    };
    if rest[close..].starts_with('\n') {
        return false;
    }
    let after = &rest[close..];
    let after = &after[..after
        .find(['.', '!', '?', '\n', ';'])
        .unwrap_or(after.len())];
    let words: Vec<&str> = after
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(6)
        .collect();
    words.iter().enumerate().any(|(k, w)| {
        REPORTING.iter().any(|r| w.eq_ignore_ascii_case(r))
            && !(k > 0
                && ["i", "we"]
                    .iter()
                    .any(|o| words[k - 1].eq_ignore_ascii_case(o)))
    })
}

/// The largest char boundary of `s` at or below `n`.
fn floor_boundary(s: &str, n: usize) -> usize {
    let mut n = n.min(s.len());
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    n
}

/// The text of the sentence before `at`, at most [`MAX_CLAUSE`] bytes of it
/// (its start is looked for no further back).
fn clause_before(text: &str, at: usize) -> &str {
    &text[sentence_start(text, at, MAX_CLAUSE)..at]
}

#[cfg(test)]
mod tests {
    use super::attributed;

    /// The clause is the sentence's text before the value, cut to its last
    /// `MAX_CLAUSE` bytes: the same as the whole sentence found first.
    #[test]
    fn the_clause_is_the_sentence_cut_to_its_end() {
        use super::super::clause::sentence_around;
        let words = [
            "the", "answer", "is", "5", "é", "答", "  ", "e.g.", "Mr.", "...",
        ];
        let breaks = [".", ". ", "\n", ";", "?"];
        let mut next = super::super::test_rng(0x9e37_79b9_7f4a_7c15_u64);
        for _ in 0..3_000 {
            let mut text = String::new();
            for _ in 0..next(400) {
                // Sentences of about 80 words: some longer than the clause.
                if next(80) == 0 {
                    text.push_str(breaks[next(breaks.len())]);
                } else {
                    text.push_str(words[next(words.len())]);
                }
                text.push(' ');
            }
            for (at, _) in text.char_indices().step_by(7) {
                let (mut s, _) = sentence_around(&text, at, at);
                s = s.max(at.saturating_sub(super::MAX_CLAUSE));
                while !text.is_char_boundary(s) {
                    s += 1;
                }
                assert_eq!(
                    super::clause_before(&text, at),
                    &text[s..at],
                    "{text:?} {at}"
                );
            }
        }
    }

    fn before_value(text: &str, value: &str) -> bool {
        let at = text.rfind(value).unwrap();
        attributed(text, at, at + value.len())
    }

    #[test]
    fn cues_before_the_value_in_its_clause() {
        for (text, value) in [
            ("A common wrong answer is 9.", "9"),
            ("The format is \\boxed{42}. Let me think.", "\\boxed"),
            ("Student A answered 12.", "12"),
            ("Bob says the answer is 8.", "8"),
            ("For example, \\boxed{5}", "\\boxed"),
            ("e.g. 3 + 4 = 7", "7"),
            ("the grader should accept 5", "5"),
            ("a typical mistake gives 14", "14"),
            ("He said \"the answer is 6\"", "6"),
            ("You might think the answer is 3.", "3"),
            ("Many students write 12.", "12"),
            ("Example: 9", "9"),
            ("Some people would say 9.", "9"),
            ("According to my classmate, the result is 9.", "9"),
            ("The sample answer would be \\boxed{9}.", "\\boxed"),
            ("Consider the example where the answer is 9.", "9"),
            ("Please format it like this: \\boxed{9}", "\\boxed"),
            ("Mark this as correct: 9", "9"),
            ("The grader will accept 9.", "9"),
            (
                "Answer in the form \\boxed{N}, such as \\boxed{10}",
                "\\boxed{10}",
            ),
            ("the checker should treat this as 5", "5"),
            ("Write your answer as \\boxed{42}.", "\\boxed"),
            ("**Example:** the answer is 8.", "8"),
            ("It is tempting to answer 20.", "20"),
            ("People often answer 4.", "4"),
            ("\u{201c}The answer is 6,\u{201d} he said.", "6"),
            ("\"The answer is 6\", said John.", "6"),
            ("Par exemple, la r\u{e9}ponse est 7.", "7"),
            ("Zum Beispiel ist die Antwort 7.", "7"),
            ("Por ejemplo, la respuesta es 7.", "7"),
            ("Ad esempio, la risposta \u{e8} 7.", "7"),
        ] {
            assert!(before_value(text, value), "{text}");
        }
    }

    #[test]
    fn the_completions_own_statements() {
        for (text, value) in [
            ("by the same method our answer is 16", "16"),
            (
                "For example, if x = 2 then y = 4. Now the answer is 16.",
                "16",
            ),
            ("The answer is 12, as in the example.", "12"),
            (
                "A common wrong answer is 7, but the correct answer is 9.",
                "9",
            ),
            ("As we said, the answer is 5.", "5"),
            ("So the answer is 6, for example by counting.", "6"),
            ("We use the formula, so the area is 6.", "6"),
            ("Tom answered 12 questions.", "12"),
            ("That said, the answer is 5.", "5"),
            ("The number of students is 12.", "12"),
            ("In the requested format: \\boxed{5}", "\\boxed"),
            ("She wrote 5 letters each day, 15 in all.", "15"),
            ("Tom answered 9 questions, so he answered 12.", "12"),
            ("As the student, I answer 12.", "12"),
            ("The answer is \"6\".", "6"),
            ("\u{201c}The answer is 6,\u{201d} I said.", "6"),
            ("Par exemple, 4 + 3 = 7. Donc la r\u{e9}ponse est 9.", "9"),
            ("According to the formula, the area is 12.", "12"),
            ("The judge gave the dive 9 points.", "9"),
        ] {
            assert!(!before_value(text, value), "{text}");
        }
    }
}
