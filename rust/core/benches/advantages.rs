//! Grouping and GRPO advantages at training-batch scale.
#![allow(clippy::unwrap_used)] // a bench may panic on a bug

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use grpo_fast_core::advantage::{self, Params};
use grpo_fast_core::group;

fn rewards(n: usize) -> Vec<f32> {
    // A cheap deterministic mix of 0/1 rewards and partial credit.
    (0..n)
        .map(|i| ((i.wrapping_mul(2_654_435_761) >> 7) % 5) as f32 / 4.0)
        .collect()
}

fn bench(c: &mut Criterion) {
    const G: usize = 16;
    let mut group_bench = c.benchmark_group("grpo");
    for &n in &[1_024usize, 65_536, 1_048_576] {
        let r = rewards(n);
        let ids: Vec<i64> = (0..n as i64).map(|i| i / G as i64).collect();
        let mut shuffled = ids.clone();
        // Fixed permutation: multiplicative stride coprime to n.
        let stride = 40_503usize;
        for i in 0..n {
            shuffled[i] = ids[(i * stride) % n];
        }
        let uuids: Vec<String> = (0..n / G)
            .flat_map(|g| std::iter::repeat_n(format!("{g:08x}-1234-5678-9abc-def012345678"), G))
            .collect();
        let uuid_refs: Vec<&str> = uuids.iter().map(String::as_str).collect();
        group_bench.throughput(Throughput::Elements(n as u64));
        group_bench.bench_with_input(BenchmarkId::new("contiguous_ints", n), &n, |b, _| {
            b.iter(|| {
                let g = group::group_ints(&ids).unwrap();
                advantage::compute(&r, &g, &Params::default()).unwrap()
            })
        });
        group_bench.bench_with_input(BenchmarkId::new("shuffled_ints", n), &n, |b, _| {
            b.iter(|| {
                let g = group::group_ints(&shuffled).unwrap();
                advantage::compute(&r, &g, &Params::default()).unwrap()
            })
        });
        group_bench.bench_with_input(BenchmarkId::new("uuid_strings", n), &n, |b, _| {
            b.iter(|| {
                let g = group::group_strs(&uuid_refs).unwrap();
                advantage::compute(&r, &g, &Params::default()).unwrap()
            })
        });
    }
    group_bench.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
