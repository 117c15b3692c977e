//! Every advantage kernel against a plain scalar reference written here.
//!
//! The kernel is chosen by the layout of the batch, so the generator draws
//! layouts that reach each one: groups side by side with ascending ids (the
//! `np.repeat(arange(B), G)` batch, including power-of-two sizes), groups
//! side by side with unordered ids, groups of varied sizes, groups scattered
//! over the batch, batches large enough to run across threads, NaN rewards,
//! float32 and float64 rewards, every estimator, scale and option.
#![allow(clippy::unwrap_used)] // a test may panic

use std::mem::MaybeUninit;

use grpo_fast_core::advantage::{self, Estimator, Params, Scale};
use grpo_fast_core::group;
use proptest::prelude::*;

/// splitmix64: a deterministic stream from the case's seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[derive(Debug, Clone, Copy)]
enum Layout {
    /// Equal power-of-two sizes, ascending ids.
    UniformPow2,
    /// Equal sizes of any value, contiguous but unordered ids.
    UniformUnordered,
    /// Varied sizes, contiguous ascending ids.
    Varied,
    /// Varied sizes, rollouts shuffled over the batch.
    Scattered,
    /// Enough rollouts to run across threads, contiguous.
    BigContiguous,
    /// Enough rollouts to run across threads, shuffled.
    BigScattered,
}

const LAYOUTS: [Layout; 6] = [
    Layout::UniformPow2,
    Layout::UniformUnordered,
    Layout::Varied,
    Layout::Scattered,
    Layout::BigContiguous,
    Layout::BigScattered,
];

/// Group ids of a batch of the given layout.
fn layout_ids(layout: Layout, rng: &mut Rng) -> Vec<i64> {
    let pow2 = |rng: &mut Rng| 1usize << (1 + rng.below(7)); // 2..=128
    let sizes: Vec<usize> = match layout {
        Layout::UniformPow2 => {
            let g = pow2(rng);
            vec![g; 1 + rng.below(48)]
        }
        Layout::UniformUnordered => {
            let g = 1 + rng.below(40);
            vec![g; 1 + rng.below(48)]
        }
        Layout::Varied | Layout::Scattered => {
            (0..1 + rng.below(48)).map(|_| 1 + rng.below(40)).collect()
        }
        Layout::BigContiguous | Layout::BigScattered => {
            let g = [16, 8, 5, 128][rng.below(4)];
            vec![g; (1 << 15) / g + 1 + rng.below(64)]
        }
    };
    let ascending = matches!(
        layout,
        Layout::UniformPow2 | Layout::Varied | Layout::BigContiguous
    );
    let mut ids = Vec::new();
    for (b, &s) in sizes.iter().enumerate() {
        // Distinct ids; unordered ones through a multiplicative permutation.
        let id = if ascending {
            b as i64
        } else {
            ((b as i64 * 7_919) % 1_000_003) - 500_000
        };
        ids.extend(std::iter::repeat_n(id, s));
    }
    if matches!(layout, Layout::Scattered | Layout::BigScattered) {
        for i in (1..ids.len()).rev() {
            ids.swap(i, rng.below(i + 1));
        }
    }
    ids
}

/// Rewards for `ids`: each group draws a kind (binary, continuous, constant,
/// a large offset, a few tied values), then NaNs at `nan_rate`.
fn layout_rewards(ids: &[i64], nan_rate: f64, rng: &mut Rng) -> Vec<f64> {
    let mut kind = std::collections::HashMap::new();
    ids.iter()
        .map(|id| {
            let (k, c) = *kind
                .entry(*id)
                .or_insert_with(|| (rng.below(5), (rng.unit() * 8.0 - 4.0)));
            let v = match k {
                0 => rng.below(2) as f64,
                1 => rng.unit() * 6.0 - 3.0,
                2 => c,
                3 => 1.0e4 + [0.0, 0.5, 1.0][rng.below(3)],
                _ => [0.0, 0.25, 0.5, 1.0][rng.below(4)],
            };
            if rng.unit() < nan_rate {
                f64::NAN
            } else {
                v
            }
        })
        .collect()
}

/// What the reference computes, per rollout and per group.
struct Reference {
    adv: Vec<f64>,
    /// The factor each rollout's centred reward is multiplied by, and the
    /// largest magnitude in its group: the scale of f32 rounding.
    mul: Vec<f64>,
    mag: Vec<f64>,
    keep: Vec<bool>,
    mean: Vec<f64>,
    std: Vec<f64>,
    size: Vec<u32>,
    num_valid: Vec<u32>,
    solve_rate: Vec<f64>,
    frac_zero_std: f64,
}

fn std_dev(xs: &[f64], unbiased: bool) -> f64 {
    let ddof = usize::from(unbiased);
    if xs.len() < 2 || xs.len() <= ddof {
        return 0.0;
    }
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    let m2: f64 = xs.iter().map(|x| (x - mean) * (x - mean)).sum();
    (m2 / (xs.len() - ddof) as f64).sqrt()
}

/// The formulas, one rollout at a time, as the README states them.
fn reference(rewards: &[f64], ids: &[i64], p: &Params) -> Reference {
    // Groups in order of first appearance.
    let mut order: Vec<i64> = Vec::new();
    let mut members: std::collections::HashMap<i64, Vec<usize>> = Default::default();
    for (i, id) in ids.iter().enumerate() {
        members
            .entry(*id)
            .or_insert_with(|| {
                order.push(*id);
                Vec::new()
            })
            .push(i);
    }
    let groups: Vec<Vec<usize>> = order.iter().map(|id| members[id].clone()).collect();
    let valid = |g: &[usize]| -> Vec<f64> {
        g.iter()
            .map(|&i| rewards[i])
            .filter(|x| !x.is_nan())
            .collect()
    };
    let mean_of = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
    let signal = |xs: &[f64]| {
        xs.len() >= 2
            && xs.iter().cloned().fold(f64::INFINITY, f64::min)
                < xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
    };
    let all_valid: Vec<f64> = rewards.iter().copied().filter(|x| !x.is_nan()).collect();
    let centred: Vec<f64> = groups
        .iter()
        .flat_map(|g| {
            let xs = valid(g);
            let m = mean_of(&xs);
            xs.into_iter().map(move |x| x - m)
        })
        .collect();
    let batch_std = match p.estimator {
        Estimator::ReinforcePpBaseline => std_dev(&centred, p.unbiased),
        _ => std_dev(&all_valid, p.unbiased),
    };
    let n = rewards.len();
    let mut r = Reference {
        adv: vec![0.0; n],
        mul: vec![0.0; n],
        mag: vec![0.0; n],
        keep: vec![false; n],
        mean: vec![],
        std: vec![],
        size: vec![],
        num_valid: vec![],
        solve_rate: vec![],
        frac_zero_std: 0.0,
    };
    let mut no_signal = 0;
    for g in &groups {
        let xs = valid(g);
        let k = xs.len() as f64;
        let mag = xs.iter().fold(0.0f64, |a, x| a.max(x.abs()));
        for &i in g {
            r.mag[i] = mag;
        }
        let mean = mean_of(&xs);
        let std = std_dev(&xs, p.unbiased);
        r.mean.push(mean);
        r.std.push(std);
        r.size.push(g.len() as u32);
        r.num_valid.push(xs.len() as u32);
        r.solve_rate
            .push(xs.iter().filter(|&&x| x >= p.success_threshold).count() as f64 / k);
        if !signal(&xs) {
            no_signal += 1;
            continue;
        }
        let divisor = match p.scale {
            Scale::Group => std + p.eps,
            Scale::Batch => batch_std + p.eps,
            Scale::None => 1.0,
        };
        let sum: f64 = xs.iter().sum();
        for &i in g {
            let x = rewards[i];
            if x.is_nan() {
                continue;
            }
            r.keep[i] = true;
            let (a, mul) = match p.estimator {
                Estimator::Grpo => ((x - mean) / divisor, 1.0 / divisor),
                Estimator::Rloo => (x - (sum - x) / (k - 1.0), k / (k - 1.0)),
                Estimator::ReinforcePpBaseline => {
                    ((x - mean) / (batch_std + p.eps), 1.0 / (batch_std + p.eps))
                }
                Estimator::GrpoPassk => (0.0, 0.0),
                _ => unreachable!("crate::baseline's estimators are tested in baseline.rs"),
            };
            r.adv[i] = a;
            r.mul[i] = mul;
        }
        if p.estimator == Estimator::GrpoPassk {
            let mut sorted = xs.clone();
            sorted.sort_by(|a, b| b.partial_cmp(a).unwrap());
            let gap = sorted[0] - sorted[1];
            if gap > 0.0 {
                // The first rollout holding the maximum.
                let best = *g.iter().find(|&&i| rewards[i] == sorted[0]).unwrap();
                r.adv[best] = gap / divisor;
            }
        }
    }
    r.frac_zero_std = if groups.is_empty() {
        0.0
    } else {
        f64::from(no_signal) / groups.len() as f64
    };
    r
}

fn close(got: f64, want: f64, tol: f64) -> bool {
    (got.is_nan() && want.is_nan()) || (got - want).abs() <= tol
}

/// `(advantages, keep, stats, frac_zero_std)` of the kernel the CPU gets and
/// of the portable one, each run into outputs full of garbage, so that an
/// element a kernel forgets to write shows.
fn both_kernels<T: advantage::Reward>(
    rewards: &[T],
    groups: &group::Groups,
    p: &Params,
) -> [(Vec<f32>, Vec<bool>, advantage::GroupStats, f64); 2] {
    [advantage::compute_into, advantage::compute_into_portable].map(|compute| {
        let mut adv = vec![MaybeUninit::new(f32::NAN); rewards.len()];
        let mut keep = vec![MaybeUninit::new(true); rewards.len()];
        let (stats, frac) = compute(rewards, groups, p, &mut adv, &mut keep).unwrap();
        // SAFETY: every element was initialised (to garbage) above.
        let adv: Vec<f32> = adv.iter().map(|a| unsafe { a.assume_init() }).collect();
        let keep: Vec<bool> = keep.iter().map(|k| unsafe { k.assume_init() }).collect();
        (adv, keep, stats, frac)
    })
}

/// Run both kernels on `rewards` (as `T`) and compare with the reference.
fn check<T: advantage::Reward + std::fmt::Debug>(
    rewards: &[T],
    as_f64: &[f64],
    ids: &[i64],
    p: &Params,
) -> std::result::Result<(), TestCaseError> {
    let groups = group::group_ints(ids).unwrap();
    for (adv, keep, stats, frac) in both_kernels(rewards, &groups, p) {
        compare(rewards, as_f64, ids, p, &adv, &keep, &stats, frac)?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn compare<T: std::fmt::Debug>(
    rewards: &[T],
    as_f64: &[f64],
    ids: &[i64],
    p: &Params,
    adv: &[f32],
    keep: &[bool],
    stats: &advantage::GroupStats,
    frac: f64,
) -> std::result::Result<(), TestCaseError> {
    let want = reference(as_f64, ids, p);
    for i in 0..rewards.len() {
        // f32 rounding of the mean, of the centred reward and of the product.
        let tol = 4e-7 * (want.mag[i] * want.mul[i].abs() + want.adv[i].abs()) + 1e-30;
        prop_assert!(
            close(f64::from(adv[i]), want.adv[i], tol),
            "advantage[{i}]: got {} want {} (reward {:?})",
            adv[i],
            want.adv[i],
            rewards[i]
        );
        prop_assert_eq!(keep[i], want.keep[i], "keep[{}]", i);
    }
    prop_assert_eq!(&stats.size, &want.size);
    prop_assert_eq!(&stats.num_valid, &want.num_valid);
    for g in 0..want.mean.len() {
        let scale = 2.0 * want.mean[g].abs().max(want.std[g]); // NaN mean: max ignores it
        prop_assert!(
            close(stats.mean[g], want.mean[g], 1e-12 * scale),
            "mean[{g}]: got {} want {}",
            stats.mean[g],
            want.mean[g]
        );
        prop_assert!(
            close(stats.std[g], want.std[g], 1e-10 * scale),
            "std[{g}]: got {} want {}",
            stats.std[g],
            want.std[g]
        );
        prop_assert!(
            close(stats.solve_rate[g], want.solve_rate[g], 1e-12),
            "solve_rate[{g}]: got {} want {}",
            stats.solve_rate[g],
            want.solve_rate[g]
        );
    }
    prop_assert!(close(frac, want.frac_zero_std, 1e-12));
    Ok(())
}

const ESTIMATORS: [Estimator; 4] = [
    Estimator::Grpo,
    Estimator::Rloo,
    Estimator::ReinforcePpBaseline,
    Estimator::GrpoPassk,
];
const SCALES: [Scale; 3] = [Scale::Group, Scale::Batch, Scale::None];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(384))]

    #[test]
    fn every_path_matches_the_reference(
        layout in 0..LAYOUTS.len(),
        seed in any::<u64>(),
        estimator in 0..4usize,
        scale in 0..3usize,
        unbiased in any::<bool>(),
        eps in prop::sample::select(vec![0.0, 1e-6, 0.25]),
        success_threshold in prop::sample::select(vec![0.5, 1.0]),
        nan_rate in prop::sample::select(vec![0.0, 0.0, 0.05, 0.4]),
        float64 in any::<bool>(),
    ) {
        let mut rng = Rng(seed);
        let ids = layout_ids(LAYOUTS[layout], &mut rng);
        let mut rewards = layout_rewards(&ids, nan_rate, &mut rng);
        let params = Params {
            estimator: ESTIMATORS[estimator],
            scale: SCALES[scale],
            eps,
            unbiased,
            success_threshold,
        };
        if float64 {
            check(&rewards, &rewards, &ids, &params)?;
        } else {
            let r32: Vec<f32> = rewards.iter().map(|&x| x as f32).collect();
            rewards = r32.iter().map(|&x| f64::from(x)).collect();
            check(&r32, &rewards, &ids, &params)?;
        }
    }
}

/// Rewards near 1e300 (their squares overflow f64): the statistics scale by
/// the same factor and the advantages of a scaled estimator do not change,
/// which the reference checks on the unscaled rewards (with `eps` scaled
/// down alike); an advantage beyond f32 is an error.
#[test]
fn huge_rewards_are_computed_without_overflow() {
    const C: f64 = 1e300;
    let mut rng = Rng(7);
    let cases = [
        (Estimator::Grpo, Scale::Group),
        (Estimator::Grpo, Scale::Batch),
        (Estimator::ReinforcePpBaseline, Scale::Group),
        (Estimator::GrpoPassk, Scale::Group),
    ];
    for layout in LAYOUTS {
        let ids = layout_ids(layout, &mut rng);
        let small = layout_rewards(&ids, 0.05, &mut rng);
        let big: Vec<f64> = small.iter().map(|x| x * C).collect();
        let groups = group::group_ints(&ids).unwrap();
        for (estimator, scale) in cases {
            let p = Params {
                estimator,
                scale,
                ..Params::default()
            };
            let want = reference(
                &small,
                &ids,
                &Params {
                    eps: p.eps / C,
                    ..p
                },
            );
            for (adv, _, stats, _) in both_kernels(&big, &groups, &p) {
                for (i, &a) in adv.iter().enumerate() {
                    let a = f64::from(a);
                    let tol = 1e-6 * (1.0 + want.adv[i].abs());
                    assert!(
                        close(a, want.adv[i], tol),
                        "{layout:?} {p:?} [{i}]: {a} vs {}",
                        want.adv[i]
                    );
                }
                for g in 0..want.mean.len() {
                    let scale = want.mean[g].abs().max(want.std[g]);
                    assert!(
                        close(stats.mean[g] / C, want.mean[g], 1e-12 * scale),
                        "mean[{g}]"
                    );
                    assert!(
                        close(stats.std[g] / C, want.std[g], 1e-10 * scale),
                        "std[{g}]"
                    );
                }
            }
        }
    }
    // Unscaled estimators keep the rewards' scale, which float32 cannot hold.
    let ids = [0i64, 0, 1, 1];
    let groups = group::group_ints(&ids).unwrap();
    let rewards = [C, -C, 1.0, 2.0];
    for (estimator, scale) in [
        (Estimator::Grpo, Scale::None),
        (Estimator::Rloo, Scale::Group),
    ] {
        let p = Params {
            estimator,
            scale,
            ..Params::default()
        };
        let err = advantage::compute(&rewards, &groups, &p).unwrap_err();
        assert!(err.to_string().contains("beyond float32"), "{err}");
    }
    // A std beyond f64 itself.
    let rewards = [f64::MAX, -f64::MAX, 1.0, 2.0];
    let err = advantage::compute(&rewards, &groups, &Params::default()).unwrap_err();
    assert!(err.to_string().contains("overflow float64"), "{err}");
}
