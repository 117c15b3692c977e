//! Any bytes, split at the first NUL into a gold and a completion: extraction,
//! parsing and comparison must return (no panic, no hang, no huge allocation)
//! and keep their invariants. `make fuzz` starts it from the seeds of
//! `scripts/fuzz_seeds.py` (conformance pairs and hostile shapes up to the
//! 256 KiB limit) and lets inputs be that long.
#![no_main]

use grpo_fast_core::extract::{extract_answer, extract_gold, ExtractOptions};
use grpo_fast_core::math::{self, ParseOptions};
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
});
