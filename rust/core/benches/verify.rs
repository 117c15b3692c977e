//! Answer extraction and verification of 2,000-character completions, and
//! batch scoring across the pool.
#![allow(clippy::unwrap_used)] // a bench may panic on a bug

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use grpo_fast_core::extract::{extract_answer, ExtractOptions};
use grpo_fast_core::reward::{verify_batch, Golds};
use grpo_fast_core::verify::{verify, VerifyOptions};

const WORDS: [&str; 12] = [
    "we", "first", "note", "that", "the", "sum", "of", "terms", "equals", "product", "so",
    "dividing",
];

/// A completion of about `len` bytes (prose, inline math, numbers) ending in
/// a boxed fraction, and its gold. Deterministic (an LCG).
fn completion(seed: u64, len: usize) -> (String, String) {
    let mut x = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    let mut next = move || {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (x >> 33) as usize
    };
    let mut s = String::with_capacity(len + 64);
    while s.len() < len - 40 {
        match next() % 10 {
            0 => s.push_str(&format!(
                "${} \\cdot {} = x_{}$ ",
                next() % 99,
                next() % 99,
                next() % 9
            )),
            1 => s.push_str(&format!("{} ", next() % 10_000)),
            _ => {
                s.push_str(WORDS[next() % WORDS.len()]);
                s.push(' ');
            }
        }
    }
    let (a, b) = (next() % 999 + 1, next() % 999 + 1);
    s.push_str(&format!(
        "Therefore the answer is $\\boxed{{\\frac{{{a}}}{{{b}}}}}$."
    ));
    (s, format!("\\frac{{{a}}}{{{b}}}"))
}

fn bench(c: &mut Criterion) {
    let items: Vec<(String, String)> = (0..256).map(|i| completion(i, 2_000)).collect();
    let eopts = ExtractOptions::default();
    let vopts = VerifyOptions::default();
    let mut g = c.benchmark_group("2000-char completion");
    g.throughput(Throughput::Elements(items.len() as u64));
    g.bench_function("extract_answer", |b| {
        b.iter(|| {
            items
                .iter()
                .filter(|(p, _)| extract_answer(p, &eopts).is_some())
                .count()
        })
    });
    g.bench_function("verify", |b| {
        b.iter(|| {
            items
                .iter()
                .filter(|(p, gold)| verify(gold, p, &vopts).matched)
                .count()
        })
    });
    g.finish();

    let n = 8_192;
    let many: Vec<(String, String)> = (0..n).map(|i| completion(i as u64, 2_000)).collect();
    let preds: Vec<&str> = many.iter().map(|(p, _)| p.as_str()).collect();
    let golds: Vec<Option<&str>> = many.iter().map(|(_, g)| Some(g.as_str())).collect();
    let mut g = c.benchmark_group("verify_batch 8192 x 2000 chars");
    g.throughput(Throughput::Elements(n as u64));
    g.sample_size(10);
    g.bench_function("pool", |b| {
        b.iter(|| verify_batch(Golds::Each(&golds), &preds, None, None, &vopts).unwrap())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
