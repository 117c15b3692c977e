//! An answer taken back after it is given (docs/verify_semantics.md rule 4):
//! the text after the final answer says it is wrong, not the answer, or a
//! mistake (`so 16 is not the answer after all`, `although this is
//! incorrect`, `Actually no, it isn't`, `no wait, I made an error`). A
//! verdict on `this` / `that` / `it` / `my answer`, or on nothing named, is
//! a verdict on the answer; a verdict on a value denies that value, which
//! voids the answer when it is the answer (`15 is not the answer` after
//! `\boxed{16}` eliminates a candidate and leaves 16 paid). A verdict that
//! confirms (`my answer is correct`, `16 is right`) takes nothing back.

use super::tokens::{Span, Tok, Tokens};
use super::words::{self, Class};

/// Values denied after the answer are compared to it; more are not read.
const MAX_DENIED: usize = 8;

/// What the text after the answer takes back.
#[derive(Debug, Default)]
pub(super) struct Retraction {
    /// The answer itself is judged wrong or a mistake.
    pub(super) retracted: bool,
    /// Values said to be wrong or not the answer: the answer is void when
    /// it is one of them.
    pub(super) denied: Vec<Span>,
}

/// Whom a clause's verdict is about.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Subject {
    Value(Span),
    /// `this`, `that`, `it`, `my answer`, or `I` (`I was wrong`): the answer.
    Answer,
}

/// Words that start or link a clause without naming what it is about.
const LINKS: [&str; 26] = [
    "but", "wait", "hmm", "oh", "oops", "actually", "although", "though", "however", "and", "now",
    "well", "uh", "um", "hold", "on", "second", "thought", "realize", "realise", "see", "think",
    "believe", "afraid", "after", "all",
];
/// Words that point at the answer just given.
const POINTERS: [&str; 12] = [
    "this", "that", "that's", "it", "it's", "which", "my", "our", "i", "i'm", "we", "we're",
];
/// Nouns of a mistake: an admission (`I made an error`, `my mistake`) takes
/// the answer back.
const MISTAKES: [&str; 9] = [
    "mistake",
    "mistakes",
    "error",
    "errors",
    "typo",
    "miscalculation",
    "miscalculated",
    "blunder",
    "messed",
];
/// Words that admit (with a mistake noun after them).
const ADMITS: [&str; 10] = [
    "made",
    "make",
    "my",
    "our",
    "i",
    "i've",
    "we",
    "we've",
    "there's",
    "somewhere",
];
/// Words after `no` / before it that make it a retraction (`no wait`, `actually no`).
const NO_MARKS: [&str; 7] = ["actually", "wait", "hmm", "oh", "oops", "uh", "um"];

/// Phrases that withdraw what was just said (`Scratch that.`, `Never mind.`,
/// `I take it back`, `Just kidding!`, `Or not.`), lower case, each with
/// whether it must end its clause (`ignore that.` withdraws; `we ignore that
/// root` is reasoning).
const WITHDRAWALS: &[(&[&str], bool)] = &[
    (&["scratch", "that"], false),
    (&["strike", "that"], false),
    (&["cancel", "that"], false),
    (&["never", "mind"], false),
    (&["nevermind"], false),
    (&["take", "it", "back"], false),
    (&["take", "that", "back"], false),
    (&["retract"], false),
    (&["disregard", "that"], true),
    (&["disregard", "this"], true),
    (&["disregard", "it"], true),
    (&["disregard", "above"], false),
    (&["disregard", "everything"], false),
    (&["disregard", "my"], false),
    (&["disregard", "what"], false),
    (&["just", "kidding"], false),
    (&["only", "kidding"], false),
    (&["i'm", "kidding"], false),
    (&["am", "kidding"], false),
    (&["was", "kidding"], false),
    (&["jk"], false),
    (&["was", "joke"], false),
    (&["just", "joke"], false),
    (&["ignore", "that"], true),
    (&["ignore", "this"], true),
    (&["ignore", "it"], true),
    (&["ignore", "above"], false),
    (&["ignore", "everything"], false),
    (&["ignore", "my"], false),
    (&["forget", "that"], true),
    (&["forget", "it"], true),
    (&["forget", "what"], false),
    (&["or", "not"], true),
];

/// Words a withdrawal reads through (`was a joke`, `ignore the above`).
const ARTICLES: [&str; 3] = ["a", "an", "the"];

/// Whether the clause's words so far (`recent`, the latest last) end in a
/// withdrawal, `next` being the text after the latest word.
fn withdraws(recent: &[&str], next: &str) -> bool {
    let ends = next
        .trim_start_matches([' ', '\t'])
        .chars()
        .next()
        .is_none_or(|c| matches!(c, '.' | '!' | '?' | ',' | ';' | ':' | ')' | '\n'));
    WITHDRAWALS.iter().any(|&(words, at_end)| {
        recent.len() >= words.len()
            && (ends || !at_end)
            && recent[recent.len() - words.len()..]
                .iter()
                .zip(words)
                .all(|(r, w)| r.eq_ignore_ascii_case(w))
            // `whether or not` is no withdrawal.
            && !(words[0] == "or"
                && recent.len() > 2
                && recent[recent.len() - 3].eq_ignore_ascii_case("whether"))
    })
}

/// What the text after an answer takes back (see the module doc).
pub(super) fn retraction(coda: &str) -> Retraction {
    let mut r = Retraction::default();
    let mut subject: Option<Subject> = None;
    // A negation read in this clause, and whether a word other than filler
    // followed it (`16 is not prime` says nothing of the answer).
    let mut neg = false;
    let mut neg_spent = false;
    // A word naming something else was read in this clause.
    let mut other = false;
    let mut negated_clause = false;
    let mut admission = false;
    let mut mistake = false;
    let mut prev: Option<&str> = None;
    // The clause's latest words (articles skipped), for [`withdraws`].
    let mut recent: [&str; 3] = [""; 3];
    let mut n_recent = 0usize;
    let deny = |r: &mut Retraction, s: Subject| match s {
        Subject::Answer => r.retracted = true,
        Subject::Value(v) if r.denied.len() < MAX_DENIED => r.denied.push(v),
        Subject::Value(_) => {}
    };
    for tok in Tokens::new(coda) {
        match tok {
            Tok::Value { span, .. } => {
                if neg && !neg_spent {
                    // `it is not 16`.
                    deny(&mut r, Subject::Value(span));
                    neg = false;
                }
                subject = Some(Subject::Value(span));
                prev = None;
                n_recent = 0;
            }
            Tok::Math(_) => {}
            Tok::Word(w, (_, end)) => {
                let is = |list: &[&str]| list.iter().any(|a| w.eq_ignore_ascii_case(a));
                if !is(&ARTICLES) {
                    if n_recent == recent.len() {
                        recent.rotate_left(1);
                        n_recent -= 1;
                    }
                    recent[n_recent] = w;
                    n_recent += 1;
                    r.retracted |= withdraws(&recent[..n_recent], &coda[end..]);
                }
                let class = words::class(w);
                if w.eq_ignore_ascii_case("no")
                    && prev.is_some_and(|p| NO_MARKS.iter().any(|a| p.eq_ignore_ascii_case(a)))
                    || w.eq_ignore_ascii_case("wait")
                        && prev.is_some_and(|p| p.eq_ignore_ascii_case("no"))
                    || w.eq_ignore_ascii_case("oops")
                {
                    r.retracted = true;
                }
                if is(&MISTAKES) {
                    mistake = admission && !negated_clause;
                    neg_spent = true; // `no mistakes`: the negation is the mistake's
                } else if w.eq_ignore_ascii_case("no") || class == Class::Negation {
                    negated_clause = true;
                    neg = true;
                    neg_spent = false;
                } else if class == Class::Wrong {
                    match subject {
                        Some(s) => deny(&mut r, s),
                        None if !other => r.retracted = true,
                        None => {}
                    }
                    neg = false;
                } else if class == Class::Right {
                    let noun = is(&["answer", "solution", "result"]);
                    // `no solution` / `no answer` is a statement (there is none), not a
                    // verdict on the answer.
                    let determiner = noun && prev.is_some_and(|p| p.eq_ignore_ascii_case("no"));
                    if determiner {
                        neg = false;
                    } else if neg && !neg_spent {
                        match subject {
                            Some(s) => deny(&mut r, s),
                            None if !other => r.retracted = true,
                            None => {}
                        }
                        neg = false;
                    } else if noun && subject.is_none() && !other {
                        subject = Some(Subject::Answer);
                    }
                } else if is(&POINTERS) {
                    if subject.is_none() && !other {
                        subject = Some(Subject::Answer);
                    }
                    admission |= is(&ADMITS);
                } else if is(&ADMITS) {
                    admission = true;
                } else if class == Class::Filler || is(&LINKS) {
                } else {
                    // A word naming something else: the verdict is its.
                    other = true;
                    subject = None;
                    neg_spent = true;
                }
                prev = Some(w);
            }
            Tok::Stop(_) | Tok::Question(_) => {
                // `Actually no, it isn't.`, `That's not it.`
                if neg && !neg_spent {
                    if let Some(s) = subject {
                        deny(&mut r, s);
                    }
                }
                r.retracted |= mistake;
                subject = None;
                neg = false;
                neg_spent = false;
                other = false;
                negated_clause = false;
                admission = false;
                mistake = false;
                prev = None;
                n_recent = 0;
            }
            Tok::Ellipsis(_) | Tok::Slash(_) | Tok::Bound(_) => {}
        }
    }
    if neg && !neg_spent {
        if let Some(s) = subject {
            deny(&mut r, s);
        }
    }
    r.retracted |= mistake;
    r
}
