//! The estimators: their names and parameters, and how each turns a
//! group's statistics into advantages. An estimator becomes a [`Rule`] (one
//! arm of [`Rule::new`] each), which gives every group its [`Coeff`]s:
//! `A_i = (r_i - shift) * mul`, or for pass@k the winner's
//! `(max - second max) * mul`.

use std::mem::MaybeUninit;

use strum::{EnumString, IntoStaticStr, VariantNames};

use super::element::Reward;
use super::statistics::{Block, BLOCK};
use super::sweep::Out;

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

/// How the statistics become advantages, in the units of the sweep.
#[derive(Clone, Copy)]
pub(super) struct Rule {
    pub(super) estimator: Estimator,
    pub(super) ddof: f64,
    /// `success_threshold` in units.
    pub(super) threshold: f64,
    /// What one unit of the sweep is worth in reward: 1 unless the rewards
    /// are too large to square.
    pub(super) unit: f64,
    /// The estimator, as numbers (so that the loop over groups does not
    /// branch on it): `r - mean` is divided by `std * per_std + plus`, or
    /// for RLOO multiplied by `unit * n / (n - 1)`.
    pub(super) per_std: f64,
    pub(super) plus: f64,
    pub(super) leave_one_out: bool,
}

/// A group's advantages are `(r - shift) * mul` (pass@k: the winner gets
/// `(max - second max) * mul`); both are 0 for a group without signal.
#[derive(Clone, Copy, Default)]
pub(super) struct Coeff {
    pub(super) shift: f64,
    pub(super) mul: f64,
    pub(super) signal: bool,
}

/// Whether the estimator needs the batch's statistics before any advantage
/// can be written.
pub(super) fn needs_batch(params: &Params) -> bool {
    params.estimator == Estimator::ReinforcePpBaseline
        || (params.scale == Scale::Batch
            && matches!(params.estimator, Estimator::Grpo | Estimator::GrpoPassk))
}

impl Rule {
    /// `batch_std` (in units) is the std of the batch that `scale="batch"`
    /// and REINFORCE++ divide by, 0 until it is known.
    pub(super) fn new(params: &Params, unit: f64, batch_std: f64) -> Self {
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

/// What [`coefficients`] found.
pub(super) struct Found {
    pub(super) no_signal: usize,
    pub(super) nonfinite: bool,
    /// Some group's advantages may not fit f32 (see [`widest`]).
    pub(super) wide: bool,
}

/// Each group's coefficients and statistics, in one loop over the block
/// without branches that writes only the block's own arrays (so that the
/// compiler sees no aliasing, and vectorises it across groups); then the
/// statistics are copied out.
#[inline(always)]
pub(super) fn coefficients(block: &mut Block, rule: &Rule, len: usize, out: &mut Out<'_>) -> Found {
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
pub(super) fn widest<R: Reward>(x: &[R], sizes: &[u32], block: &Block) -> Option<(usize, f64)> {
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
pub(super) fn write<R: Reward>(
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
