//! GRPO-family advantage estimators over grouped rewards.
//!
//! Every estimator is a rule that turns a group's moments (count, sum,
//! squared deviations, whether they are all equal) into
//! `A_i = (r_i - shift) * mul` for the group's rollouts, or for pass@k into
//! a single winner; the rules are the arms of `Rule::new` (`estimators`), so all
//! estimators share one kernel.
//! The kernel reads groups that lie side by side; a batch whose groups are
//! interleaved is gathered into group order first and its outputs are
//! scattered back.
//!
//! The kernel sweeps blocks of whole groups small enough to stay in cache:
//! the block's moments (f64), then the coefficients of all its groups in one
//! loop (so that their divisions and square roots vectorise across groups),
//! then the outputs, each element written once. Two implementations of the
//! loops that touch every reward (`Kernel`): `moments`, a plain scalar
//! reference that runs anywhere, and an AVX2 one chosen at run time, which
//! reads four groups at once (`avx2`), 1.5x the scalar one on a core
//! (`benches/bench_advantages.py` prints each against a plain memory copy:
//! at 2^20 rollouts in groups of 16, about 2.3x the copy's time on one
//! thread, 1.6x on two).
//!
//! Conventions (each a parameter where peers differ): NaN rewards are not
//! scorable, leave the statistics alone and get advantage 0; a group with
//! fewer than two scorable rewards, or whose scorable rewards are all equal,
//! carries no signal and gets exactly 0.
//! Infinite rewards are an error. Finite f64 rewards too large to square
//! (beyond ~1e154) are computed again divided by a power of two, which is
//! exact; a result that does not fit its type (a std beyond f64, an
//! advantage beyond f32) is an error.

//!
//! The files, by concept: `estimators` (the names, the parameters and each
//! estimator's rule), `statistics` (a group's moments, the batch's std),
//! `sweep` (tasks, blocks and the [`Kernel`](sweep::Kernel) interface with
//! its plain implementation), `avx2` (the SIMD kernel) and `element` (the
//! reward types it reads); this file holds the entry points, the checks of
//! the input, the gather of interleaved groups and the rescaling of rewards
//! too large to square.

use std::mem::MaybeUninit;

use crate::error::{CoreError, Result};
use crate::group::Groups;
use crate::parallel;

#[cfg(target_arch = "x86_64")]
// Intrinsics are `unsafe` before Rust 1.87 and safe in AVX2 functions from
// then on; the blocks in it keep the crate building on both.
#[allow(unused_unsafe)]
mod avx2;
mod element;
mod estimators;
mod statistics;
mod sweep;

pub use element::Reward;
pub use estimators::{Estimator, Params, Scale};
use sweep::{sweep_all, Out};

/// Per-group statistics, in group-index order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GroupStats {
    /// Mean of the scorable rewards (NaN when none is scorable).
    pub mean: Vec<f64>,
    /// Std of the scorable rewards (0 with fewer than two).
    pub std: Vec<f64>,
    /// Rollouts in the group, scorable or not.
    pub size: Vec<u32>,
    /// Scorable (non-NaN) rollouts in the group.
    pub num_valid: Vec<u32>,
    /// Fraction of scorable rollouts at or above the success threshold.
    pub solve_rate: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Advantages {
    pub advantages: Vec<f32>,
    pub stats: GroupStats,
    /// Rollouts to keep under DAPO dynamic sampling: scorable, in a group
    /// whose scorable rewards are not all equal.
    pub keep: Vec<bool>,
    /// Fraction of groups that carry no signal (all equal, singleton or unscorable).
    pub frac_zero_std: f64,
}

/// Compute advantages and group statistics for `rewards` grouped by `groups`.
pub fn compute<R: Reward>(rewards: &[R], groups: &Groups, params: &Params) -> Result<Advantages> {
    let n = rewards.len();
    let mut advantages = Vec::with_capacity(n);
    let mut keep = Vec::with_capacity(n);
    let (stats, frac_zero_std) = compute_into(
        rewards,
        groups,
        params,
        &mut advantages.spare_capacity_mut()[..n],
        &mut keep.spare_capacity_mut()[..n],
    )?;
    // SAFETY: `compute_into` wrote every element of both (its contract).
    unsafe {
        advantages.set_len(n);
        keep.set_len(n);
    }
    Ok(Advantages {
        advantages,
        stats,
        keep,
        frac_zero_std,
    })
}

/// [`compute`] into caller-provided outputs, which may be fresh memory (the
/// binding hands numpy's, unzeroed); returns the group statistics and
/// `frac_zero_std`. On `Ok`, every element of both outputs has been written.
pub fn compute_into<R: Reward>(
    rewards: &[R],
    groups: &Groups,
    params: &Params,
    advantages: &mut [MaybeUninit<f32>],
    keep: &mut [MaybeUninit<bool>],
) -> Result<(GroupStats, f64)> {
    compute_with(rewards, groups, params, true, advantages, keep)
}

/// [`compute_into`] with the portable kernel even where the CPU has AVX2,
/// so that tests can hold both kernels to the reference.
#[doc(hidden)]
pub fn compute_into_portable<R: Reward>(
    rewards: &[R],
    groups: &Groups,
    params: &Params,
    advantages: &mut [MaybeUninit<f32>],
    keep: &mut [MaybeUninit<bool>],
) -> Result<(GroupStats, f64)> {
    compute_with(rewards, groups, params, false, advantages, keep)
}

fn compute_with<R: Reward>(
    rewards: &[R],
    groups: &Groups,
    params: &Params,
    simd: bool,
    advantages: &mut [MaybeUninit<f32>],
    keep: &mut [MaybeUninit<bool>],
) -> Result<(GroupStats, f64)> {
    validate(rewards, groups, params)?;
    if advantages.len() != rewards.len() || keep.len() != rewards.len() {
        return Err(CoreError::InvalidParameter(format!(
            "outputs have {} and {} entries for {} rewards",
            advantages.len(),
            keep.len(),
            rewards.len()
        )));
    }
    let ng = groups.num_groups();
    let mut mean = Vec::with_capacity(ng);
    let mut std = Vec::with_capacity(ng);
    let mut solve_rate = Vec::with_capacity(ng);
    let mut num_valid = Vec::with_capacity(ng);
    let out = Out {
        adv: advantages,
        keep,
        mean: &mut mean.spare_capacity_mut()[..ng],
        std: &mut std.spare_capacity_mut()[..ng],
        solve_rate: &mut solve_rate.spare_capacity_mut()[..ng],
        num_valid: &mut num_valid.spare_capacity_mut()[..ng],
    };
    let sizes = groups.sizes();
    let no_signal = parallel::install(rewards.len(), |par| {
        let how = How { par, simd };
        if groups.is_contiguous() {
            run(rewards, sizes, params, how, out)
        } else {
            gathered(rewards, groups, params, how, out)
        }
    });
    let no_signal = no_signal.map_err(|e| match e {
        Failure::Infinite => infinite_reward(rewards),
        Failure::Error(e) => e,
    })?;
    // SAFETY: `run` wrote every group's statistics (its contract).
    unsafe {
        mean.set_len(ng);
        std.set_len(ng);
        solve_rate.set_len(ng);
        num_valid.set_len(ng);
    }
    let stats = GroupStats {
        mean,
        std,
        size: sizes.to_vec(),
        num_valid,
        solve_rate,
    };
    let frac_zero_std = if ng == 0 {
        0.0
    } else {
        no_signal as f64 / ng as f64
    };
    Ok((stats, frac_zero_std))
}

fn validate<R: Reward>(rewards: &[R], groups: &Groups, params: &Params) -> Result<()> {
    if params.estimator.is_baselined() {
        return Err(CoreError::InvalidParameter(format!(
            "estimator '{}' is computed by baseline::compute",
            <&str>::from(params.estimator)
        )));
    }
    if rewards.len() != groups.len() {
        return Err(CoreError::LengthMismatch {
            left: "rewards",
            left_len: rewards.len(),
            right: "group_ids",
            right_len: groups.len(),
        });
    }
    if !(params.eps.is_finite() && params.eps >= 0.0) {
        return Err(CoreError::InvalidParameter(format!(
            "eps must be a finite number >= 0, got {}",
            params.eps
        )));
    }
    if !params.success_threshold.is_finite() {
        return Err(CoreError::InvalidParameter(format!(
            "success_threshold must be finite, got {}",
            params.success_threshold
        )));
    }
    Ok(())
}

/// How a sweep may run: across the pool, and with the AVX2 kernel where the
/// CPU has it.
#[derive(Clone, Copy)]
struct How {
    par: bool,
    simd: bool,
}

/// Why a sweep gave no result.
enum Failure {
    /// Some reward is infinite (found again in the caller's order).
    Infinite,
    Error(CoreError),
}

fn infinite_reward<R: Reward>(rewards: &[R]) -> CoreError {
    match rewards.iter().position(|r| r.to_f64().is_infinite()) {
        Some(index) => CoreError::NonFinite {
            what: "rewards",
            index,
            value: rewards[index].to_f64(),
        },
        None => CoreError::InvalidParameter("rewards hold an infinity".into()),
    }
}

/// The interleaved layout: gather the rewards into group order (input order
/// kept within a group, so pass@k's first-of-ties is the same rollout), run
/// the kernel, scatter the per-rollout outputs back.
fn gathered<R: Reward>(
    rewards: &[R],
    groups: &Groups,
    params: &Params,
    how: How,
    out: Out<'_>,
) -> std::result::Result<usize, Failure> {
    let order = groups.order();
    let x: Vec<R> = order.iter().map(|&i| rewards[i as usize]).collect();
    let n = x.len();
    let mut adv = Vec::with_capacity(n);
    let mut keep = Vec::with_capacity(n);
    let no_signal = run(
        &x,
        groups.sizes(),
        params,
        how,
        Out {
            adv: &mut adv.spare_capacity_mut()[..n],
            keep: &mut keep.spare_capacity_mut()[..n],
            ..out
        },
    )?;
    // SAFETY: `run` wrote every element of both (its contract).
    unsafe {
        adv.set_len(n);
        keep.set_len(n);
    }
    for ((&i, &a), &k) in order.iter().zip(&adv).zip(&keep) {
        out.adv[i as usize].write(a);
        out.keep[i as usize].write(k);
    }
    Ok(no_signal)
}

/// The kernel over groups side by side, once in the rewards' own units and,
/// if a statistic overflows there, again in units of a power of two near the
/// largest reward. Writes every output; returns the number of groups without
/// signal.
fn run<R: Reward>(
    x: &[R],
    sizes: &[u32],
    params: &Params,
    how: How,
    mut out: Out<'_>,
) -> std::result::Result<usize, Failure> {
    let mut status = sweep_all(x, sizes, params, 1.0, how, out.reborrow());
    if status.nonfinite {
        // A statistic is infinite or NaN: an infinite reward, or squares
        // beyond f64.
        let largest = x.iter().fold(0.0f64, |m, r| m.max(r.to_f64().abs()));
        if largest.is_infinite() {
            return Err(Failure::Infinite);
        }
        let unit = power_of_two_below(largest);
        let y: Vec<f64> = x.iter().map(|r| r.to_f64() / unit).collect();
        status = sweep_all(&y, sizes, params, unit, how, out);
        if status.nonfinite {
            return Err(Failure::Error(CoreError::Overflow(format!(
                "the group statistics of rewards up to {largest:e} overflow float64; \
                 rescale the rewards"
            ))));
        }
    }
    if let Some((group, value)) = status.f32_overflow {
        return Err(Failure::Error(CoreError::Overflow(format!(
            "the advantages of group {group} reach {value:e}, beyond float32 \
             (estimator '{}', scale '{}'); rescale the rewards",
            <&str>::from(params.estimator),
            <&str>::from(params.scale),
        ))));
    }
    Ok(status.no_signal)
}

/// The largest power of two at most `x` (a positive finite number): dividing
/// by it is exact and brings `x` into `[1, 2)`.
fn power_of_two_below(x: f64) -> f64 {
    f64::from_bits(x.to_bits() & 0x7ff0_0000_0000_0000).max(f64::MIN_POSITIVE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::group_ints;

    fn run(rewards: &[f32], ids: &[i64], params: Params) -> Advantages {
        compute(rewards, &group_ints(ids).unwrap(), &params).unwrap()
    }

    #[test]
    fn grpo_matches_formula() {
        let r = [1.0f32, 0.0, 0.0, 1.0];
        let a = run(&r, &[0, 0, 0, 0], Params::default());
        let mean = 0.5f64;
        let var = ((0.5f64 * 0.5) * 4.0) / 3.0;
        let expect = (1.0 - mean) / (var.sqrt() + 1e-6);
        assert!((f64::from(a.advantages[0]) - expect).abs() < 1e-6);
        assert!((f64::from(a.advantages[1]) + expect).abs() < 1e-6);
    }

    #[test]
    fn equal_singleton_and_nan_get_zero() {
        let r = [3.0f32, 3.0, 5.0, f32::NAN, 1.0, 2.0];
        let a = run(&r, &[0, 0, 1, 2, 2, 2], Params::default());
        assert_eq!(&a.advantages[..4], &[0.0, 0.0, 0.0, 0.0]);
        assert_eq!(a.keep, vec![false, false, false, false, true, true]);
        assert_eq!(a.stats.num_valid, vec![2, 1, 2]);
        assert!((a.frac_zero_std - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn rloo_is_leave_one_out() {
        let r = [1.0f32, 0.0, 0.5];
        let params = Params {
            estimator: Estimator::Rloo,
            ..Params::default()
        };
        let a = run(&r, &[9, 9, 9], params);
        for (i, &x) in r.iter().enumerate() {
            let others: f32 = r.iter().sum::<f32>() - x;
            assert!((a.advantages[i] - (x - others / 2.0)).abs() < 1e-6);
        }
    }

    #[test]
    fn passk_rewards_only_the_best() {
        let r = [0.2f32, 0.9, 0.5, 0.9];
        let params = Params {
            estimator: Estimator::GrpoPassk,
            scale: Scale::None,
            ..Params::default()
        };
        assert_eq!(run(&r, &[1, 1, 1, 1], params).advantages, vec![0.0; 4]);
        let r = [0.2f32, 0.9, 0.5];
        let a = run(&r, &[1, 1, 1], params);
        assert_eq!(a.advantages[0], 0.0);
        assert!((a.advantages[1] - 0.4).abs() < 1e-6);
        assert_eq!(a.advantages[2], 0.0);
    }

    #[test]
    fn rejects_bad_input() {
        let g = group_ints(&[0, 0]).unwrap();
        let err = compute(&[1.0f32], &g, &Params::default()).unwrap_err();
        assert!(err
            .to_string()
            .contains("rewards has 1 entries but group_ids has 2"));
        let err = compute(&[1.0f32, f32::INFINITY], &g, &Params::default()).unwrap_err();
        assert!(matches!(err, CoreError::NonFinite { index: 1, .. }));
        assert!("nope".parse::<Estimator>().is_err());
    }

    #[test]
    fn power_of_two_below_is_exact() {
        for x in [1.0, 1.5, 3.0, 1e300, f64::MAX, 1e-300] {
            let p = power_of_two_below(x);
            assert!(p <= x && x / p < 2.0, "{x}: {p}");
            assert_eq!(p.to_bits() & 0x000f_ffff_ffff_ffff, 0);
        }
    }
}
