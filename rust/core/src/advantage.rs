//! GRPO-family advantage estimators over grouped rewards.
//!
//! Every estimator is a rule that turns a group's moments (count, sum,
//! squared deviations, whether they are all equal) into
//! `A_i = (r_i - shift) * mul` for the group's rollouts, or for pass@k into
//! a single winner; the rules are the arms of `Rule::new`, so all
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

use std::mem::MaybeUninit;

use rayon::prelude::*;
use strum::{EnumString, IntoStaticStr, VariantNames};

use crate::error::{CoreError, Result};
use crate::group::Groups;
use crate::parallel;

/// An advantage estimator; its name is the `snake_case` of the variant
/// (see `crate::names`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, EnumString, IntoStaticStr, VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum Estimator {
    /// `(r - mean_g) / (std + eps)` (Shao et al. 2024, DeepSeekMath).
    Grpo,
    /// Leave-one-out baseline: `r - (sum_g - r) / (n_g - 1)` (Ahmadian et al. 2024).
    Rloo,
    /// `r - mean_g`, then whitened over the batch (REINFORCE++, Hu 2025).
    /// Also accepted under OpenRLHF's and verl's spellings.
    #[strum(
        to_string = "reinforce_pp_baseline",
        serialize = "reinforce_plus_plus_baseline",
        serialize = "reinforce++-baseline"
    )]
    ReinforcePpBaseline,
    /// Only the best rollout of a group gets `max - second max` (pass@k
    /// training, as verl's `grpo_passk`).
    GrpoPassk,
    /// `r - b`, `b` the reward of the prompt's greedy completion (ReMax);
    /// in `crate::baseline`, like the two below.
    Remax,
    /// `r - sum_g(l r) / sum_g(l)`, `l` the completion lengths (OPO).
    Opo,
    /// `(r - mean_g)` scaled up by the share of rollouts with signal (GPG).
    Gpg,
}

impl Estimator {
    /// Computed by [`crate::baseline::compute`]: the baseline is not the
    /// group's moments alone (given baselines, lengths, a batch-wide count).
    pub fn is_baselined(self) -> bool {
        matches!(self, Estimator::Remax | Estimator::Opo | Estimator::Gpg)
    }
}

/// What the centred reward of `grpo` / `grpo_passk` is divided by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, EnumString, IntoStaticStr, VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum Scale {
    /// The group's std (GRPO).
    Group,
    /// One std of all rewards in the batch (TRL `scale_rewards="batch"`).
    Batch,
    /// Nothing (Dr. GRPO, Liu et al. 2025).
    None,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    pub estimator: Estimator,
    pub scale: Scale,
    /// Added to the std before dividing.
    pub eps: f64,
    /// Bessel-corrected std (divide by n - 1) when true, population std when false.
    pub unbiased: bool,
    /// A rollout whose reward is at least this counts as solved.
    pub success_threshold: f64,
}

impl Default for Params {
    fn default() -> Self {
        Self {
            estimator: Estimator::Grpo,
            scale: Scale::Group,
            eps: 1e-6,
            unbiased: true,
            success_threshold: 1.0,
        }
    }
}

/// A reward element type the kernel reads without converting the array.
pub trait Reward: Copy + Send + Sync + sealed::Lanes {
    fn to_f64(self) -> f64;
}

impl Reward for f32 {
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

impl Reward for f64 {
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
}

mod sealed {
    /// How the AVX2 kernel loads four rewards as f64 lanes.
    pub trait Lanes: Sized {
        /// `x[0..4]`.
        ///
        /// # Safety
        /// The CPU has AVX2 and `x` holds at least four rewards.
        #[cfg(target_arch = "x86_64")]
        unsafe fn load4(x: &[Self]) -> std::arch::x86_64::__m256d;

        /// `x[k], x[k + s], x[k + 2s], x[k + 3s]`.
        ///
        /// # Safety
        /// The CPU has AVX2 and `x` holds at least `k + 3s + 1` rewards
        /// (`3s` fits an i32).
        #[cfg(target_arch = "x86_64")]
        unsafe fn gather4(x: &[Self], k: usize, s: usize) -> std::arch::x86_64::__m256d;
    }

    impl Lanes for f32 {
        #[cfg(target_arch = "x86_64")]
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn load4(x: &[f32]) -> std::arch::x86_64::__m256d {
            use std::arch::x86_64::*;
            debug_assert!(x.len() >= 4);
            // SAFETY: four f32 are read from `x` (the caller's contract).
            unsafe { _mm256_cvtps_pd(_mm_loadu_ps(x.as_ptr())) }
        }

        #[cfg(target_arch = "x86_64")]
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn gather4(x: &[f32], k: usize, s: usize) -> std::arch::x86_64::__m256d {
            use std::arch::x86_64::*;
            debug_assert!(x.len() > k + 3 * s);
            let s = s as i32;
            // SAFETY: the four indices are inside `x` (the caller's contract).
            unsafe {
                let at = _mm_setr_epi32(0, s, 2 * s, 3 * s);
                _mm256_cvtps_pd(_mm_i32gather_ps::<4>(x.as_ptr().add(k), at))
            }
        }
    }

    impl Lanes for f64 {
        #[cfg(target_arch = "x86_64")]
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn load4(x: &[f64]) -> std::arch::x86_64::__m256d {
            use std::arch::x86_64::*;
            debug_assert!(x.len() >= 4);
            // SAFETY: four f64 are read from `x` (the caller's contract).
            unsafe { _mm256_loadu_pd(x.as_ptr()) }
        }

        #[cfg(target_arch = "x86_64")]
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn gather4(x: &[f64], k: usize, s: usize) -> std::arch::x86_64::__m256d {
            use std::arch::x86_64::*;
            debug_assert!(x.len() > k + 3 * s);
            let s = s as i32;
            // SAFETY: the four indices are inside `x` (the caller's contract).
            unsafe {
                let at = _mm_setr_epi32(0, s, 2 * s, 3 * s);
                _mm256_i32gather_pd::<8>(x.as_ptr().add(k), at)
            }
        }
    }
}

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

/// Groups of a kernel task: large enough to amortise the hand-off, small
/// enough that two threads share the work evenly.
const TASK_GROUPS: usize = 4096;

/// Every group: in one sweep when each group's coefficients are its own,
/// else the moments of every group first, then the batch's std, then the
/// outputs.
fn sweep_all<R: Reward>(
    x: &[R],
    sizes: &[u32],
    params: &Params,
    unit: f64,
    how: How,
    out: Out<'_>,
) -> Status {
    let How { par, simd } = how;
    let tasks = split(x, sizes, if par { TASK_GROUPS } else { usize::MAX }, out);
    let rule = Rule::new(params, unit, 0.0);
    let known = if needs_batch(params) {
        let moments_of = |t: &Task<'_, R>| {
            let mut m = Vec::with_capacity(t.sizes.len());
            sweep(
                simd,
                t.x,
                t.sizes,
                t.first_group,
                &rule,
                Pass::Moments(&mut m),
            );
            m
        };
        let moments: Vec<Vec<Moments>> = if par {
            tasks.par_iter().map(moments_of).collect()
        } else {
            tasks.iter().map(moments_of).collect()
        };
        Some(moments)
    } else {
        None
    };
    let batch = known
        .as_ref()
        .map_or(0.0, |m| batch_std(m.iter().flatten(), &rule));
    let rule = Rule::new(params, unit, batch);
    let each = |(t, m): (Task<'_, R>, Option<Vec<Moments>>)| {
        let pass = Pass::Outputs(m.as_deref(), t.out);
        sweep(simd, t.x, t.sizes, t.first_group, &rule, pass)
    };
    let known = known.map_or_else(
        || vec![None; tasks.len()],
        |m| m.into_iter().map(Some).collect(),
    );
    let status = if par {
        tasks
            .into_par_iter()
            .zip(known)
            .map(each)
            .reduce(Status::default, Status::merge)
    } else {
        tasks
            .into_iter()
            .zip(known)
            .map(each)
            .fold(Status::default(), Status::merge)
    };
    Status {
        nonfinite: status.nonfinite || !batch.is_finite(),
        ..status
    }
}

/// What a sweep over a run of whole groups does.
enum Pass<'a> {
    /// Their moments only: the first pass of an estimator that needs the
    /// batch's statistics.
    Moments(&'a mut Vec<Moments>),
    /// Their outputs, from their moments when known, else computing them.
    Outputs(Option<&'a [Moments]>, Out<'a>),
}

/// The outputs of a run of whole groups: per rollout and per group. Each
/// element is written exactly once per sweep.
struct Out<'a> {
    adv: &'a mut [MaybeUninit<f32>],
    keep: &'a mut [MaybeUninit<bool>],
    mean: &'a mut [MaybeUninit<f64>],
    std: &'a mut [MaybeUninit<f64>],
    solve_rate: &'a mut [MaybeUninit<f64>],
    num_valid: &'a mut [MaybeUninit<u32>],
}

impl<'a> Out<'a> {
    fn reborrow(&mut self) -> Out<'_> {
        Out {
            adv: self.adv,
            keep: self.keep,
            mean: self.mean,
            std: self.std,
            solve_rate: self.solve_rate,
            num_valid: self.num_valid,
        }
    }

    /// The outputs of the first `rollouts` rollouts and `groups` groups, and the rest.
    fn split_at(self, rollouts: usize, groups: usize) -> (Out<'a>, Out<'a>) {
        let (adv, adv_rest) = self.adv.split_at_mut(rollouts);
        let (keep, keep_rest) = self.keep.split_at_mut(rollouts);
        let (mean, mean_rest) = self.mean.split_at_mut(groups);
        let (std, std_rest) = self.std.split_at_mut(groups);
        let (solve_rate, solve_rest) = self.solve_rate.split_at_mut(groups);
        let (num_valid, valid_rest) = self.num_valid.split_at_mut(groups);
        (
            Out {
                adv,
                keep,
                mean,
                std,
                solve_rate,
                num_valid,
            },
            Out {
                adv: adv_rest,
                keep: keep_rest,
                mean: mean_rest,
                std: std_rest,
                solve_rate: solve_rest,
                num_valid: valid_rest,
            },
        )
    }
}

/// A run of whole groups for one thread: its rewards and outputs.
struct Task<'a, R> {
    first_group: usize,
    sizes: &'a [u32],
    x: &'a [R],
    out: Out<'a>,
}

fn split<'a, R>(
    mut x: &'a [R],
    sizes: &'a [u32],
    per_task: usize,
    mut out: Out<'a>,
) -> Vec<Task<'a, R>> {
    let mut tasks = Vec::with_capacity(sizes.len().div_ceil(per_task));
    for (t, chunk) in sizes.chunks(per_task).enumerate() {
        let len: usize = chunk.iter().map(|&s| s as usize).sum();
        let (head, rest) = x.split_at(len);
        let (head_out, rest_out) = out.split_at(len, chunk.len());
        tasks.push(Task {
            first_group: t * per_task,
            sizes: chunk,
            x: head,
            out: head_out,
        });
        (x, out) = (rest, rest_out);
    }
    tasks
}

/// What a sweep found besides its outputs.
#[derive(Clone, Copy, Default)]
struct Status {
    no_signal: usize,
    /// Some statistic is infinite or NaN (an infinite reward, or an overflow).
    nonfinite: bool,
    /// The first group whose advantages do not fit f32, and their largest magnitude.
    f32_overflow: Option<(usize, f64)>,
}

impl Status {
    fn merge(self, other: Status) -> Status {
        Status {
            no_signal: self.no_signal + other.no_signal,
            nonfinite: self.nonfinite || other.nonfinite,
            f32_overflow: self.f32_overflow.or(other.f32_overflow),
        }
    }
}

/// The scorable rewards of one group, in the units of the sweep.
#[derive(Clone, Copy, Debug)]
struct Moments {
    n: f64,
    solved: f64,
    sum: f64,
    mean: f64,
    /// Sum of squared deviations from the mean.
    m2: f64,
    /// Not all equal.
    spread: bool,
}

/// A group's moments, plainly: the scorable rewards' count, solved count,
/// sum and extremes, then squared deviations from their mean in a second
/// pass. The reference for the AVX2 kernel, and what it falls back to for a
/// group that holds NaN.
fn moments<R: Reward>(x: &[R], threshold: f64) -> Moments {
    let scorable = || x.iter().map(|r| r.to_f64()).filter(|v| !v.is_nan());
    let (mut n, mut sum, mut solved) = (0.0, 0.0, 0.0);
    let (mut min, mut max) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in scorable() {
        n += 1.0;
        sum += v;
        solved += if v >= threshold { 1.0 } else { 0.0 };
        min = min.min(v);
        max = max.max(v);
    }
    let mean = sum / n;
    Moments {
        n,
        solved,
        sum,
        mean,
        m2: scorable().map(|v| (v - mean) * (v - mean)).sum(),
        spread: min < max,
    }
}

/// How the statistics become advantages, in the units of the sweep.
#[derive(Clone, Copy)]
struct Rule {
    estimator: Estimator,
    ddof: f64,
    /// `success_threshold` in units.
    threshold: f64,
    /// What one unit of the sweep is worth in reward: 1 unless the rewards
    /// are too large to square.
    unit: f64,
    /// The estimator, as numbers (so that the loop over groups does not
    /// branch on it): `r - mean` is divided by `std * per_std + plus`, or
    /// for RLOO multiplied by `unit * n / (n - 1)`.
    per_std: f64,
    plus: f64,
    leave_one_out: bool,
}

/// A group's advantages are `(r - shift) * mul` (pass@k: the winner gets
/// `(max - second max) * mul`); both are 0 for a group without signal.
#[derive(Clone, Copy, Default)]
struct Coeff {
    shift: f64,
    mul: f64,
    signal: bool,
}

/// Whether the estimator needs the batch's statistics before any advantage
/// can be written.
fn needs_batch(params: &Params) -> bool {
    params.estimator == Estimator::ReinforcePpBaseline
        || (params.scale == Scale::Batch
            && matches!(params.estimator, Estimator::Grpo | Estimator::GrpoPassk))
}

impl Rule {
    /// `batch_std` (in units) is the std of the batch that `scale="batch"`
    /// and REINFORCE++ divide by, 0 until it is known.
    fn new(params: &Params, unit: f64, batch_std: f64) -> Self {
        let eps = params.eps / unit;
        // The divisor of each estimator. A new estimator is one more arm
        // here (and one more reference in `tests/advantage_props.rs`).
        let (per_std, plus) = match (params.estimator, params.scale) {
            // REINFORCE++ whitens over the batch whatever the scale.
            (Estimator::ReinforcePpBaseline, _) | (_, Scale::Batch) => (0.0, batch_std + eps),
            (_, Scale::Group) => (1.0, eps),
            (_, Scale::None) => (0.0, 1.0 / unit),
        };
        Self {
            estimator: params.estimator,
            ddof: if params.unbiased { 1.0 } else { 0.0 },
            threshold: params.success_threshold / unit,
            unit,
            per_std,
            plus,
            leave_one_out: params.estimator == Estimator::Rloo,
        }
    }
}

/// Std of the batch from the groups' moments (Chan et al.'s pairwise
/// combination), so no pass over the rewards is needed: of all scorable
/// rewards, or for REINFORCE++ of the group-centred ones (whose batch mean
/// is exactly 0 and whose squares sum to the groups' m2).
fn batch_std<'a>(moments: impl Iterator<Item = &'a Moments> + Clone, rule: &Rule) -> f64 {
    let n: f64 = moments.clone().map(|m| m.n).sum();
    let within: f64 = moments.clone().map(|m| m.m2).sum();
    let between = if rule.estimator == Estimator::ReinforcePpBaseline {
        0.0
    } else {
        let mean = moments.clone().map(|m| m.sum).sum::<f64>() / n;
        moments
            .filter(|m| m.n > 0.0)
            .map(|m| m.n * (m.mean - mean) * (m.mean - mean))
            .sum()
    };
    if n >= 2.0 {
        ((within + between) / (n - rule.ddof)).sqrt()
    } else {
        0.0
    }
}

/// Groups per block: their moments and coefficients, and for small groups
/// their rewards, stay in L1 between the passes. A multiple of 4 (the AVX2
/// kernel fills four groups at a time).
const BLOCK: usize = 256;

/// A block's groups, one array per field, so that the loops over the groups
/// vectorise: their moments, then their coefficients.
struct Block {
    n: [f64; BLOCK],
    solved: [f64; BLOCK],
    sum: [f64; BLOCK],
    mean: [f64; BLOCK],
    m2: [f64; BLOCK],
    spread: [bool; BLOCK],
    std: [f64; BLOCK],
    shift: [f64; BLOCK],
    mul: [f64; BLOCK],
    signal: [bool; BLOCK],
}

impl Block {
    const EMPTY: Block = Block {
        n: [0.0; BLOCK],
        solved: [0.0; BLOCK],
        sum: [0.0; BLOCK],
        mean: [0.0; BLOCK],
        m2: [0.0; BLOCK],
        spread: [false; BLOCK],
        std: [0.0; BLOCK],
        shift: [0.0; BLOCK],
        mul: [0.0; BLOCK],
        signal: [false; BLOCK],
    };

    #[inline(always)]
    fn set(&mut self, j: usize, m: &Moments) {
        self.n[j] = m.n;
        self.solved[j] = m.solved;
        self.sum[j] = m.sum;
        self.mean[j] = m.mean;
        self.m2[j] = m.m2;
        self.spread[j] = m.spread;
    }

    #[inline(always)]
    fn get(&self, j: usize) -> Moments {
        Moments {
            n: self.n[j],
            solved: self.solved[j],
            sum: self.sum[j],
            mean: self.mean[j],
            m2: self.m2[j],
            spread: self.spread[j],
        }
    }

    #[inline(always)]
    fn coeff(&self, j: usize) -> Coeff {
        Coeff {
            shift: self.shift[j],
            mul: self.mul[j],
            signal: self.signal[j],
        }
    }
}

/// The two loops that read every reward: the moments of a block's groups,
/// and the advantages of a group whose rewards are all scorable. [`Plain`]
/// is the reference; [`avx2::Avx2`] computes the same with vector lanes.
/// The sweeps are generic over it and inlined into a function compiled for
/// its vector unit, so that their other loops vectorise by themselves.
trait Kernel: Copy {
    /// The moments of the groups of `sizes` (at most [`BLOCK`]), side by
    /// side in `x`, into `block`.
    fn moments<R: Reward>(self, x: &[R], sizes: &[u32], threshold: f64, block: &mut Block);

    /// The outputs of the four groups of `quad` (block entries `j..j + 4`)
    /// at once, where the kernel has a way for them; false to have them
    /// written group by group.
    #[allow(clippy::too_many_arguments)]
    fn write_quad<R: Reward>(
        self,
        _x: &[R],
        _quad: &[u32],
        _block: &Block,
        _j: usize,
        _rule: &Rule,
        _adv: &mut [MaybeUninit<f32>],
        _keep: &mut [MaybeUninit<bool>],
    ) -> bool {
        false
    }
}

#[derive(Clone, Copy)]
struct Plain;

impl Kernel for Plain {
    #[inline(always)]
    fn moments<R: Reward>(self, x: &[R], sizes: &[u32], threshold: f64, block: &mut Block) {
        let mut lo = 0;
        for (j, &s) in sizes.iter().enumerate() {
            block.set(j, &moments(&x[lo..lo + s as usize], threshold));
            lo += s as usize;
        }
    }
}

/// A run of whole groups, a block at a time, with the AVX2 kernel where the
/// CPU has it (and `simd` allows).
fn sweep<R: Reward>(
    simd: bool,
    x: &[R],
    sizes: &[u32],
    first_group: usize,
    rule: &Rule,
    pass: Pass<'_>,
) -> Status {
    #[cfg(target_arch = "x86_64")]
    if let Some(k) = avx2::Avx2::detect().filter(|_| simd) {
        return k.sweep(x, sizes, first_group, rule, pass);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = simd;
    sweep_with(Plain, x, sizes, first_group, rule, pass)
}

#[inline(always)]
fn sweep_with<R: Reward, K: Kernel>(
    k: K,
    mut x: &[R],
    sizes: &[u32],
    first_group: usize,
    rule: &Rule,
    pass: Pass<'_>,
) -> Status {
    let mut status = Status::default();
    let mut block = Block::EMPTY;
    let (known, mut out) = match pass {
        Pass::Moments(all) => {
            for sizes in sizes.chunks(BLOCK) {
                let (bx, rest) = x.split_at(sizes.iter().map(|&s| s as usize).sum());
                x = rest;
                k.moments(bx, sizes, rule.threshold, &mut block);
                all.extend((0..sizes.len()).map(|j| block.get(j)));
            }
            return status;
        }
        Pass::Outputs(known, out) => (known, out),
    };
    for (b, sizes) in sizes.chunks(BLOCK).enumerate() {
        let len: usize = sizes.iter().map(|&s| s as usize).sum();
        let (bx, rest) = x.split_at(len);
        let (mut bout, rest_out) = out.split_at(len, sizes.len());
        (x, out) = (rest, rest_out);
        let first = first_group + b * BLOCK;
        match known {
            Some(known) => {
                let known = &known[b * BLOCK..b * BLOCK + sizes.len()];
                for (j, m) in known.iter().enumerate() {
                    block.set(j, m);
                }
            }
            None => k.moments(bx, sizes, rule.threshold, &mut block),
        }
        let s = coefficients(&mut block, rule, sizes.len(), &mut bout);
        status.no_signal += s.no_signal;
        status.nonfinite |= s.nonfinite;
        let mut lo = 0;
        for (q, quad) in sizes.chunks(4).enumerate() {
            let span = quad.iter().map(|&s| s as usize).sum::<usize>();
            let (x, adv, keep) = (
                &bx[lo..lo + span],
                &mut bout.adv[lo..lo + span],
                &mut bout.keep[lo..lo + span],
            );
            lo += span;
            if k.write_quad(x, quad, &block, 4 * q, rule, adv, keep) {
                continue;
            }
            let mut at = 0;
            for (g, &s) in quad.iter().enumerate() {
                let (j, end) = (4 * q + g, at + s as usize);
                let (x, adv, keep) = (&x[at..end], &mut adv[at..end], &mut keep[at..end]);
                at = end;
                if let Some(v) = write(x, &block.coeff(j), rule, adv, keep) {
                    status.f32_overflow = status.f32_overflow.or(Some((first + j, v)));
                }
            }
        }
        if s.wide && status.f32_overflow.is_none() {
            status.f32_overflow = widest(bx, sizes, &block).map(|(j, v)| (first + j, v));
        }
    }
    status
}

/// What [`coefficients`] found.
struct Found {
    no_signal: usize,
    nonfinite: bool,
    /// Some group's advantages may not fit f32 (see [`widest`]).
    wide: bool,
}

/// Each group's coefficients and statistics, in one loop over the block
/// without branches that writes only the block's own arrays (so that the
/// compiler sees no aliasing, and vectorises it across groups); then the
/// statistics are copied out.
#[inline(always)]
fn coefficients(block: &mut Block, rule: &Rule, len: usize, out: &mut Out<'_>) -> Found {
    // One loop per form of the estimator, so that neither computes the other's division.
    let found = if rule.leave_one_out {
        coefficients_with(block, rule, len, |n, _| rule.unit * n / (n - 1.0))
    } else {
        coefficients_with(block, rule, len, |_, sd| {
            1.0 / (sd * rule.per_std + rule.plus)
        })
    };
    let len = len.min(BLOCK);
    for (o, &m) in out.mean.iter_mut().zip(&block.mean[..len]) {
        o.write(m * rule.unit);
    }
    for (o, &s) in out.std.iter_mut().zip(&block.std[..len]) {
        o.write(s);
    }
    let solved = block.solved[..len].iter().zip(&block.n[..len]);
    for (o, (&k, &n)) in out.solve_rate.iter_mut().zip(solved) {
        o.write(k / n);
    }
    for (o, &n) in out.num_valid.iter_mut().zip(&block.n[..len]) {
        o.write(n as u32);
    }
    found
}

/// [`coefficients`] with `mul(n, std)` the multiplier of `r - mean` of a
/// group with signal.
#[inline(always)]
fn coefficients_with(
    block: &mut Block,
    rule: &Rule,
    len: usize,
    mul: impl Fn(f64, f64) -> f64,
) -> Found {
    // The square of f32's largest value, so that the bound needs no root.
    const F32_MAX_SQUARED: f64 = f32::MAX as f64 * f32::MAX as f64;
    let len = len.min(BLOCK);
    let mut no_signal = 0;
    let (mut nonfinite, mut wide) = (false, false);
    for j in 0..len {
        let m = block.get(j);
        let several = m.n >= 2.0;
        let sd = if several {
            (m.m2 / (m.n - rule.ddof)).sqrt()
        } else {
            0.0
        };
        let signal = several & m.spread;
        let k = if signal { mul(m.n, sd) } else { 0.0 };
        block.shift[j] = if signal { m.mean } else { 0.0 };
        block.mul[j] = k;
        block.signal[j] = signal;
        block.std[j] = sd * rule.unit;
        no_signal += usize::from(!signal);
        let finite = m.sum.is_finite()
            & m.m2.is_finite()
            & (m.mean * rule.unit).is_finite()
            & (sd * rule.unit).is_finite();
        nonfinite |= (m.n > 0.0) & !finite;
        // No reward is further than sqrt(m2) from the mean (an infinite
        // product compares greater too).
        wide |= m.m2 * k * k > F32_MAX_SQUARED;
    }
    Found {
        no_signal,
        nonfinite,
        // pass@k's advantage is only the winner's, checked when written.
        wide: wide && rule.estimator != Estimator::GrpoPassk,
    }
}

/// The first group of a block whose advantages do not fit f32, and their
/// largest magnitude (looked for only when [`coefficients`]'s bound says
/// one may not).
#[cold]
fn widest<R: Reward>(x: &[R], sizes: &[u32], block: &Block) -> Option<(usize, f64)> {
    let mut lo = 0;
    for (j, &s) in sizes.iter().enumerate() {
        let group = &x[lo..lo + s as usize];
        lo += s as usize;
        let c = block.coeff(j);
        let top = group
            .iter()
            .map(|r| ((r.to_f64() - c.shift) * c.mul).abs())
            .filter(|v| !v.is_nan())
            .fold(0.0, f64::max);
        if (top as f32).is_infinite() {
            return Some((j, top));
        }
    }
    None
}

/// One group's advantages and keep mask (a group the kernel did not write
/// with three others: ragged sizes, NaN, pass@k, no AVX2); returns the
/// magnitude of a pass@k winner's advantage that does not fit f32.
// Out of line: the sweep's own loops are the hot ones.
#[inline(never)]
fn write<R: Reward>(
    x: &[R],
    c: &Coeff,
    rule: &Rule,
    adv: &mut [MaybeUninit<f32>],
    keep: &mut [MaybeUninit<bool>],
) -> Option<f64> {
    for ((a, k), r) in adv.iter_mut().zip(keep.iter_mut()).zip(x) {
        let v = r.to_f64();
        let kept = c.signal && !v.is_nan();
        a.write(if kept {
            ((v - c.shift) * c.mul) as f32
        } else {
            0.0
        });
        k.write(kept);
    }
    if rule.estimator == Estimator::GrpoPassk && c.signal {
        return write_winner(x, c, adv);
    }
    None
}

/// pass@k: the first rollout holding the group's maximum gets
/// `(max - second max) * mul`, every other rollout 0.
fn write_winner<R: Reward>(x: &[R], c: &Coeff, adv: &mut [MaybeUninit<f32>]) -> Option<f64> {
    for a in adv.iter_mut() {
        a.write(0.0);
    }
    // NaN compares false: it is never the maximum, nor the second.
    let larger = |a: f64, v: f64| if v > a { v } else { a };
    let max = x.iter().map(|r| r.to_f64()).fold(f64::NEG_INFINITY, larger);
    let best = x.iter().position(|r| r.to_f64() == max)?;
    let second = x
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != best)
        .map(|(_, r)| r.to_f64())
        .fold(f64::NEG_INFINITY, larger);
    let gap = max - second;
    if gap > 0.0 {
        let v = gap * c.mul;
        adv[best].write(v as f32);
        if (v as f32).is_infinite() {
            return Some(v);
        }
    }
    None
}

/// The AVX2 kernel. A group's rewards accumulate in four f64 lanes, and four
/// groups' lanes are then reduced together by a transpose (lane g of the
/// result is group g's), so that no group pays for a reduction of its own
/// and the statistics come out four groups to a vector. The compiler does
/// not find this by itself (it may not reassociate floating-point sums).
/// [`super::moments`] is the reference it must equal (up to the order of
/// the additions), and what it falls back to for a group that holds NaN.
#[cfg(target_arch = "x86_64")]
// Intrinsics are `unsafe` before Rust 1.87 and safe in AVX2 functions from
// then on; the blocks below keep the crate building on both.
#[allow(unused_unsafe)]
mod avx2 {
    use std::arch::x86_64::*;
    use std::mem::MaybeUninit;

    use super::{Block, Kernel, Pass, Reward, Rule, Status};

    /// Proof that the CPU has AVX2: made only by [`Avx2::detect`].
    #[derive(Clone, Copy)]
    pub(super) struct Avx2(());

    impl Avx2 {
        #[inline]
        pub(super) fn detect() -> Option<Avx2> {
            // std caches the answer.
            std::arch::is_x86_feature_detected!("avx2").then_some(Avx2(()))
        }

        /// [`super::sweep_with`] compiled for AVX2.
        pub(super) fn sweep<R: Reward>(
            self,
            x: &[R],
            sizes: &[u32],
            first_group: usize,
            rule: &Rule,
            pass: Pass<'_>,
        ) -> Status {
            #[target_feature(enable = "avx2")]
            unsafe fn sweep<R: Reward>(
                k: Avx2,
                x: &[R],
                sizes: &[u32],
                first_group: usize,
                rule: &Rule,
                pass: Pass<'_>,
            ) -> Status {
                super::sweep_with(k, x, sizes, first_group, rule, pass)
            }
            // SAFETY: an `Avx2` exists only where the CPU has AVX2.
            unsafe { sweep(self, x, sizes, first_group, rule, pass) }
        }
    }

    impl Kernel for Avx2 {
        #[inline(always)]
        fn moments<R: Reward>(self, x: &[R], sizes: &[u32], threshold: f64, block: &mut Block) {
            // SAFETY: as above.
            unsafe { moments(x, sizes, threshold, block) }
        }

        #[inline(always)]
        fn write_quad<R: Reward>(
            self,
            x: &[R],
            quad: &[u32],
            block: &Block,
            j: usize,
            rule: &Rule,
            adv: &mut [MaybeUninit<f32>],
            keep: &mut [MaybeUninit<bool>],
        ) -> bool {
            let s = quad[0] as usize;
            let equal = quad.len() == 4 && quad.iter().all(|&t| t as usize == s);
            // Every reward scorable; pass@k writes a winner.
            let simple = equal
                && (s < SMALL || s % 4 == 0)
                && block.n[j..j + 4].iter().all(|&n| n == s as f64)
                && rule.estimator != super::Estimator::GrpoPassk;
            if simple {
                // SAFETY: as above; `x`, `adv` and `keep` hold the 4s rewards
                // and outputs of the quad.
                unsafe { write_equal_quad(x, s, block, j, adv, keep) };
            }
            simple
        }
    }

    /// The moments of up to [`super::BLOCK`] groups, four at a time.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn moments<R: Reward>(x: &[R], sizes: &[u32], threshold: f64, block: &mut Block) {
        let mut lo = 0;
        for (q, quad) in sizes.chunks(4).take(super::BLOCK / 4).enumerate() {
            // A last, partial quad has empty groups.
            let mut groups: [&[R]; 4] = [&[]; 4];
            for (g, &s) in groups.iter_mut().zip(quad) {
                *g = &x[lo..lo + s as usize];
                lo += s as usize;
            }
            let s = groups[0].len();
            let [n, solved, sum, mean, m2, spread] =
                if s < SMALL && groups.iter().all(|g| g.len() == s) {
                    // SAFETY: the CPU has AVX2; the four groups lie side by side.
                    unsafe { small_quad(&x[lo - 4 * s..lo], s, threshold) }
                } else {
                    // SAFETY: the CPU has AVX2.
                    unsafe { quad_of(groups, threshold) }
                };
            let j = 4 * q;
            // SAFETY: the CPU has AVX2; each store writes four f64 at `j`,
            // and `j + 4 <= BLOCK`.
            unsafe {
                _mm256_storeu_pd(block.n.as_mut_ptr().add(j), n);
                _mm256_storeu_pd(block.solved.as_mut_ptr().add(j), solved);
                _mm256_storeu_pd(block.sum.as_mut_ptr().add(j), sum);
                _mm256_storeu_pd(block.mean.as_mut_ptr().add(j), mean);
                _mm256_storeu_pd(block.m2.as_mut_ptr().add(j), m2);
            }
            // SAFETY: the CPU has AVX2.
            let (sums, spread) = unsafe { (lanes(sum), _mm256_movemask_pd(spread)) };
            for (g, group) in groups.iter().enumerate().take(quad.len()) {
                block.spread[j + g] = spread & (1 << g) != 0;
                // NaN (not scorable), or an infinity, or an overflow.
                if !sums[g].is_finite() {
                    block.set(j + g, &super::moments(group, threshold));
                }
            }
        }
    }

    /// Groups smaller than this, four of the same size side by side, are
    /// read across the groups: lane g of the k-th vector is group g's k-th
    /// reward, so that every statistic is a plain vector sum and no group
    /// pays for a reduction of its own (which would cost more than its few
    /// rewards).
    const SMALL: usize = 8;

    /// `[n, solved, sum, mean, m2, spread]` of four groups, lane g group g's
    /// (spread: all ones where not all equal).
    type Quad = [__m256d; 6];

    /// Four groups of any sizes, in one pass each: a group accumulates its
    /// rewards less its first (so that equal rewards give a variance of
    /// exactly 0, and their squares lose no precision to a large mean) in
    /// four lanes, and the four groups' lanes are then reduced together by a
    /// transpose. `m2 = sum(d^2) - sum(d)^2 / n` (Chan, Golub and LeVeque's
    /// shifted data): with the shift a member of the group, its relative
    /// error is at most a few `n` ulps.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn quad_of<R: Reward>(groups: [&[R]; 4], threshold: f64) -> Quad {
        let first = |g: usize| groups[g].first().map_or(0.0, |r| r.to_f64());
        // SAFETY (the whole block): the CPU has AVX2.
        unsafe {
            let t = _mm256_set1_pd(threshold);
            let (a, b, c, d) = (
                one_pass(groups[0], first(0), t),
                one_pass(groups[1], first(1), t),
                one_pass(groups[2], first(2), t),
                one_pass(groups[3], first(3), t),
            );
            let shifted = transpose_add([a.sum, b.sum, c.sum, d.sum]);
            let squares = transpose_add([a.squares, b.squares, c.squares, d.squares]);
            let solved = transpose_add([a.solved, b.solved, c.solved, d.solved]);
            let spread = transpose_or([a.spread, b.spread, c.spread, d.spread]);
            let n = _mm256_setr_pd(
                groups[0].len() as f64,
                groups[1].len() as f64,
                groups[2].len() as f64,
                groups[3].len() as f64,
            );
            let head = _mm256_setr_pd(first(0), first(1), first(2), first(3));
            let offset = _mm256_div_pd(shifted, n);
            let mean = _mm256_add_pd(head, offset);
            let sum = _mm256_add_pd(_mm256_mul_pd(head, n), shifted);
            // Rounding can leave a hair below 0; a NaN (an overflow) stays.
            let m2 = _mm256_max_pd(
                _mm256_setzero_pd(),
                _mm256_sub_pd(squares, _mm256_mul_pd(shifted, offset)),
            );
            // A NaN or an infinity makes the shifted sum NaN or infinite,
            // which `store`'s fallback sees through `sum`.
            let sum = _mm256_add_pd(sum, _mm256_sub_pd(shifted, shifted));
            [n, solved, sum, mean, m2, spread]
        }
    }

    /// Four groups of `s` rewards each, side by side in `x`, read across.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn small_quad<R: Reward>(x: &[R], s: usize, threshold: f64) -> Quad {
        // SAFETY (the whole block): the CPU has AVX2; `x` holds 4s rewards,
        // so every gathered index is inside it.
        unsafe {
            let t = _mm256_set1_pd(threshold);
            let zero = _mm256_setzero_pd();
            let one = _mm256_set1_pd(1.0);
            // The k-th reward of each group, kept for the second pass.
            let mut across = [zero; SMALL];
            for (k, v) in across.iter_mut().enumerate().take(s) {
                *v = R::gather4(x, k, s);
            }
            let across = &across[..s.min(SMALL)];
            let (mut sum, mut solved, mut spread) = (zero, zero, zero);
            for &v in across {
                sum = _mm256_add_pd(sum, v);
                let at_least = _mm256_cmp_pd::<_CMP_GE_OQ>(v, t);
                solved = _mm256_add_pd(solved, _mm256_and_pd(at_least, one));
                spread = _mm256_or_pd(spread, _mm256_cmp_pd::<_CMP_NEQ_UQ>(v, across[0]));
            }
            let n = _mm256_set1_pd(s as f64);
            let mean = _mm256_div_pd(sum, n);
            let mut m2 = zero;
            for &v in across {
                let d = _mm256_sub_pd(v, mean);
                m2 = _mm256_add_pd(m2, _mm256_mul_pd(d, d));
            }
            [n, solved, sum, mean, m2, spread]
        }
    }

    /// For lane l of the v-th vector of four groups of `s` rewards side by
    /// side, the f64 lanes (as pairs of i32) of group `(4v + l) / s`: the
    /// indices that spread each group's coefficient over its rewards.
    const SPREAD: [[[i32; 8]; SMALL]; SMALL] = {
        let mut t = [[[0; 8]; SMALL]; SMALL];
        let mut s = 1;
        while s < SMALL {
            let mut v = 0;
            while v < s {
                let mut l = 0;
                while l < 4 {
                    let g = ((4 * v + l) / s) as i32;
                    t[s][v][2 * l] = 2 * g;
                    t[s][v][2 * l + 1] = 2 * g + 1;
                    l += 1;
                }
                v += 1;
            }
            s += 1;
        }
        t
    };

    /// Four `bool`s as the bytes of a u32, from a 4-bit mask.
    const BYTES: [u32; 16] = {
        let mut t = [0u32; 16];
        let mut m = 0;
        while m < 16 {
            let mut l = 0;
            while l < 4 {
                t[m] |= ((m as u32 >> l) & 1) << (8 * l);
                l += 1;
            }
            m += 1;
        }
        t
    };

    /// The outputs of four groups of `s` scorable rewards each, side by side
    /// (`s < SMALL` or a multiple of 4): 4s rewards are s whole vectors. A
    /// vector takes its groups' coefficients by a permutation (small groups
    /// share vectors), and no group pays for a loop of its own.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn write_equal_quad<R: Reward>(
        x: &[R],
        s: usize,
        block: &Block,
        j: usize,
        adv: &mut [MaybeUninit<f32>],
        keep: &mut [MaybeUninit<bool>],
    ) {
        debug_assert!(x.len() == 4 * s && adv.len() == 4 * s && keep.len() == 4 * s);
        let signal = |g: usize| -i64::from(block.signal[j + g]);
        // SAFETY (the whole block): the CPU has AVX2; `j + 4 <= BLOCK`; the
        // loads and stores cover `x`, `adv`, `keep` (4s each, the caller's
        // contract) and write valid f32 / bool.
        unsafe {
            let shift = _mm256_castpd_si256(_mm256_loadu_pd(block.shift.as_ptr().add(j)));
            let mul = _mm256_castpd_si256(_mm256_loadu_pd(block.mul.as_ptr().add(j)));
            let on = _mm256_setr_epi64x(signal(0), signal(1), signal(2), signal(3));
            let (a, k) = (adv.as_mut_ptr(), keep.as_mut_ptr());
            // The group of each lane of the v-th vector: its coefficients by a
            // permutation of the quad's, its keep bytes by a table.
            let write = |v: usize, c: &[R], idx: __m256i| {
                let each = |w: __m256i| _mm256_castsi256_pd(_mm256_permutevar8x32_epi32(w, idx));
                let (sh, mu, kept) = (each(shift), each(mul), each(on));
                let y = _mm256_and_pd(_mm256_mul_pd(_mm256_sub_pd(R::load4(c), sh), mu), kept);
                _mm_storeu_ps(a.add(4 * v).cast::<f32>(), _mm256_cvtpd_ps(y));
                let bits = _mm256_movemask_pd(kept) as usize;
                k.add(4 * v).cast::<u32>().write_unaligned(BYTES[bits & 15]);
            };
            if s < SMALL {
                for (v, c) in x.chunks_exact(4).enumerate().take(s) {
                    write(
                        v,
                        c,
                        _mm256_loadu_si256(SPREAD[s][v].as_ptr().cast::<__m256i>()),
                    );
                }
            } else {
                // Whole vectors: group g's are s/4 in a row.
                for (g, group) in x.chunks_exact(s).enumerate() {
                    let pair = _mm256_setr_epi32(0, 1, 0, 1, 0, 1, 0, 1);
                    let idx = _mm256_add_epi32(pair, _mm256_set1_epi32(2 * g as i32));
                    for (v, c) in group.chunks_exact(4).enumerate() {
                        write(g * s / 4 + v, c, idx);
                    }
                }
            }
        }
    }

    /// A group's one pass, lane-wise, over its rewards less `head`.
    #[derive(Clone, Copy)]
    struct Lanes {
        sum: __m256d,
        squares: __m256d,
        solved: __m256d,
        /// All ones in a lane that saw a reward other than `head`.
        spread: __m256d,
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn one_pass<R: Reward>(x: &[R], head: f64, t: __m256d) -> Lanes {
        let chunks = x.chunks_exact(4);
        let rest = chunks.remainder();
        // SAFETY (the whole block): the CPU has AVX2; `load4` reads four.
        unsafe {
            let one = _mm256_set1_pd(1.0);
            let h = _mm256_set1_pd(head);
            let zero = _mm256_setzero_pd();
            let mut l = Lanes {
                sum: zero,
                squares: zero,
                solved: zero,
                spread: zero,
            };
            let mut add = |v: __m256d, valid: __m256d| {
                let d = _mm256_and_pd(_mm256_sub_pd(v, h), valid);
                l.sum = _mm256_add_pd(l.sum, d);
                l.squares = _mm256_add_pd(l.squares, _mm256_mul_pd(d, d));
                let at_least = _mm256_and_pd(_mm256_cmp_pd::<_CMP_GE_OQ>(v, t), valid);
                l.solved = _mm256_add_pd(l.solved, _mm256_and_pd(at_least, one));
                l.spread = _mm256_or_pd(l.spread, _mm256_cmp_pd::<_CMP_NEQ_UQ>(d, zero));
            };
            let all = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
            for c in chunks {
                add(R::load4(c), all);
            }
            if !rest.is_empty() {
                let (v, valid) = partial(rest);
                add(v, valid);
            }
            l
        }
    }

    /// The last one to three rewards of a group as lanes (0 beyond them),
    /// and a mask of the lanes they fill.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn partial<R: Reward>(rest: &[R]) -> (__m256d, __m256d) {
        // Built in registers: scalar stores read back as a vector would stall.
        let at = |i: usize| rest.get(i).map_or(0.0, |r| r.to_f64());
        // SAFETY: the CPU has AVX2.
        unsafe {
            let index = _mm256_setr_pd(0.0, 1.0, 2.0, 3.0);
            let valid = _mm256_cmp_pd::<_CMP_LT_OQ>(index, _mm256_set1_pd(rest.len() as f64));
            (_mm256_setr_pd(at(0), at(1), at(2), 0.0), valid)
        }
    }

    /// `[sum(a), sum(b), sum(c), sum(d)]` of four vectors, each summed
    /// pairwise.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn transpose_add([a, b, c, d]: [__m256d; 4]) -> __m256d {
        unsafe {
            // [a0+a1, b0+b1, a2+a3, b2+b3] and the same of c, d.
            let (ab, cd) = (_mm256_hadd_pd(a, b), _mm256_hadd_pd(c, d));
            let low = _mm256_permute2f128_pd::<0x20>(ab, cd);
            let high = _mm256_permute2f128_pd::<0x31>(ab, cd);
            _mm256_add_pd(low, high)
        }
    }

    /// All ones in lane g where vector g has any lane not zero.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn transpose_or([a, b, c, d]: [__m256d; 4]) -> __m256d {
        // SAFETY: the CPU has AVX2.
        unsafe {
            let any = |v: __m256d| if _mm256_testz_pd(v, v) == 0 { -1 } else { 0 };
            _mm256_castsi256_pd(_mm256_setr_epi64x(any(a), any(b), any(c), any(d)))
        }
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn lanes(v: __m256d) -> [f64; 4] {
        let mut l = [0.0f64; 4];
        // SAFETY: the CPU has AVX2; four f64 are stored into four.
        unsafe { _mm256_storeu_pd(l.as_mut_ptr(), v) };
        l
    }
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
