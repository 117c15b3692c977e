//! The names that select behaviour (estimators, scales, extraction rules,
//! reward kinds) are the `snake_case` names of their enums, derived by
//! strum: each table is written once, as the enum, and the binding exports
//! the derived lists to Python (`grpo_fast.names`).

use std::str::FromStr;

use strum::VariantNames;

use crate::error::{CoreError, Result};

/// The variant of `T` called `name` (an alias where the enum declares one).
pub fn parse<T: FromStr + VariantNames>(what: &'static str, name: &str) -> Result<T> {
    name.parse().map_err(|_| CoreError::UnknownName {
        what,
        got: name.to_owned(),
        expected: T::VARIANTS,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advantage::{Estimator, Scale};
    use crate::extract::Rule;
    use crate::reward::RewardKind;
    use crate::steps::SplitKind;

    #[test]
    fn names_are_the_documented_ones() {
        assert_eq!(
            Estimator::VARIANTS,
            [
                "grpo",
                "rloo",
                "reinforce_pp_baseline",
                "grpo_passk",
                "remax",
                "opo",
                "gpg"
            ]
        );
        assert_eq!(Scale::VARIANTS, ["group", "batch", "none"]);
        assert_eq!(
            Rule::VARIANTS,
            [
                "boxed",
                "answer_tag",
                "final_answer",
                "gsm8k",
                "answer_colon",
                "answer_is",
                "last_value",
                "bold",
                "choice",
                "math_span",
                "last_number",
                "bare"
            ]
        );
        assert_eq!(
            RewardKind::VARIANTS,
            [
                "math",
                "exact",
                "choice",
                "format",
                "overlong",
                "cosine",
                "repetition"
            ]
        );
        assert_eq!(
            SplitKind::VARIANTS,
            ["lines", "paragraphs", "markers", "regex"]
        );
    }

    #[test]
    fn aliases_parse_to_the_canonical_variant() {
        for alias in [
            "reinforce_pp_baseline",
            "reinforce_plus_plus_baseline",
            "reinforce++-baseline",
        ] {
            assert_eq!(
                parse::<Estimator>("estimator", alias),
                Ok(Estimator::ReinforcePpBaseline)
            );
        }
        let err = parse::<Scale>("scale", "nope").expect_err("unknown");
        assert_eq!(
            err.to_string(),
            "unknown scale 'nope'; expected one of group, batch, none"
        );
        for (i, name) in Rule::VARIANTS.iter().enumerate() {
            let rule: Rule = parse("extraction rule", name).expect("own name");
            assert_eq!(rule.name(), *name);
            assert_eq!(Rule::ALL[i], rule);
        }
    }
}
