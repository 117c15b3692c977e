//! GRPO-family advantage estimators over grouped rewards.
//!
//! Every estimator is written as `A_i = (r_i - shift_g) * scale_g` for the
//! rollout's group `g` (plus a single winner per group for pass@k), so the
//! statistics pass is shared and the final pass is one multiply-add per
//! rollout. Statistics accumulate in f64 with two passes (mean, then squared
//! deviations) so a group of large equal rewards has a variance of exactly 0.
//!
//! Conventions (each a parameter where peers differ): NaN rewards are not
//! scorable, leave the statistics alone and get advantage 0; a group with fewer
//! than two scorable rewards, or whose scorable rewards are all equal, carries
//! no signal and gets exactly 0.

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

/// A reward element type the kernels accept without converting the array.
pub trait Reward: Copy + Send + Sync {
    fn to_f64(self) -> f64;

    /// `(sum, m2, min, max, solved)` of a group expected to hold no NaN (a NaN
    /// or infinity makes `sum` non-finite). Element types with a vector
    /// kernel override it.
    #[doc(hidden)]
    #[inline(always)]
    fn finite_stats(x: &[Self], threshold: f64) -> [f64; 5] {
        portable_stats(x, threshold)
    }

    /// `out[i] = (x[i] - shift) * mul` in f32.
    #[doc(hidden)]
    #[inline(always)]
    fn write_centred(x: &[Self], shift: f32, mul: f32, out: &mut [f32]) {
        for (a, r) in out.iter_mut().zip(x) {
            *a = (r.to_f64() as f32 - shift) * mul;
        }
    }
}

impl Reward for f32 {
    #[inline]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn finite_stats(x: &[Self], threshold: f64) -> [f64; 5] {
        if x.len() % 4 == 0 {
            // SAFETY: SSE2 is part of the x86_64 baseline.
            unsafe { sse2::finite_stats(x, threshold) }
        } else {
            portable_stats(x, threshold)
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn write_centred(x: &[Self], shift: f32, mul: f32, out: &mut [f32]) {
        // SAFETY: SSE2 is part of the x86_64 baseline.
        unsafe { sse2::write_centred(x, shift, mul, out) }
    }
}

#[inline(always)]
fn portable_stats<R: Reward>(x: &[R], threshold: f64) -> [f64; 5] {
    let acc = finite_group_acc(x, threshold);
    [acc.sum, acc.m2, acc.min, acc.max, f64::from(acc.solved)]
}

/// SSE2 kernels for f32 rewards. SSE2 is part of x86_64 itself, so no
/// run-time detection is needed; wider units (AVX) would need it and are not
/// used. Statistics are accumulated in f64 lanes.
#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::*;

    #[inline]
    #[target_feature(enable = "sse2")]
    fn hsum(v: __m128d) -> f64 {
        let mut lanes = [0.0f64; 2];
        // SAFETY: storing two f64 lanes into a two-element array.
        unsafe { _mm_storeu_pd(lanes.as_mut_ptr(), v) };
        lanes[0] + lanes[1]
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    fn lanes(v: __m128d) -> [f64; 2] {
        let mut lanes = [0.0f64; 2];
        // SAFETY: as in `hsum`.
        unsafe { _mm_storeu_pd(lanes.as_mut_ptr(), v) };
        lanes
    }

    /// `x.len()` must be a multiple of 4.
    #[inline]
    #[target_feature(enable = "sse2")]
    pub(super) fn finite_stats(x: &[f32], threshold: f64) -> [f64; 5] {
        debug_assert!(x.len() % 4 == 0);
        let (mut s0, mut s1) = (_mm_setzero_pd(), _mm_setzero_pd());
        let (mut n0, mut n1) = (_mm_set1_pd(f64::INFINITY), _mm_set1_pd(f64::INFINITY));
        let (mut x0, mut x1) = (
            _mm_set1_pd(f64::NEG_INFINITY),
            _mm_set1_pd(f64::NEG_INFINITY),
        );
        let (mut c0, mut c1) = (_mm_setzero_pd(), _mm_setzero_pd());
        let t = _mm_set1_pd(threshold);
        let one = _mm_set1_pd(1.0);
        for c in x.chunks_exact(4) {
            // SAFETY: `c` holds exactly four f32.
            let v = unsafe { _mm_loadu_ps(c.as_ptr()) };
            let lo = _mm_cvtps_pd(v);
            let hi = _mm_cvtps_pd(_mm_movehl_ps(v, v));
            s0 = _mm_add_pd(s0, lo);
            s1 = _mm_add_pd(s1, hi);
            n0 = _mm_min_pd(n0, lo);
            n1 = _mm_min_pd(n1, hi);
            x0 = _mm_max_pd(x0, lo);
            x1 = _mm_max_pd(x1, hi);
            c0 = _mm_add_pd(c0, _mm_and_pd(_mm_cmpge_pd(lo, t), one));
            c1 = _mm_add_pd(c1, _mm_and_pd(_mm_cmpge_pd(hi, t), one));
        }
        let sum = hsum(_mm_add_pd(s0, s1));
        let mean = _mm_set1_pd(sum / x.len() as f64);
        let (mut m0, mut m1) = (_mm_setzero_pd(), _mm_setzero_pd());
        for c in x.chunks_exact(4) {
            // SAFETY: as above.
            let v = unsafe { _mm_loadu_ps(c.as_ptr()) };
            let lo = _mm_sub_pd(_mm_cvtps_pd(v), mean);
            let hi = _mm_sub_pd(_mm_cvtps_pd(_mm_movehl_ps(v, v)), mean);
            m0 = _mm_add_pd(m0, _mm_mul_pd(lo, lo));
            m1 = _mm_add_pd(m1, _mm_mul_pd(hi, hi));
        }
        let [a, b] = lanes(_mm_min_pd(n0, n1));
        let [c, d] = lanes(_mm_max_pd(x0, x1));
        [
            sum,
            hsum(_mm_add_pd(m0, m1)),
            a.min(b),
            c.max(d),
            hsum(_mm_add_pd(c0, c1)),
        ]
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    pub(super) fn write_centred(x: &[f32], shift: f32, mul: f32, out: &mut [f32]) {
        let (sh, m) = (_mm_set1_ps(shift), _mm_set1_ps(mul));
        let mut xs = x.chunks_exact(4);
        let mut os = out.chunks_exact_mut(4);
        for (c, o) in (&mut xs).zip(&mut os) {
            // SAFETY: `c` and `o` hold exactly four f32 each.
            unsafe {
                let v = _mm_loadu_ps(c.as_ptr());
                _mm_storeu_ps(o.as_mut_ptr(), _mm_mul_ps(_mm_sub_ps(v, sh), m));
            }
        }
        for (a, &r) in os.into_remainder().iter_mut().zip(xs.remainder()) {
            *a = (r - shift) * mul;
        }
    }
}

impl Reward for f64 {
    #[inline]
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

#[derive(Clone, Copy)]
struct Acc {
    n: u32,
    solved: u32,
    sum: f64,
    m2: f64,
    min: f64,
    max: f64,
    second: f64,
    best: u32,
}

impl Acc {
    const EMPTY: Acc = Acc {
        n: 0,
        solved: 0,
        sum: 0.0,
        m2: 0.0,
        min: f64::INFINITY,
        max: f64::NEG_INFINITY,
        second: f64::NEG_INFINITY,
        best: u32::MAX,
    };

    #[inline]
    fn push(&mut self, i: usize, x: f64, threshold: f64) {
        if x.is_nan() {
            return;
        }
        self.n += 1;
        self.sum += x;
        self.solved += u32::from(x >= threshold);
        self.min = self.min.min(x);
        if x > self.max {
            self.second = self.max;
            self.max = x;
            self.best = i as u32;
        } else if x > self.second {
            self.second = x;
        }
    }

    fn mean(&self) -> f64 {
        if self.n == 0 {
            f64::NAN
        } else {
            self.sum / f64::from(self.n)
        }
    }

    fn has_signal(&self) -> bool {
        self.n >= 2 && self.min < self.max
    }
}

fn validate_shape<R: Reward>(rewards: &[R], groups: &Groups, params: &Params) -> Result<()> {
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

/// Rejects infinities; returns whether every reward is finite (no NaN),
/// which selects the branch-free kernels.
fn validate_values<R: Reward>(rewards: &[R]) -> Result<bool> {
    // A branch-free fold vectorises; the position is only looked for on failure.
    let finite = rewards
        .iter()
        .fold(true, |all, r| all & r.to_f64().is_finite());
    if !finite {
        if let Some(i) = rewards.iter().position(|r| r.to_f64().is_infinite()) {
            return Err(CoreError::NonFinite {
                what: "rewards",
                index: i,
                value: rewards[i].to_f64(),
            });
        }
    }
    Ok(finite)
}

/// Statistics of one contiguous group: a first pass (count, sum, extremes)
/// then a second over the same, cache-hot, slice (squared deviations). Both
/// are branch-free so that they vectorise; the top-2 scan runs only for
/// pass@k.
// Lane loops index several arrays in step, on purpose.
#[allow(clippy::needless_range_loop)]
fn group_acc<R: Reward>(x: &[R], lo: usize, threshold: f64, top2: bool, finite: bool) -> Acc {
    if finite && !top2 {
        return finite_group_acc(x, threshold);
    }
    // Four explicit lanes: floating-point reductions are not reassociated by
    // the compiler, so lane-wise accumulators are what lets them vectorise.
    const L: usize = 4;
    let mut n = [0u32; L];
    let mut solved = [0u32; L];
    let mut sum = [0.0f64; L];
    let mut min = [f64::INFINITY; L];
    let mut max = [f64::NEG_INFINITY; L];
    let mut lane = |l: usize, v: f64| {
        let valid = !v.is_nan();
        n[l] += u32::from(valid);
        solved[l] += u32::from(v >= threshold);
        sum[l] += if valid { v } else { 0.0 };
        // Plain comparisons (minsd/maxsd) rather than f64::min's NaN
        // handling: a NaN compares false and leaves the extreme unchanged.
        min[l] = if v < min[l] { v } else { min[l] };
        max[l] = if v > max[l] { v } else { max[l] };
    };
    let chunks = x.chunks_exact(L);
    let rest = chunks.remainder();
    for c in chunks {
        for l in 0..L {
            lane(l, c[l].to_f64());
        }
    }
    for (l, r) in rest.iter().enumerate() {
        lane(l, r.to_f64());
    }
    let mut acc = Acc::EMPTY;
    acc.n = n.iter().sum();
    acc.solved = solved.iter().sum();
    acc.sum = sum.iter().sum();
    acc.min = min.iter().fold(f64::INFINITY, |a, &b| a.min(b));
    acc.max = max.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let mean = acc.mean();
    let mut m2 = [0.0f64; L];
    let dev = |r: &R| {
        let d = r.to_f64() - mean;
        if d.is_nan() {
            0.0
        } else {
            d * d
        }
    };
    let chunks = x.chunks_exact(L);
    let rest = chunks.remainder();
    for c in chunks {
        for l in 0..L {
            m2[l] += dev(&c[l]);
        }
    }
    acc.m2 = m2.iter().sum::<f64>() + rest.iter().map(dev).sum::<f64>();
    if top2 {
        let mut t = Acc::EMPTY;
        for (j, r) in x.iter().enumerate() {
            t.push(lo + j, r.to_f64(), threshold);
        }
        acc.second = t.second;
        acc.best = t.best;
    }
    acc
}

/// [`group_acc`] for a group without NaN: no per-element validity test, so
/// every loop is a straight vectorisable reduction over lane arrays.
// Lane loops index several arrays in step, on purpose.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn finite_group_acc<R: Reward>(x: &[R], threshold: f64) -> Acc {
    const L: usize = 4;
    let mut sum = [0.0f64; L];
    let mut min = [f64::INFINITY; L];
    let mut max = [f64::NEG_INFINITY; L];
    let mut solved = [0u32; L];
    let chunks = x.chunks_exact(L);
    let rest = chunks.remainder();
    for c in chunks {
        for l in 0..L {
            let v = c[l].to_f64();
            sum[l] += v;
            min[l] = if v < min[l] { v } else { min[l] };
            max[l] = if v > max[l] { v } else { max[l] };
            solved[l] += u32::from(v >= threshold);
        }
    }
    let mut acc = Acc::EMPTY;
    acc.sum = sum.iter().sum();
    acc.min = min.iter().fold(f64::INFINITY, |a, &b| a.min(b));
    acc.max = max.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    acc.solved = solved.iter().sum();
    for r in rest {
        let v = r.to_f64();
        acc.sum += v;
        acc.min = acc.min.min(v);
        acc.max = acc.max.max(v);
        acc.solved += u32::from(v >= threshold);
    }
    acc.n = x.len() as u32;
    let mean = acc.mean();
    let mut m2 = [0.0f64; L];
    let chunks = x.chunks_exact(L);
    let rest = chunks.remainder();
    for c in chunks {
        for l in 0..L {
            let d = c[l].to_f64() - mean;
            m2[l] += d * d;
        }
    }
    acc.m2 = m2.iter().sum::<f64>()
        + rest
            .iter()
            .map(|r| (r.to_f64() - mean) * (r.to_f64() - mean))
            .sum::<f64>();
    acc
}

/// Scatter version for groups spread over the batch.
fn scattered_accs<R: Reward>(rewards: &[R], index: &[u32], num_groups: usize, t: f64) -> Vec<Acc> {
    let mut accs = vec![Acc::EMPTY; num_groups];
    for (i, (r, &g)) in rewards.iter().zip(index).enumerate() {
        accs[g as usize].push(i, r.to_f64(), t);
    }
    let means: Vec<f64> = accs.iter().map(Acc::mean).collect();
    for (r, &g) in rewards.iter().zip(index) {
        let x = r.to_f64();
        if !x.is_nan() {
            let d = x - means[g as usize];
            accs[g as usize].m2 += d * d;
        }
    }
    accs
}

fn std_of(m2: f64, n: u64, unbiased: bool) -> f64 {
    let ddof = u64::from(unbiased);
    if n <= ddof || n < 2 {
        0.0
    } else {
        (m2 / (n - ddof) as f64).sqrt()
    }
}

/// A group's advantages as `(r - shift) * mul`, plus pass@k's single winner.
#[derive(Clone, Copy, Default)]
struct Coeff {
    shift: f64,
    mul: f64,
    winner: Option<(usize, f32)>,
}

/// `batch_divisor` is the batch-level std the estimator divides by, where it
/// needs one (batch scale, REINFORCE++ whitening).
fn coeff(acc: &Acc, params: &Params, batch_divisor: f64) -> Coeff {
    if !acc.has_signal() {
        return Coeff::default();
    }
    let n = f64::from(acc.n);
    let mean = acc.mean();
    let std = std_of(acc.m2, u64::from(acc.n), params.unbiased);
    let divisor = match params.scale {
        Scale::Group => std + params.eps,
        Scale::Batch => batch_divisor + params.eps,
        Scale::None => 1.0,
    };
    match params.estimator {
        Estimator::Grpo => Coeff {
            shift: mean,
            mul: 1.0 / divisor,
            winner: None,
        },
        // r - (sum - r) / (n - 1) == (r - mean) * n / (n - 1)
        Estimator::Rloo => Coeff {
            shift: mean,
            mul: n / (n - 1.0),
            winner: None,
        },
        Estimator::ReinforcePpBaseline => Coeff {
            shift: mean,
            mul: 1.0 / (batch_divisor + params.eps),
            winner: None,
        },
        // Never reached: compute_into refuses them.
        Estimator::Remax | Estimator::Opo | Estimator::Gpg => Coeff::default(),
        Estimator::GrpoPassk => {
            let gap = acc.max - acc.second;
            Coeff {
                shift: 0.0,
                mul: 0.0,
                winner: (gap > 0.0).then(|| (acc.best as usize, (gap / divisor) as f32)),
            }
        }
    }
}

#[inline]
fn advantage_of(x: f64, c: &Coeff) -> f32 {
    if x.is_nan() || c.mul == 0.0 {
        0.0
    } else {
        ((x - c.shift) * c.mul) as f32
    }
}

/// Whether the estimator needs statistics of the whole batch before any
/// advantage can be written.
fn needs_batch(params: &Params) -> bool {
    params.estimator == Estimator::ReinforcePpBaseline
        || (params.scale == Scale::Batch
            && matches!(params.estimator, Estimator::Grpo | Estimator::GrpoPassk))
}

/// Batch-level std from the group moments (Chan et al.'s pairwise
/// combination), so no extra pass over the rewards is needed.
fn batch_divisor(accs: &[Acc], params: &Params) -> f64 {
    let n_valid: u64 = accs.iter().map(|a| u64::from(a.n)).sum();
    let within: f64 = accs.iter().map(|a| a.m2).sum();
    if params.estimator == Estimator::ReinforcePpBaseline {
        // Group-centred rewards have batch mean exactly 0 and a sum of
        // squares equal to the summed within-group m2.
        return std_of(within, n_valid, params.unbiased);
    }
    let total: f64 = accs.iter().map(|a| a.sum).sum();
    let mean = if n_valid > 0 {
        total / n_valid as f64
    } else {
        0.0
    };
    let between: f64 = accs
        .iter()
        .filter(|a| a.n > 0)
        .map(|a| f64::from(a.n) * (a.mean() - mean) * (a.mean() - mean))
        .sum();
    std_of(within + between, n_valid, params.unbiased)
}

/// Blocks of whole groups with their slices of the outputs, so that threads
/// write disjoint memory.
struct Block<'a> {
    first_group: usize,
    lo: usize,
    sizes: &'a [u32],
    adv: &'a mut [f32],
    keep: &'a mut [bool],
}

fn blocks<'a>(
    sizes: &'a [u32],
    mut adv: &'a mut [f32],
    mut keep: &'a mut [bool],
) -> Vec<Block<'a>> {
    const GROUPS_PER_BLOCK: usize = 2048;
    let mut out = Vec::with_capacity(sizes.len().div_ceil(GROUPS_PER_BLOCK));
    let mut lo = 0;
    for (b, chunk) in sizes.chunks(GROUPS_PER_BLOCK).enumerate() {
        let n: usize = chunk.iter().map(|&s| s as usize).sum();
        let (a, rest_a) = std::mem::take(&mut adv).split_at_mut(n);
        let (k, rest_k) = std::mem::take(&mut keep).split_at_mut(n);
        adv = rest_a;
        keep = rest_k;
        out.push(Block {
            first_group: b * GROUPS_PER_BLOCK,
            lo,
            sizes: chunk,
            adv: a,
            keep: k,
        });
        lo += n;
    }
    out
}

/// Group sizes with a kernel of their own: with the size a constant, each
/// group's loops unroll into straight-line vector code.
const UNIFORM_SIZES: [usize; 7] = [2, 4, 8, 16, 32, 64, 128];

/// The common batch (every group the same small size, contiguous) and a
/// group-local estimator.
fn uniform_size(groups: &Groups, params: &Params) -> Option<usize> {
    let sizes = groups.sizes();
    let g = *sizes.first()? as usize;
    let eligible = groups.is_contiguous()
        && !needs_batch(params)
        && params.estimator != Estimator::GrpoPassk
        && UNIFORM_SIZES.contains(&g)
        && sizes.iter().all(|&s| s as usize == g);
    eligible.then_some(g)
}

/// Per-group outputs of the const-size kernel, one block's worth.
struct GroupOut<'a> {
    mean: &'a mut [f64],
    std: &'a mut [f64],
    solve_rate: &'a mut [f64],
}

/// The const-size kernel. It writes the final group statistics itself (no
/// accumulator array, no serial pass after it) and returns the number of
/// groups without signal; `None` as soon as a group holds a NaN or an
/// infinity (its sum is not finite), and the caller takes the general path.
fn uniform<R: Reward, const G: usize>(
    rewards: &[R],
    params: &Params,
    par: bool,
    adv: &mut [f32],
    keep: &mut [bool],
    stats: &mut GroupStats,
) -> Option<usize> {
    let t = params.success_threshold;
    let one = |x: &[R], a: &mut [f32], k: &mut [bool], out: GroupOut<'_>| -> Option<usize> {
        let mut no_signal = 0;
        let per_group = x
            .chunks_exact(G)
            .zip(a.chunks_exact_mut(G))
            .zip(k.chunks_exact_mut(G))
            .zip(out.mean.iter_mut().zip(out.std.iter_mut()))
            .zip(out.solve_rate.iter_mut());
        for ((((x, a), k), (mean, std)), solve) in per_group {
            let [sum, m2, min, max, solved] = R::finite_stats(&x[..G], t);
            if !sum.is_finite() {
                return None;
            }
            let acc = Acc {
                n: G as u32,
                solved: solved as u32,
                sum,
                m2,
                min,
                max,
                ..Acc::EMPTY
            };
            let c = coeff(&acc, params, 0.0);
            let signal = acc.has_signal();
            if signal {
                R::write_centred(&x[..G], c.shift as f32, c.mul as f32, &mut a[..G]);
            } else {
                a[..G].fill(0.0);
                no_signal += 1;
            }
            k[..G].fill(signal);
            *mean = acc.mean();
            *std = std_of(m2, G as u64, params.unbiased);
            *solve = solved / G as f64;
        }
        Some(no_signal)
    };
    const GROUPS_PER_BLOCK: usize = 2048;
    let block = G * GROUPS_PER_BLOCK;
    let GroupStats {
        mean,
        std,
        solve_rate,
        ..
    } = stats;
    if par {
        rewards
            .par_chunks(block)
            .zip(adv.par_chunks_mut(block))
            .zip(keep.par_chunks_mut(block))
            .zip(mean.par_chunks_mut(GROUPS_PER_BLOCK))
            .zip(std.par_chunks_mut(GROUPS_PER_BLOCK))
            .zip(solve_rate.par_chunks_mut(GROUPS_PER_BLOCK))
            .map(|(((((x, a), k), mean), std), solve_rate)| {
                one(
                    x,
                    a,
                    k,
                    GroupOut {
                        mean,
                        std,
                        solve_rate,
                    },
                )
            })
            .try_reduce(|| 0, |p, q| Some(p + q))
    } else {
        one(
            rewards,
            adv,
            keep,
            GroupOut {
                mean,
                std,
                solve_rate,
            },
        )
    }
}

/// How a sweep may run: across the pool, and with the NaN-free kernels.
#[derive(Clone, Copy)]
struct Sweep {
    par: bool,
    finite: bool,
}

/// Contiguous groups: one parallel sweep over blocks of groups. For
/// group-local estimators (`batch` is None) statistics and advantages are
/// computed in the same sweep while the group's rewards are in cache.
fn contiguous<R: Reward>(
    rewards: &[R],
    sizes: &[u32],
    params: &Params,
    sweep: Sweep,
    adv: &mut [f32],
    keep: &mut [bool],
    accs: Option<&[Acc]>,
) -> Vec<Acc> {
    let Sweep { par, finite } = sweep;
    let divisor = accs.map_or(0.0, |a| batch_divisor(a, params));
    let t = params.success_threshold;
    let top2 = params.estimator == Estimator::GrpoPassk;
    let run = |block: Block<'_>| -> Vec<Acc> {
        let mut lo = block.lo;
        let mut out = Vec::with_capacity(block.sizes.len());
        for (j, &s) in block.sizes.iter().enumerate() {
            let s = s as usize;
            let x = &rewards[lo..lo + s];
            let acc = match accs {
                Some(a) => a[block.first_group + j],
                None => group_acc(x, lo, t, top2, finite),
            };
            let c = coeff(&acc, params, divisor);
            let local = lo - block.lo;
            let signal = acc.has_signal();
            let adv = &mut block.adv[local..local + s];
            let keep = &mut block.keep[local..local + s];
            if signal && c.mul != 0.0 && finite {
                for (a, r) in adv.iter_mut().zip(x) {
                    *a = ((r.to_f64() - c.shift) * c.mul) as f32;
                }
                keep.fill(true);
            } else if signal && c.mul != 0.0 {
                for ((a, k), r) in adv.iter_mut().zip(keep.iter_mut()).zip(x) {
                    let v = r.to_f64();
                    let valid = !v.is_nan();
                    *a = if valid {
                        ((v - c.shift) * c.mul) as f32
                    } else {
                        0.0
                    };
                    *k = valid;
                }
            } else if signal && finite {
                keep.fill(true);
            } else if signal {
                for (k, r) in keep.iter_mut().zip(x) {
                    *k = !r.to_f64().is_nan();
                }
            }
            if let Some((i, v)) = c.winner {
                block.adv[i - block.lo] = v;
            }
            out.push(acc);
            lo += s;
        }
        out
    };
    let work = blocks(sizes, adv, keep);
    if par {
        work.into_par_iter().map(run).flatten_iter().collect()
    } else {
        work.into_iter().flat_map(run).collect()
    }
}

/// Compute advantages and group statistics for `rewards` grouped by `groups`.
pub fn compute<R: Reward>(rewards: &[R], groups: &Groups, params: &Params) -> Result<Advantages> {
    let mut advantages = vec![0.0f32; rewards.len()];
    let mut keep = vec![false; rewards.len()];
    let (stats, frac_zero_std) = compute_into(rewards, groups, params, &mut advantages, &mut keep)?;
    Ok(Advantages {
        advantages,
        stats,
        keep,
        frac_zero_std,
    })
}

/// [`compute`] into caller-provided outputs (the binding hands numpy's
/// buffers, which numpy backs with huge pages); returns the group statistics
/// and `frac_zero_std`. Every element of both outputs is written.
pub fn compute_into<R: Reward>(
    rewards: &[R],
    groups: &Groups,
    params: &Params,
    advantages: &mut [f32],
    keep: &mut [bool],
) -> Result<(GroupStats, f64)> {
    if params.estimator.is_baselined() {
        return Err(CoreError::InvalidParameter(format!(
            "estimator '{}' is computed by baseline::compute",
            <&str>::from(params.estimator)
        )));
    }
    validate_shape(rewards, groups, params)?;
    if advantages.len() != rewards.len() || keep.len() != rewards.len() {
        return Err(CoreError::InvalidParameter(format!(
            "outputs have {} and {} entries for {} rewards",
            advantages.len(),
            keep.len(),
            rewards.len()
        )));
    }
    parallel::install(rewards.len(), |par| {
        if let Some(g) = uniform_size(groups, params) {
            // Finiteness is checked on the way (a group's sum), not in a pass of its own.
            if let Some(out) = try_uniform(rewards, groups, params, par, g, advantages, keep) {
                return Ok(out);
            }
        }
        let finite = validate_values(rewards)?;
        advantages.fill(0.0);
        keep.fill(false);
        let accs = compute_inner(
            rewards,
            groups,
            params,
            Sweep { par, finite },
            advantages,
            keep,
        );
        Ok(finish(accs, groups, params))
    })
}

fn try_uniform<R: Reward>(
    rewards: &[R],
    groups: &Groups,
    params: &Params,
    par: bool,
    g: usize,
    a: &mut [f32],
    k: &mut [bool],
) -> Option<(GroupStats, f64)> {
    let ng = groups.num_groups();
    let mut stats = GroupStats {
        mean: vec![0.0; ng],
        std: vec![0.0; ng],
        size: groups.sizes().to_vec(),
        num_valid: groups.sizes().to_vec(),
        solve_rate: vec![0.0; ng],
    };
    let s = &mut stats;
    let no_signal = match g {
        2 => uniform::<R, 2>(rewards, params, par, a, k, s),
        4 => uniform::<R, 4>(rewards, params, par, a, k, s),
        8 => uniform::<R, 8>(rewards, params, par, a, k, s),
        16 => uniform::<R, 16>(rewards, params, par, a, k, s),
        32 => uniform::<R, 32>(rewards, params, par, a, k, s),
        64 => uniform::<R, 64>(rewards, params, par, a, k, s),
        _ => uniform::<R, 128>(rewards, params, par, a, k, s),
    }?;
    Some((stats, no_signal as f64 / ng as f64))
}

/// The general path; `advantages` and `keep` arrive zeroed.
fn compute_inner<R: Reward>(
    rewards: &[R],
    groups: &Groups,
    params: &Params,
    sweep: Sweep,
    advantages: &mut [f32],
    keep: &mut [bool],
) -> Vec<Acc> {
    let Sweep { par, finite } = sweep;
    let accs = if groups.is_contiguous() {
        let sizes = groups.sizes();
        let top2 = params.estimator == Estimator::GrpoPassk;
        if needs_batch(params) {
            let mut offset = 0;
            let accs: Vec<Acc> = sizes
                .iter()
                .map(|&s| {
                    let lo = offset;
                    offset += s as usize;
                    group_acc(
                        &rewards[lo..offset],
                        lo,
                        params.success_threshold,
                        top2,
                        finite,
                    )
                })
                .collect();
            contiguous(rewards, sizes, params, sweep, advantages, keep, Some(&accs));
            accs
        } else {
            contiguous(rewards, sizes, params, sweep, advantages, keep, None)
        }
    } else {
        let index = groups.index();
        let accs = scattered_accs(
            rewards,
            &index,
            groups.num_groups(),
            params.success_threshold,
        );
        let divisor = if needs_batch(params) {
            batch_divisor(&accs, params)
        } else {
            0.0
        };
        let coeffs: Vec<Coeff> = accs.iter().map(|a| coeff(a, params, divisor)).collect();
        let fill = |(i, (a, k)): (usize, (&mut f32, &mut bool))| {
            let g = index[i] as usize;
            let v = rewards[i].to_f64();
            *a = advantage_of(v, &coeffs[g]);
            *k = accs[g].has_signal() && !v.is_nan();
        };
        if par {
            advantages
                .par_iter_mut()
                .zip(keep.par_iter_mut())
                .enumerate()
                .for_each(fill);
        } else {
            advantages
                .iter_mut()
                .zip(keep.iter_mut())
                .enumerate()
                .for_each(fill);
        }
        for (i, v) in coeffs.iter().filter_map(|c| c.winner) {
            advantages[i] = v;
        }
        accs
    };
    accs
}

/// Group statistics from the accumulators, and the result.
fn finish(accs: Vec<Acc>, groups: &Groups, params: &Params) -> (GroupStats, f64) {
    let num_groups = accs.len();
    let no_signal = accs.iter().filter(|a| !a.has_signal()).count();
    let stats = GroupStats {
        mean: accs.iter().map(Acc::mean).collect(),
        std: accs
            .iter()
            .map(|a| std_of(a.m2, u64::from(a.n), params.unbiased))
            .collect(),
        size: groups.sizes().to_vec(),
        num_valid: accs.iter().map(|a| a.n).collect(),
        solve_rate: accs
            .iter()
            .map(|a| {
                if a.n == 0 {
                    f64::NAN
                } else {
                    f64::from(a.solved) / f64::from(a.n)
                }
            })
            .collect(),
    };
    let frac_zero_std = if num_groups == 0 {
        0.0
    } else {
        no_signal as f64 / num_groups as f64
    };
    (stats, frac_zero_std)
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
}
