//! The step checker on any text: it returns, its spans are ordered, non-empty
//! and inside the text, and an arithmetic claim it decides agrees with integer
//! arithmetic done here.
#![allow(clippy::unwrap_used)] // a test may panic

use grpo_fast_core::steps::{self, Split, SplitKind, StepOptions, CORRECT, UNCHECKED, WRONG};
use proptest::prelude::*;

fn any_text() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "0",
        "1",
        "7",
        "42",
        "999",
        "+",
        "-",
        "*",
        "/",
        "^",
        "=",
        "==",
        "(",
        ")",
        "{",
        "}",
        "\\frac",
        "\\cdot",
        "\\sqrt",
        "\\text{ cm}",
        "x",
        "of",
        "so",
        " ",
        "  ",
        "\n",
        "\n\n",
        ",",
        ".",
        ":",
        "$",
        "%",
        "!",
        "é",
        "漢",
        "😀",
        "Step 2:",
        "**",
        "\\",
        "½",
        "\u{1c}",
        "1,000",
        "0.5",
    ]);
    prop::collection::vec(pieces, 0..60).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn spans_are_ordered_and_inside(text in any_text(), split in 0usize..4) {
        let split = match split {
            0 => Split::Lines,
            1 => Split::Paragraphs,
            2 => Split::Markers,
            _ => Split::new(SplitKind::Regex, Some(r",\s*")).unwrap(),
        };
        let opts = StepOptions { split, ..StepOptions::default() };
        let n = text.chars().count();
        let mut last = 0;
        for s in steps::check(&text, &opts) {
            prop_assert!(last <= s.start && s.start < s.end && s.end <= n);
            prop_assert!([CORRECT, WRONG, UNCHECKED].contains(&s.label));
            last = s.end;
        }
    }

    #[test]
    fn sums_agree_with_integer_arithmetic(a in 0u64..100_000, b in 0u64..100_000, off in -2i64..3) {
        let c = (a + b) as i64 + off;
        let text = format!("so {a} + {b} = {c}, done");
        let got = steps::check(&text, &StepOptions::default());
        prop_assert_eq!(got.len(), 1);
        prop_assert_eq!(got[0].label, if off == 0 { CORRECT } else { WRONG });
    }
}
