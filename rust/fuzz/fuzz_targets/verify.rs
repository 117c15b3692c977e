//! Any bytes, split at the first NUL into a gold and a completion: extraction,
//! parsing, comparison, every reward kind of `score_batch` and the step
//! checker must return (no panic, no hang, no huge allocation) and keep their
//! invariants. `make fuzz` starts it from the
//! seeds of `scripts/fuzz_seeds.py` (conformance pairs and hostile shapes up to
//! the 256 KiB limit) and lets inputs be that long.
#![no_main]

use grpo_fast_core::extract::{extract_answer, extract_gold, ExtractOptions};
use grpo_fast_core::math::{self, ParseOptions};
use grpo_fast_core::reward::{Cosine, Golds, RewardSet, Spec};
use grpo_fast_core::steps::{self, StepOptions};
use grpo_fast_core::verify::{verify, VerifyOptions};
use libfuzzer_sys::fuzz_target;

fn within(part: &str, text: &str) -> bool {
    let (p, t) = (part.as_ptr() as usize, text.as_ptr() as usize);
    p >= t && p + part.len() <= t + text.len()
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (gold, pred) = text.split_once('\0').unwrap_or((&text, &text));
    let eopts = ExtractOptions::default();
    for (t, e) in [
        (pred, extract_answer(pred, &eopts)),
        (gold, extract_gold(gold, &eopts)),
    ] {
        if let Some(e) = e {
            assert!(!e.parts.is_empty());
            for part in &e.parts {
                assert!(within(part, t), "a part outside its text");
                let _ = math::parse(part, &ParseOptions::default());
            }
        }
    }
    let opts = VerifyOptions::default();
    let v = verify(gold, pred, &opts);
    assert_eq!(v.matched, v.reason == "match");
    // With the reasoning read too (`think: false`), where there is any.
    if pred.contains("think>") {
        let mut whole = VerifyOptions::default();
        whole.extract.think = false;
        let w = verify(gold, pred, &whole);
        assert_eq!(w.matched, w.reason == "match");
    }
    // The canonical rendering of a parsed gold goes through the verifier
    // again (must return, like any text).
    if let Some(g) = v.gold {
        let _ = verify(&g, &format!("\\boxed{{{g}}}"), &opts);
    }
    // Every reward kind on the pair (the gold as the prompt too): a score in
    // its range, or NaN where the spec cannot score the item (a choice gold
    // that is no letter).
    let rewards = reward_set();
    let lengths = [pred.len().min(u32::MAX as usize) as u32];
    for (golds, prompts) in [
        (Golds::One(Some(gold)), None),
        (Golds::One(Some(gold)), Some(&[gold][..])),
        (Golds::One(None), None),
    ] {
        let s = rewards
            .score(&[pred], golds, Some(&lengths), Some(&[true][..]), prompts)
            .expect("one of each: lengths agree");
        for (col, (spec, _)) in s.columns.iter().zip(&rewards.specs) {
            let v = col[0];
            let (lo, hi) = match spec {
                Spec::Overlong { .. } | Spec::Repetition { .. } => (-1.0, 0.0),
                Spec::Cosine(_) => (-1.0, 1.0),
                _ => (0.0, 1.0),
            };
            assert!(v.is_nan() || (lo..=hi).contains(&v), "{spec:?}: {v}");
        }
    }
    // The step checker: ordered, non-empty spans inside the text.
    let n = text.chars().count();
    let mut last = 0;
    for s in steps::check(&text, &StepOptions::default()) {
        assert!(last <= s.start && s.start < s.end && s.end <= n);
        assert!([steps::CORRECT, steps::WRONG, steps::UNCHECKED].contains(&s.label));
        last = s.end;
    }
});

/// One spec of every kind (the exact match with and without extraction, with
/// and without case), built once.
fn reward_set() -> &'static RewardSet {
    static SET: std::sync::OnceLock<RewardSet> = std::sync::OnceLock::new();
    SET.get_or_init(|| {
        let v = VerifyOptions::default;
        let e = ExtractOptions::default;
        let specs = vec![
            Spec::Math(v()),
            Spec::Exact { extract: Some(e()), case_sensitive: false },
            Spec::Exact { extract: None, case_sensitive: true },
            Spec::Choice(e()),
            Spec::format(r"^<think>.*?</think>\s*<answer>.*?</answer>$", true).expect("a valid regex"),
            Spec::overlong(512, 128).expect("valid lengths"),
            Spec::Cosine(Box::new(
                Cosine::new(v(), 512, [-1.0, -0.5, 0.5, 1.0]).expect("valid values"),
            )),
            Spec::repetition(3, -1.0).expect("valid values"),
        ];
        RewardSet { specs: specs.into_iter().map(|s| (s, 1.0)).collect() }
    })
}
