//! Length and repetition shaping of Yeo et al. 2025, "Demystifying Long
//! Chain-of-Thought Reasoning in LLMs" (Appendix C): the cosine length-scaled
//! correctness reward and the n-gram repetition penalty, as open-r1 and TRL
//! use them next to an accuracy reward.

use std::collections::HashSet;

use crate::error::{CoreError, Result};
use crate::verify::VerifyOptions;

/// The cosine length-scaled reward: correctness by [`VerifyOptions`], the
/// value by [`cosine_scaled`].
#[derive(Debug, Clone)]
pub struct Cosine {
    pub verify: VerifyOptions,
    /// `L_max`: the length (tokens) at which the schedule reaches its far end.
    pub max_len: u32,
    pub min_value_wrong: f32,
    pub max_value_wrong: f32,
    pub min_value_correct: f32,
    pub max_value_correct: f32,
}

impl Cosine {
    /// Checks `max_len > 0` and finite values.
    pub fn new(verify: VerifyOptions, max_len: u32, values: [f32; 4]) -> Result<Cosine> {
        if max_len == 0 {
            return Err(CoreError::InvalidParameter(
                "cosine needs max_length > 0".into(),
            ));
        }
        if let Some(v) = values.iter().find(|v| !v.is_finite()) {
            return Err(CoreError::InvalidParameter(format!(
                "cosine values must be finite, not {v}"
            )));
        }
        let [min_value_wrong, max_value_wrong, min_value_correct, max_value_correct] = values;
        Ok(Cosine {
            verify,
            max_len,
            min_value_wrong,
            max_value_wrong,
            min_value_correct,
            max_value_correct,
        })
    }

    /// The reward of a completion of `length` tokens that is `correct` or not.
    pub fn score(&self, correct: bool, length: u32) -> f32 {
        // A wrong answer runs from min_value_wrong (shortest) to
        // max_value_wrong (longest): the bounds swap places in the formula.
        let (short, long) = if correct {
            (self.max_value_correct, self.min_value_correct)
        } else {
            (self.min_value_wrong, self.max_value_wrong)
        };
        cosine_scaled(length, self.max_len, short, long)
    }
}

/// `long + (short - long) * (1 + cos(pi * min(L / L_max, 1))) / 2`: `short` at
/// length 0, `long` at `L_max` and beyond (clamped, so that the periodic
/// cosine never climbs back for a longer completion).
pub fn cosine_scaled(length: u32, max_len: u32, short: f32, long: f32) -> f32 {
    let progress = (f64::from(length) / f64::from(max_len.max(1))).min(1.0);
    let c = (progress * std::f64::consts::PI).cos();
    let (short, long) = (f64::from(short), f64::from(long));
    (long + 0.5 * (short - long) * (1.0 + c)) as f32
}

/// `max_penalty * (1 - unique / total)` over the n-grams of the completion's
/// lower-cased whitespace-separated words; 0 for a text of fewer than
/// `ngram` words (the empty text included) or without a repeated n-gram.
pub fn repetition_penalty(text: &str, ngram: usize, max_penalty: f32) -> f32 {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let n = ngram.max(1);
    if words.len() < n {
        return 0.0;
    }
    let total = words.len() - n + 1;
    let unique: HashSet<&[&str]> = words.windows(n).collect();
    if unique.len() == total {
        return 0.0;
    }
    let scaling = 1.0 - unique.len() as f64 / total as f64;
    (scaling * f64::from(max_penalty)) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_ends_and_middle() {
        let c = Cosine::new(VerifyOptions::default(), 100, [-1.0, -0.5, 0.5, 1.0]).expect("valid");
        assert_eq!(c.score(true, 0), 1.0);
        assert_eq!(c.score(true, 100), 0.5);
        assert_eq!(c.score(true, 1000), 0.5, "clamped beyond max_len");
        assert!((c.score(true, 50) - 0.75).abs() < 1e-6);
        assert_eq!(c.score(false, 0), -1.0);
        assert_eq!(c.score(false, 100), -0.5);
        assert!((c.score(false, 50) + 0.75).abs() < 1e-6);
        assert!(Cosine::new(VerifyOptions::default(), 0, [0.0; 4]).is_err());
        assert!(Cosine::new(VerifyOptions::default(), 1, [f32::NAN, 0.0, 0.0, 0.0]).is_err());
    }

    #[test]
    fn repetition_counts_word_ngrams() {
        // 5 words, 3 bigrams... "a a a a a": 4 bigrams, 1 unique.
        assert_eq!(repetition_penalty("a a a a a", 2, -1.0), -0.75);
        assert_eq!(
            repetition_penalty("A a\ta\na A", 2, -1.0),
            -0.75,
            "case and spacing"
        );
        assert_eq!(repetition_penalty("one two three", 3, -1.0), 0.0);
        assert_eq!(
            repetition_penalty("one two", 3, -1.0),
            0.0,
            "fewer words than n"
        );
        assert_eq!(repetition_penalty("", 1, -1.0), 0.0);
        assert_eq!(repetition_penalty("x y x y", 1, -0.5), -0.25);
    }
}
