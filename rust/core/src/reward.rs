//! Reward specs, built once and applied to a whole batch across the pool.
//!
//! A [`RewardSet`] is a list of weighted [`Spec`]s (math equivalence, exact
//! string, multiple choice, a regex format check, DAPO's soft overlong
//! punishment, the cosine length-scaled correctness and the n-gram repetition
//! penalty of Yeo et al. 2025). [`RewardSet::score`] fills one column per spec
//! and their weighted sum. NaN marks an item a spec cannot score (no gold, a
//! gold with no choice letter); a NaN in a weighted column makes the total
//! NaN, so that the item is left out of group statistics rather than scored
//! as a failure.

mod shaping;
mod statement;

use rayon::prelude::*;
use regex::{Regex, RegexBuilder};
use strum::{EnumString, IntoStaticStr, VariantNames};

use crate::error::{CoreError, Result};
use crate::extract::{find_visible, visible, ExtractOptions, Extracted, Hints};
use crate::parallel;
use crate::verify::{verify_match, VerifyOptions};

pub use shaping::{cosine_scaled, repetition_penalty, Cosine};

/// Below this many items a batch is scored on the calling thread. Verifying
/// one item costs microseconds, so the pool pays off far sooner than for the
/// arithmetic kernels of `parallel::MIN_PARALLEL_LEN`.
pub const MIN_PARALLEL_ITEMS: usize = 64;

/// Compiled regexes above this size are refused (the `regex` crate's
/// matching is linear-time; this bounds its memory).
const REGEX_SIZE_LIMIT: usize = 1 << 21;

/// The kinds of [`Spec`], by name (see `crate::names`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, EnumString, IntoStaticStr, VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum RewardKind {
    Math,
    Exact,
    Choice,
    Format,
    Overlong,
    Cosine,
    Repetition,
}

/// One reward.
#[derive(Debug, Clone)]
pub enum Spec {
    /// 1 when the completion's answer is mathematically equal to the gold.
    Math(VerifyOptions),
    /// 1 when the answer (or the whole completion) equals the gold string.
    Exact {
        /// Compare the extracted answer (parts joined by ", ") instead of the whole text.
        extract: Option<ExtractOptions>,
        case_sensitive: bool,
    },
    /// 1 when the completion's choice letter equals the gold letter.
    Choice(ExtractOptions),
    /// 1 when the regex matches the completion (anchor it with `^…$` for a full match).
    Format(Regex),
    /// DAPO soft overlong punishment of the token length `L` (Yu et al. 2025, eq. 13):
    /// 0 if `L <= max_len - cache_len`, `((max_len - cache_len) - L) / cache_len`
    /// if `L <= max_len`, -1 beyond.
    Overlong { max_len: u32, cache_len: u32 },
    /// Correctness (as [`Spec::Math`]) scaled by the token length on a cosine
    /// schedule (Yeo et al. 2025, "Demystifying Long Chain-of-Thought
    /// Reasoning", Appendix C.1); see [`cosine_scaled`].
    Cosine(Box<Cosine>),
    /// The n-gram repetition penalty of the same paper (Appendix C.2), over
    /// the completion's lower-cased whitespace-separated words; see
    /// [`repetition_penalty`].
    Repetition { ngram: usize, max_penalty: f32 },
}

impl Spec {
    /// A format spec from a pattern; `dot_all` lets `.` match newlines (as
    /// TRL's format reward does with `re.DOTALL`).
    pub fn format(pattern: &str, dot_all: bool) -> Result<Spec> {
        RegexBuilder::new(pattern)
            .dot_matches_new_line(dot_all)
            .size_limit(REGEX_SIZE_LIMIT)
            .dfa_size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map(Spec::Format)
            .map_err(|e| CoreError::InvalidParameter(format!("bad format regex: {e}")))
    }

    /// An overlong spec, checking `0 <= cache_len <= max_len` and `max_len > 0`.
    pub fn overlong(max_len: u32, cache_len: u32) -> Result<Spec> {
        if max_len == 0 || cache_len > max_len {
            return Err(CoreError::InvalidParameter(format!(
                "overlong needs 0 <= cache_len <= max_len and max_len > 0; got max_len={max_len}, cache_len={cache_len}"
            )));
        }
        Ok(Spec::Overlong { max_len, cache_len })
    }

    /// A repetition spec, checking `ngram >= 1` and a finite `max_penalty <= 0`.
    pub fn repetition(ngram: usize, max_penalty: f32) -> Result<Spec> {
        if ngram == 0 || !max_penalty.is_finite() || max_penalty > 0.0 {
            return Err(CoreError::InvalidParameter(format!(
                "repetition needs ngram_size >= 1 and a finite max_penalty <= 0; got ngram_size={ngram}, max_penalty={max_penalty}"
            )));
        }
        Ok(Spec::Repetition { ngram, max_penalty })
    }

    pub fn kind(&self) -> RewardKind {
        match self {
            Spec::Math(_) => RewardKind::Math,
            Spec::Exact { .. } => RewardKind::Exact,
            Spec::Choice(_) => RewardKind::Choice,
            Spec::Format(_) => RewardKind::Format,
            Spec::Overlong { .. } => RewardKind::Overlong,
            Spec::Cosine(_) => RewardKind::Cosine,
            Spec::Repetition { .. } => RewardKind::Repetition,
        }
    }

    /// Whether scoring needs the completions' token lengths.
    pub fn needs_lengths(&self) -> bool {
        matches!(self, Spec::Overlong { .. } | Spec::Cosine(_))
    }

    /// How many bytes of a completion the spec reads at most (`usize::MAX`:
    /// all of it); a longer completion scores as if it had no answer.
    pub fn read_limit(&self) -> usize {
        match self {
            Spec::Math(opts) => opts.extract.max_len,
            Spec::Cosine(c) => c.verify.extract.max_len,
            Spec::Exact {
                extract: Some(opts),
                ..
            }
            | Spec::Choice(opts) => opts.max_len,
            Spec::Exact { extract: None, .. } | Spec::Format(_) | Spec::Repetition { .. } => {
                usize::MAX
            }
            Spec::Overlong { .. } => 0,
        }
    }

    fn needs_gold(&self) -> bool {
        matches!(
            self,
            Spec::Math(_) | Spec::Exact { .. } | Spec::Choice(_) | Spec::Cosine(_)
        )
    }

    /// The reward of one item (NaN when unscorable); `truncated`: the
    /// completion was cut off at the token limit (see
    /// [`crate::extract::Hints::truncated`]).
    pub fn score(
        &self,
        completion: &str,
        gold: Option<&str>,
        length: Option<u32>,
        truncated: bool,
        prompt: Option<&str>,
    ) -> f32 {
        let hints = Hints {
            truncated,
            ..Hints::default()
        };
        let gold = match (self.needs_gold(), gold) {
            (true, None) => return f32::NAN,
            (_, g) => g.unwrap_or(""),
        };
        match self {
            Spec::Math(opts) => {
                // A gold that cannot be extracted or parsed is the dataset's
                // fault, not the model's: unscorable rather than wrong.
                match verify_match(gold, completion, truncated, prompt, opts) {
                    None => f32::NAN,
                    Some(matched) => f32::from(u8::from(matched)),
                }
            }
            Spec::Exact {
                extract,
                case_sensitive,
            } => {
                let pred = match extract {
                    Some(opts) => {
                        let found = visible(completion, opts).ok().and_then(|s| {
                            find_visible(&s, opts, hints)
                                .ok()
                                .filter(|e| !answer_hedged(s.text(), e))
                                .map(|e| e.parts.join(", "))
                        });
                        match found {
                            Some(p) => p,
                            None => return 0.0,
                        }
                    }
                    None => completion.trim().to_owned(),
                };
                let gold = gold.trim();
                let same = if *case_sensitive {
                    pred == gold
                } else {
                    pred.to_lowercase() == gold.to_lowercase()
                };
                f32::from(u8::from(same))
            }
            Spec::Choice(opts) => {
                let Some(want) = choice_letter(gold) else {
                    return f32::NAN;
                };
                let got = visible(completion, opts).ok().and_then(|s| {
                    find_visible(&s, opts, hints)
                        .ok()
                        // A hedge (`(A) or (C)`, `not B`, `A and C`) names no letter.
                        .filter(|e| e.parts.len() == 1 && !answer_hedged(s.text(), e))
                        .and_then(|e| choice_letter(e.parts[0]))
                });
                f32::from(u8::from(got == Some(want)))
            }
            Spec::Format(re) => f32::from(u8::from(re.is_match(completion))),
            Spec::Overlong { max_len, cache_len } => match length {
                Some(l) => overlong_penalty(l, *max_len, *cache_len),
                None => f32::NAN,
            },
            Spec::Cosine(c) => match (
                verify_match(gold, completion, truncated, prompt, &c.verify),
                length,
            ) {
                (Some(correct), Some(l)) => c.score(correct, l),
                _ => f32::NAN,
            },
            Spec::Repetition { ngram, max_penalty } => {
                repetition_penalty(completion, *ngram, *max_penalty)
            }
        }
    }
}

/// Whether an extracted answer is taken back by its own words (the
/// extraction's hedge) or by the words around it on its line (`A and C` cut
/// to `C`, `C or D`, `maybe C`, `C?`; see `statement`).
fn answer_hedged(completion: &str, e: &Extracted<'_>) -> bool {
    if e.hedge.is_some() {
        return true;
    }
    e.parts.iter().any(|part| {
        let Some(at) = statement::offset_in(completion, part) else {
            return false;
        };
        match choice_letter_at(part) {
            Some((letter, k)) => {
                let start = at + k;
                statement::hedged(completion, start, start + 1, Some(letter as u8))
            }
            None => statement::hedged(completion, at, at + part.len(), None),
        }
    })
}

/// DAPO soft overlong punishment; see [`Spec::Overlong`].
pub fn overlong_penalty(length: u32, max_len: u32, cache_len: u32) -> f32 {
    let expected = f64::from(max_len - cache_len.min(max_len));
    let l = f64::from(length);
    if l <= expected {
        0.0
    } else if length <= max_len {
        ((expected - l) / f64::from(cache_len)) as f32
    } else {
        -1.0
    }
}

/// The choice letter of an answer: `C`, `(C)`, `C.`, `C)`, `\text{(C)}`,
/// `$C$`, `**C**`, `(C) 42` (a letter followed by its option text). Case is
/// ignored; anything else (`CD`, `42`) has no letter.
pub fn choice_letter(answer: &str) -> Option<char> {
    choice_letter_at(answer).map(|(c, _)| c)
}

/// [`choice_letter`] and the byte offset of the letter in `answer`.
fn choice_letter_at(answer: &str) -> Option<(char, usize)> {
    let mut s = answer.trim();
    loop {
        let before = s.len();
        for (open, close) in [
            ("$", "$"),
            ("**", "**"),
            ("\\text{", "}"),
            ("\\textbf{", "}"),
            ("\\mathrm{", "}"),
        ] {
            if let Some(inner) = s.strip_prefix(open).and_then(|r| r.strip_suffix(close)) {
                s = inner.trim();
            }
        }
        s = s.trim_end_matches(['.', ' ']);
        if s.len() == before {
            break;
        }
    }
    let s = s.strip_prefix('(').unwrap_or(s);
    let mut chars = s.chars();
    let letter = chars.next().filter(char::is_ascii_alphabetic)?;
    let rest = chars.as_str();
    let ends = rest.is_empty()
        || rest.starts_with([')', '.', ':'])
        || rest.starts_with(char::is_whitespace);
    // `s` is a slice of `answer`: the letter's offset is where `s` starts.
    let at = s.as_ptr() as usize - answer.as_ptr() as usize;
    ends.then(|| (letter.to_ascii_uppercase(), at))
}

/// The gold of each item: one for all, or one per item (`None`: no gold).
#[derive(Debug, Clone, Copy)]
pub enum Golds<'a> {
    One(Option<&'a str>),
    Each(&'a [Option<&'a str>]),
}

impl<'a> Golds<'a> {
    fn get(&self, i: usize) -> Option<&'a str> {
        match *self {
            Golds::One(g) => g,
            Golds::Each(gs) => gs[i],
        }
    }
}

/// Several weighted specs.
#[derive(Debug, Clone, Default)]
pub struct RewardSet {
    pub specs: Vec<(Spec, f32)>,
}

/// The weighted total and one column per spec, each `[N]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Scores {
    pub total: Vec<f32>,
    pub columns: Vec<Vec<f32>>,
}

impl RewardSet {
    /// Score a batch. `golds`, `lengths` and `truncated` must have one entry
    /// per completion; `lengths` (tokens) is required by overlong specs only;
    /// `truncated` marks completions cut off at the token limit; `prompts`
    /// are what the completions answer, when the caller has them (the math
    /// specs refuse an expression copied from its prompt).
    pub fn score(
        &self,
        completions: &[&str],
        golds: Golds<'_>,
        lengths: Option<&[u32]>,
        truncated: Option<&[bool]>,
        prompts: Option<&[&str]>,
    ) -> Result<Scores> {
        let n = completions.len();
        if let Some(t) = truncated {
            check_len("truncated", t.len(), n)?;
        }
        if let Some(p) = prompts {
            check_len("prompts", p.len(), n)?;
        }
        if let Golds::Each(gs) = golds {
            check_len("golds", gs.len(), n)?;
        }
        if let Some(ls) = lengths {
            check_len("lengths", ls.len(), n)?;
        } else if let Some((s, _)) = self.specs.iter().find(|(s, _)| s.needs_lengths()) {
            let kind: &str = s.kind().into();
            return Err(CoreError::InvalidParameter(format!(
                "the {kind} reward needs the token lengths of the completions (lengths=...)"
            )));
        }
        for (i, (_, w)) in self.specs.iter().enumerate() {
            if !w.is_finite() {
                return Err(CoreError::NonFinite {
                    what: "weights",
                    index: i,
                    value: f64::from(*w),
                });
            }
        }
        let columns: Vec<Vec<f32>> = self
            .specs
            .iter()
            .map(|(spec, _)| {
                map_items(n, |i| {
                    let cut = truncated.is_some_and(|t| t[i]);
                    let prompt = prompts.map(|p| p[i]);
                    spec.score(
                        completions[i],
                        golds.get(i),
                        lengths.map(|l| l[i]),
                        cut,
                        prompt,
                    )
                })
            })
            .collect();
        let total = (0..n).map(|i| self.total_at(&columns, i)).collect();
        Ok(Scores { total, columns })
    }

    fn total_at(&self, columns: &[Vec<f32>], i: usize) -> f32 {
        self.specs
            .iter()
            .zip(columns)
            .filter(|((_, w), _)| *w != 0.0)
            .map(|((_, w), col)| w * col[i])
            .sum()
    }

    /// The most bytes of a completion any spec reads (`usize::MAX`: all).
    pub fn read_limit(&self) -> usize {
        self.specs
            .iter()
            .map(|(s, _)| s.read_limit())
            .max()
            .unwrap_or(0)
    }

    /// [`RewardSet::score`] where `None` marks a completion the caller could
    /// not read (not valid Unicode, or longer than [`RewardSet::read_limit`]
    /// and refused unread): it scores as an empty completion that earns
    /// nothing, i.e. 0 in every column (NaN where the spec cannot score the
    /// item, the overlong penalty where lengths are given).
    pub fn score_texts(
        &self,
        completions: &[Option<&str>],
        golds: Golds<'_>,
        lengths: Option<&[u32]>,
        truncated: Option<&[bool]>,
        prompts: Option<&[&str]>,
    ) -> Result<Scores> {
        let texts: Vec<&str> = completions.iter().map(|c| c.unwrap_or("")).collect();
        let mut scores = self.score(&texts, golds, lengths, truncated, prompts)?;
        for (i, _) in completions.iter().enumerate().filter(|(_, c)| c.is_none()) {
            for col in &mut scores.columns {
                if col[i] > 0.0 {
                    col[i] = 0.0;
                }
            }
            scores.total[i] = self.total_at(&scores.columns, i);
        }
        Ok(scores)
    }
}

fn check_len(what: &'static str, len: usize, n: usize) -> Result<()> {
    if len == n {
        Ok(())
    } else {
        Err(CoreError::LengthMismatch {
            left: what,
            left_len: len,
            right: "completions",
            right_len: n,
        })
    }
}

/// `f(0..n)` in order, on the pool when the batch is big enough.
pub fn map_items<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync + Send) -> Vec<T> {
    if n < MIN_PARALLEL_ITEMS || parallel::num_threads() == 1 {
        return (0..n).map(f).collect();
    }
    // Small chunks: the cost of one item varies a lot (a long completion, a
    // parse that hits its budget), so work-stealing needs many pieces.
    parallel::pool().install(|| (0..n).into_par_iter().with_min_len(8).map(f).collect())
}

/// `verify(golds[i], preds[i])` for a batch, as 1.0 / 0.0 (`None` gold: 0);
/// `truncated[i]` marks a completion cut off at the token limit.
pub fn verify_batch(
    golds: Golds<'_>,
    preds: &[&str],
    truncated: Option<&[bool]>,
    prompts: Option<&[&str]>,
    opts: &VerifyOptions,
) -> Result<Vec<f32>> {
    if let Golds::Each(gs) = golds {
        check_len("golds", gs.len(), preds.len())?;
    }
    if let Some(t) = truncated {
        check_len("truncated", t.len(), preds.len())?;
    }
    if let Some(p) = prompts {
        check_len("prompts", p.len(), preds.len())?;
    }
    Ok(map_items(preds.len(), |i| {
        let cut = truncated.is_some_and(|t| t[i]);
        let prompt = prompts.map(|p| p[i]);
        let matched = golds
            .get(i)
            .is_some_and(|g| verify_match(g, preds[i], cut, prompt, opts) == Some(true));
        f32::from(u8::from(matched))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::verify;

    #[test]
    fn overlong_matches_the_dapo_formula() {
        // Lmax = 20, Lcache = 4: free up to 16, then linear down to -1 at 20.
        let want = [
            (0u32, 0.0f32),
            (16, 0.0),
            (17, -0.25),
            (18, -0.5),
            (20, -1.0),
            (21, -1.0),
        ];
        for (l, w) in want {
            assert_eq!(overlong_penalty(l, 20, 4), w, "L={l}");
        }
        assert_eq!(overlong_penalty(20, 20, 0), 0.0);
        assert_eq!(overlong_penalty(21, 20, 0), -1.0);
        assert!(Spec::overlong(10, 11).is_err());
        assert!(Spec::overlong(0, 0).is_err());
    }

    #[test]
    fn choice_letters() {
        for (s, want) in [
            ("C", Some('C')),
            ("(c)", Some('C')),
            ("B.", Some('B')),
            ("\\text{(D)}", Some('D')),
            ("$A$", Some('A')),
            ("**E**", Some('E')),
            ("(B) 42", Some('B')),
            ("CD", None),
            ("42", None),
            ("", None),
        ] {
            assert_eq!(choice_letter(s), want, "{s:?}");
        }
    }

    #[test]
    fn format_exact_choice_and_weights() {
        let set = RewardSet {
            specs: vec![
                (
                    Spec::format(r"^<think>.*?</think>\s*<answer>.*?</answer>$", true)
                        .expect("valid"),
                    0.5,
                ),
                (
                    Spec::Exact {
                        extract: Some(ExtractOptions::default()),
                        case_sensitive: false,
                    },
                    1.0,
                ),
                (Spec::Choice(ExtractOptions::default()), 2.0),
            ],
        };
        let completions = [
            "<think>a\nb</think>\n<answer>B</answer>",
            "<think>a</think> the answer is b",
            "no format, no answer",
        ];
        let golds = [Some("b"), Some("B"), None];
        let s = set
            .score(&completions, Golds::Each(&golds), None, None, None)
            .expect("scored");
        assert_eq!(s.columns[0], vec![1.0, 0.0, 0.0]);
        assert_eq!(s.columns[1][..2], [1.0, 1.0]);
        assert_eq!(s.columns[2][..2], [1.0, 1.0]);
        assert!(s.columns[2][2].is_nan() && s.columns[1][2].is_nan());
        assert_eq!(s.columns[0][2], 0.0);
        assert_eq!(s.total[..2], [3.5, 3.0]);
        assert!(s.total[2].is_nan());
    }

    #[test]
    fn choice_and_exact_pay_no_hedged_letter() {
        let set = RewardSet {
            specs: vec![
                (Spec::Choice(ExtractOptions::default()), 1.0),
                (
                    Spec::Exact {
                        extract: Some(ExtractOptions::default()),
                        case_sensitive: false,
                    },
                    1.0,
                ),
            ],
        };
        let unpaid = [
            "The answer is not C",
            "The answer is C or D",
            "The answer is A and C",
            "The answer is (B) and (C)",
            "The answer is B/C",
            "The answer is C, or maybe D",
            "Answer: C & D",
            "Answer: maybe C",
            "Answer: C?",
            "Answer: C. Or maybe D.",
            "\\boxed{C} or D",
            "A and C",
        ];
        for text in unpaid {
            let s = set
                .score(&[text], Golds::One(Some("C")), None, None, None)
                .expect("scored");
            assert_eq!(s.total, vec![0.0], "{text}");
        }
        let paid = [
            "The answer is C",
            "Answer: (C) 4.2 m",
            "The answer is C. Options A and B are wrong.",
            "<answer>C</answer>",
            "\\boxed{c}",
        ];
        for text in paid {
            let s = set
                .score(&[text], Golds::One(Some("C")), None, None, None)
                .expect("scored");
            assert_eq!(s.columns[0], vec![1.0], "{text}");
        }
    }

    #[test]
    fn cosine_and_repetition_specs() {
        let cosine =
            Cosine::new(VerifyOptions::default(), 100, [-1.0, -0.5, 0.5, 1.0]).expect("valid");
        let set = RewardSet {
            specs: vec![
                (Spec::Cosine(Box::new(cosine)), 1.0),
                (Spec::repetition(2, -1.0).expect("valid"), 0.5),
            ],
        };
        let golds = [Some("3"), Some("3"), Some("")];
        let s = set
            .score(
                &["\\boxed{3}", "\\boxed{4} a a a a a", "\\boxed{3}"],
                Golds::Each(&golds),
                Some(&[0, 100, 10]),
                None,
                None,
            )
            .expect("scored");
        assert_eq!(s.columns[0][..2], [1.0, -0.5]);
        assert!(s.columns[0][2].is_nan(), "an unusable gold is unscorable");
        assert_eq!(s.columns[1], vec![0.0, -0.6, 0.0]);
        assert!(set
            .score(&["a"], Golds::One(Some("3")), None, None, None)
            .is_err());
        assert!(Spec::repetition(0, -1.0).is_err());
        assert!(Spec::repetition(2, 0.5).is_err());
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(Spec::format("(", true).is_err());
        let set = RewardSet {
            specs: vec![(Spec::overlong(10, 2).expect("valid"), 1.0)],
        };
        assert!(set
            .score(&["a"], Golds::One(None), None, None, None)
            .is_err());
        assert!(set
            .score(&["a"], Golds::One(None), Some(&[1, 2]), None, None)
            .is_err());
        assert!(set
            .score(
                &["a", "b"],
                Golds::Each(&[Some("x")]),
                Some(&[1, 2]),
                None,
                None
            )
            .is_err());
        let s = set
            .score(&["a", "b"], Golds::One(None), Some(&[9, 11]), None, None)
            .expect("scored");
        assert_eq!(s.total, vec![-0.5, -1.0]);
    }

    #[test]
    fn a_prompt_refuses_its_own_expression_in_a_batch() {
        let golds = [Some("164"), Some("164"), Some("164")];
        let preds = ["\\boxed{79+85}", "\\boxed{164}", "\\boxed{80 + 84}"];
        let prompts = ["What is 79 + 85?"; 3];
        let o = VerifyOptions::default();
        let with = verify_batch(Golds::Each(&golds), &preds, None, Some(&prompts), &o);
        assert_eq!(with.expect("verified"), vec![0.0, 1.0, 1.0]);
        let without = verify_batch(Golds::Each(&golds), &preds, None, None, &o);
        assert_eq!(without.expect("verified"), vec![1.0, 1.0, 1.0]);
        assert!(verify_batch(Golds::Each(&golds), &preds, None, Some(&prompts[..2]), &o).is_err());
    }

    #[test]
    fn math_reward_and_verify_batch() {
        let set = RewardSet {
            specs: vec![(Spec::Math(VerifyOptions::default()), 1.0)],
        };
        let preds = ["\\boxed{\\frac{1}{2}}", "so 0.5", "\\boxed{3}", "x"];
        let s = set
            .score(&preds, Golds::One(Some("\\frac12")), None, None, None)
            .expect("scored");
        assert_eq!(s.total, vec![1.0, 1.0, 0.0, 0.0]);
        let s = set
            .score(&preds[..1], Golds::One(Some("")), None, None, None)
            .expect("scored");
        assert!(s.total[0].is_nan(), "an empty gold is unscorable");
        let golds = [Some("3"), None];
        let v = verify_batch(
            Golds::Each(&golds),
            &["\\boxed{3}", "3"],
            None,
            None,
            &VerifyOptions::default(),
        )
        .expect("verified");
        assert_eq!(v, vec![1.0, 0.0]);
        assert!(verify_batch(
            Golds::Each(&golds),
            &["3"],
            None,
            None,
            &VerifyOptions::default()
        )
        .is_err());
    }

    #[test]
    fn parallel_and_serial_agree() {
        let set = RewardSet {
            specs: vec![(Spec::format(r"\d{3}", false).expect("valid"), 1.0)],
        };
        let texts: Vec<String> = (0..1000).map(|i| format!("x{}", i * 7)).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let s = set
            .score(&refs, Golds::One(None), None, None, None)
            .expect("scored");
        let want: Vec<f32> = (0..1000)
            .map(|i| if i * 7 >= 100 { 1.0 } else { 0.0 })
            .collect();
        assert_eq!(s.total, want);
    }

    #[test]
    fn an_unread_completion_earns_nothing() {
        let set = RewardSet {
            specs: vec![
                (Spec::Math(VerifyOptions::default()), 1.0),
                (Spec::format("^$", false).expect("valid"), 1.0),
                (Spec::overlong(8, 4).expect("valid"), 0.5),
            ],
        };
        let s = set
            .score_texts(
                &[None, Some("\\boxed{3}")],
                Golds::One(Some("3")),
                Some(&[6, 6]),
                None,
                None,
            )
            .expect("scored");
        // The format `^$` would pay an empty text: an unread one gets 0.
        assert_eq!(
            s.columns,
            vec![vec![0.0, 1.0], vec![0.0, 0.0], vec![-0.5, -0.5]]
        );
        assert_eq!(s.total, vec![-0.25, 0.75]);
        let s = set
            .score_texts(&[None], Golds::One(Some("")), Some(&[1]), None, None)
            .expect("scored");
        assert!(
            s.columns[0][0].is_nan(),
            "an unusable gold stays unscorable"
        );
        assert_eq!(set.read_limit(), usize::MAX);
        let math_only = RewardSet {
            specs: vec![(Spec::Math(VerifyOptions::default()), 1.0)],
        };
        assert_eq!(math_only.read_limit(), crate::extract::DEFAULT_MAX_LEN);
    }

    #[test]
    fn an_unread_side_is_a_non_match_with_its_reason() {
        use crate::verify::{verify_text, Unread};
        let o = VerifyOptions::default();
        let v = verify_text(Ok("3"), Err(Unread::NotUnicode), false, None, &o);
        assert_eq!(
            (v.matched, v.reason.as_str(), v.gold.as_deref(), v.pred),
            (false, "not valid unicode", Some("3"), None)
        );
        let v = verify_text(Err(Unread::NotUnicode), Ok("3"), false, None, &o);
        assert_eq!(
            (v.matched, v.reason.as_str()),
            (false, "not valid unicode: gold")
        );
        let v = verify_text(Ok(""), Err(Unread::NotUnicode), false, None, &o);
        assert_eq!(v.reason, "no gold answer", "the gold's problem comes first");
        // The reasons of a text refused unread are those of one read in full.
        let long = "1".repeat(o.extract.max_len + 1);
        let max = o.extract.max_len;
        fn unread(t: &str, max: usize) -> crate::verify::Text<'_> {
            if t.len() > max {
                Err(Unread::TooLong)
            } else {
                Ok(t)
            }
        }
        for (g, p) in [("3", long.as_str()), (long.as_str(), "3")] {
            let read = verify(g, p, &o);
            assert_eq!(
                verify_text(unread(g, max), unread(p, max), false, None, &o),
                read
            );
        }
    }
}
