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
//! The kernel sweeps blocks of whole groups: each group's moments in one
//! pass (f64, four lanes), then the coefficients of all the block's groups
//! in one loop (their square roots and divisions independent of each
//! other), then the outputs, each element written once. It is plain Rust:
//! a hand-written AVX2 version and a copy compiled for AVX2 were measured
//! against it and did not pay 1.5x (`CHANGELOG.md`, issue #10).
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
pub trait Reward: Copy + Send + Sync {
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
        if groups.is_contiguous() {
            run(rewards, sizes, params, par, out)
        } else {
            gathered(rewards, groups, params, par, out)
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
    par: bool,
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
        par,
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
    par: bool,
    mut out: Out<'_>,
) -> std::result::Result<usize, Failure> {
    let mut status = sweep_all(x, sizes, params, 1.0, par, out.reborrow());
    if status.nonfinite {
        // A statistic is infinite or NaN: an infinite reward, or squares
        // beyond f64.
        let largest = x.iter().fold(0.0f64, |m, r| m.max(r.to_f64().abs()));
        if largest.is_infinite() {
            return Err(Failure::Infinite);
        }
        let unit = power_of_two_below(largest);
        let y: Vec<f64> = x.iter().map(|r| r.to_f64() / unit).collect();
        status = sweep_all(&y, sizes, params, unit, par, out);
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
    par: bool,
    out: Out<'_>,
) -> Status {
    let tasks = split(x, sizes, if par { TASK_GROUPS } else { usize::MAX }, out);
    let rule = Rule::new(params, unit, 0.0);
    let known: Option<Vec<Vec<Moments>>> = needs_batch(params).then(|| {
        let moments_of = |t: &Task<'_, R>| {
            let mut m = Vec::with_capacity(t.sizes.len());
            sweep(t.x, t.sizes, t.first_group, &rule, Pass::Moments(&mut m));
            m
        };
        if par {
            tasks.par_iter().map(moments_of).collect()
        } else {
            tasks.iter().map(moments_of).collect()
        }
    });
    let batch = known
        .as_ref()
        .map_or(0.0, |m| batch_std(m.iter().flatten(), &rule));
    let rule = Rule::new(params, unit, batch);
    let each = |(t, m): (Task<'_, R>, Option<Vec<Moments>>)| {
        let pass = Pass::Outputs(m.as_deref(), t.out);
        sweep(t.x, t.sizes, t.first_group, &rule, pass)
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
        let head = Out {
            adv,
            keep,
            mean,
            std,
            solve_rate,
            num_valid,
        };
        let rest = Out {
            adv: adv_rest,
            keep: keep_rest,
            mean: mean_rest,
            std: std_rest,
            solve_rate: solve_rest,
            num_valid: valid_rest,
        };
        (head, rest)
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

/// The scorable rewards of one group, in the units of the sweep, as sums
/// of their differences from `head`, one of them: so that equal rewards
/// give exactly 0, and the squares lose no precision to a large mean
/// (Chan, Golub and LeVeque's shifted data: `m2 = q - s^2 / n` then errs by
/// a few `n` ulps).
#[derive(Clone, Copy, Debug)]
struct Moments {
    n: f64,
    solved: f64,
    head: f64,
    /// `sum(r - head)`.
    s: f64,
    /// `sum((r - head)^2)`.
    q: f64,
    /// Not all equal.
    spread: bool,
}

impl Moments {
    /// NaN when no reward is scorable.
    #[inline(always)]
    fn mean(&self) -> f64 {
        self.head + self.s / self.n
    }

    #[inline(always)]
    fn sum(&self) -> f64 {
        if self.n > 0.0 {
            self.head * self.n + self.s
        } else {
            0.0
        }
    }

    /// Sum of squared deviations from the mean. Rounding can leave a hair
    /// below 0; an infinity stays (`q` is infinite only where `s` is 0).
    #[inline(always)]
    fn m2(&self) -> f64 {
        if self.n > 0.0 {
            (self.q - self.s * (self.s / self.n)).max(0.0)
        } else {
            0.0
        }
    }
}

/// A group's moments, plainly: the scorable rewards' count, solved count,
/// mean and extremes, then squared deviations from their mean in a second
/// pass. The reference for [`moments`], and what it falls back to for a
/// group that holds NaN, or whose sums are not finite.
#[cold]
fn moments_plain<R: Reward>(x: &[R], threshold: f64) -> Moments {
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
        head: mean,
        s: 0.0,
        q: scorable().map(|v| (v - mean) * (v - mean)).sum(),
        spread: min < max,
    }
}

/// A group's moments in one pass over its rewards, in four lanes of sums
/// (the compiler may not reassociate one floating-point sum into vector
/// lanes). A group whose sums are not finite (a NaN, an infinity, an
/// overflow) is computed again by [`moments_plain`].
// Lane loops index several arrays in step, on purpose.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn moments<R: Reward>(x: &[R], threshold: f64) -> Moments {
    const L: usize = 4;
    let head = x.first().map_or(0.0, |r| r.to_f64());
    let (mut sum, mut squares) = ([0.0f64; L], [0.0f64; L]);
    let (mut solved, mut spread) = ([0.0f64; L], [0.0f64; L]);
    // Each statement over all four lanes, so that each becomes one vector
    // operation.
    let mut add = |v: [f64; L], live: [bool; L]| {
        let d = v.map(|v| v - head);
        for l in 0..L {
            sum[l] += d[l];
        }
        for l in 0..L {
            squares[l] += d[l] * d[l];
        }
        for l in 0..L {
            solved[l] += if live[l] & (v[l] >= threshold) {
                1.0
            } else {
                0.0
            };
        }
        for l in 0..L {
            let a = d[l].abs();
            spread[l] = if a > spread[l] { a } else { spread[l] };
        }
    };
    let chunks = x.chunks_exact(L);
    let rest = chunks.remainder();
    for c in chunks {
        let v = [c[0].to_f64(), c[1].to_f64(), c[2].to_f64(), c[3].to_f64()];
        add(v, [true; L]);
    }
    if !rest.is_empty() {
        // The last one to three rewards; the other lanes `head`, which adds 0.
        let at = |i: usize| rest.get(i).map_or(head, |r| r.to_f64());
        let live = [true, rest.len() > 1, rest.len() > 2, false];
        add([at(0), at(1), at(2), head], live);
    }
    let (s, q) = (sum.iter().sum::<f64>(), squares.iter().sum::<f64>());
    if !(s.is_finite() && q.is_finite()) {
        return moments_plain(x, threshold);
    }
    Moments {
        n: x.len() as f64,
        solved: solved.iter().sum(),
        head,
        s,
        q,
        spread: spread.iter().any(|&a| a > 0.0),
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
    /// The estimator, as numbers: `r - mean` is divided by
    /// `std * per_std + plus`, or for RLOO multiplied by `unit * n / (n - 1)`.
    per_std: f64,
    plus: f64,
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
        // The divisor of each estimator; RLOO's multiplier is in `coeff`.
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
        }
    }
}

/// Std of the batch from the groups' moments (Chan et al.'s pairwise
/// combination), so no pass over the rewards is needed: of all scorable
/// rewards, or for REINFORCE++ of the group-centred ones (whose batch mean
/// is exactly 0 and whose squares sum to the groups' m2).
fn batch_std<'a>(moments: impl Iterator<Item = &'a Moments> + Clone, rule: &Rule) -> f64 {
    let n: f64 = moments.clone().map(|m| m.n).sum();
    let within: f64 = moments.clone().map(Moments::m2).sum();
    let between = if rule.estimator == Estimator::ReinforcePpBaseline {
        0.0
    } else {
        let mean = moments.clone().map(Moments::sum).sum::<f64>() / n;
        moments
            .filter(|m| m.n > 0.0)
            .map(|m| m.n * (m.mean() - mean) * (m.mean() - mean))
            .sum()
    };
    if n >= 2.0 {
        ((within + between) / (n - rule.ddof)).sqrt()
    } else {
        0.0
    }
}

/// A group's advantages are `(r - shift) * mul` (pass@k: the winner gets
/// `(max - second max) * mul`); both are 0 for a group without signal.
#[derive(Clone, Copy)]
struct Coeff {
    shift: f64,
    mul: f64,
    signal: bool,
}

/// Groups per block: their moments, then their coefficients in one loop
/// across the groups (whose square roots and divisions vectorise), then
/// their outputs.
const BLOCK: usize = 256;

/// A block's groups, one array per field (a struct per group would be
/// written field by field and read back whole, which stalls).
struct Block {
    n: [f64; BLOCK],
    solved: [f64; BLOCK],
    head: [f64; BLOCK],
    s: [f64; BLOCK],
    q: [f64; BLOCK],
    spread: [bool; BLOCK],
    mean: [f64; BLOCK],
    m2: [f64; BLOCK],
    std: [f64; BLOCK],
    shift: [f64; BLOCK],
    mul: [f64; BLOCK],
    signal: [bool; BLOCK],
}

impl Block {
    #[inline(always)]
    fn set(&mut self, j: usize, m: &Moments) {
        self.n[j] = m.n;
        self.solved[j] = m.solved;
        self.head[j] = m.head;
        self.s[j] = m.s;
        self.q[j] = m.q;
        self.spread[j] = m.spread;
    }

    /// The coefficients of the first `len` groups from their moments.
    #[inline(always)]
    fn coefficients(&mut self, len: usize, rule: &Rule) {
        for j in 0..len.min(BLOCK) {
            let m = Moments {
                n: self.n[j],
                solved: self.solved[j],
                head: self.head[j],
                s: self.s[j],
                q: self.q[j],
                spread: self.spread[j],
            };
            self.mean[j] = m.mean();
            self.m2[j] = m.m2();
            let several = self.n[j] >= 2.0;
            let std = if several {
                (self.m2[j] / (self.n[j] - rule.ddof)).sqrt()
            } else {
                0.0
            };
            let signal = several & self.spread[j];
            let mul = if rule.estimator == Estimator::Rloo {
                rule.unit * self.n[j] / (self.n[j] - 1.0)
            } else {
                1.0 / (std * rule.per_std + rule.plus)
            };
            self.std[j] = std;
            self.signal[j] = signal;
            self.mul[j] = if signal { mul } else { 0.0 };
            self.shift[j] = if signal { self.mean[j] } else { 0.0 };
        }
    }
}

/// A run of whole groups (a thread's task): their moments, or their outputs.
fn sweep<R: Reward>(
    x: &[R],
    sizes: &[u32],
    first_group: usize,
    rule: &Rule,
    pass: Pass<'_>,
) -> Status {
    // The square of f32's largest value, so that the bound needs no root.
    const F32_MAX_SQUARED: f64 = f32::MAX as f64 * f32::MAX as f64;
    let (known, out) = match pass {
        Pass::Moments(all) => {
            let mut lo = 0;
            for &s in sizes {
                all.push(moments(&x[lo..lo + s as usize], rule.threshold));
                lo += s as usize;
            }
            return Status::default();
        }
        Pass::Outputs(known, out) => (known, out),
    };
    let mut status = Status::default();
    let mut block = Box::new(Block {
        n: [0.0; BLOCK],
        solved: [0.0; BLOCK],
        head: [0.0; BLOCK],
        s: [0.0; BLOCK],
        q: [0.0; BLOCK],
        spread: [false; BLOCK],
        mean: [0.0; BLOCK],
        m2: [0.0; BLOCK],
        std: [0.0; BLOCK],
        shift: [0.0; BLOCK],
        mul: [0.0; BLOCK],
        signal: [false; BLOCK],
    });
    let mut lo = 0;
    for (b, sizes) in sizes.chunks(BLOCK).enumerate() {
        let first = b * BLOCK;
        let mut at = lo;
        for (j, &s) in sizes.iter().enumerate() {
            let m = match known {
                Some(k) => k[first + j],
                None => moments(&x[at..at + s as usize], rule.threshold),
            };
            block.set(j, &m);
            at += s as usize;
        }
        block.coefficients(sizes.len(), rule);
        for (j, &s) in sizes.iter().enumerate() {
            let (g, k) = (lo..lo + s as usize, first + j);
            lo += s as usize;
            let group = &x[g.clone()];
            let (n, m2, mean, std) = (block.n[j], block.m2[j], block.mean[j], block.std[j]);
            let c = Coeff {
                shift: block.shift[j],
                mul: block.mul[j],
                signal: block.signal[j],
            };
            out.mean[k].write(mean * rule.unit);
            out.std[k].write(std * rule.unit);
            out.solve_rate[k].write(block.solved[j] / n);
            out.num_valid[k].write(n as u32);
            status.no_signal += usize::from(!c.signal);
            let finite = (block.head[j] * n + block.s[j]).is_finite() && m2.is_finite();
            let finite = finite && (mean * rule.unit).is_finite() && (std * rule.unit).is_finite();
            status.nonfinite |= n > 0.0 && !finite;
            let (adv, keep) = (&mut out.adv[g.clone()], &mut out.keep[g]);
            if rule.estimator == Estimator::GrpoPassk {
                write_masked(group, &c, adv, keep);
                if let Some(v) = write_winner(group, &c, adv) {
                    status.f32_overflow = status.f32_overflow.or(Some((first_group + k, v)));
                }
            } else if c.signal && n as usize == group.len() {
                // Every reward scorable: a loop without branches.
                for ((a, k), r) in adv.iter_mut().zip(keep.iter_mut()).zip(group) {
                    a.write(((r.to_f64() - c.shift) * c.mul) as f32);
                    k.write(true);
                }
            } else {
                write_masked(group, &c, adv, keep);
            }
            // No reward is further than sqrt(m2) from the mean.
            if m2 * c.mul * c.mul > F32_MAX_SQUARED && status.f32_overflow.is_none() {
                status.f32_overflow = widest(group, &c).map(|v| (first_group + k, v));
            }
        }
    }
    status
}

/// A group's advantages and keep mask where some reward may be NaN or the
/// group has no signal.
// Out of line: the sweep's own loop is the hot one.
#[inline(never)]
fn write_masked<R: Reward>(
    x: &[R],
    c: &Coeff,
    adv: &mut [MaybeUninit<f32>],
    keep: &mut [MaybeUninit<bool>],
) {
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
}

/// The largest magnitude of a group's advantages when it does not fit f32
/// (looked for only when the bound in the sweep says it may not).
#[cold]
fn widest<R: Reward>(x: &[R], c: &Coeff) -> Option<f64> {
    let top = x
        .iter()
        .map(|r| ((r.to_f64() - c.shift) * c.mul).abs())
        .filter(|v| !v.is_nan())
        .fold(0.0, f64::max);
    (top as f32).is_infinite().then_some(top)
}

/// pass@k: the first rollout holding the group's maximum gets
/// `(max - second max) * mul`, every other rollout 0; returns the winner's
/// advantage if it does not fit f32.
fn write_winner<R: Reward>(x: &[R], c: &Coeff, adv: &mut [MaybeUninit<f32>]) -> Option<f64> {
    for a in adv.iter_mut() {
        a.write(0.0);
    }
    if !c.signal {
        return None;
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
