//! A group's moments (count, solved count, sum, mean, squared deviations,
//! whether they are all equal), the batch's std from them, and the
//! [`Block`] of groups the sweeps keep them in.

use super::element::Reward;
use super::estimators::{Coeff, Estimator, Rule};

/// The scorable rewards of one group, in the units of the sweep.
#[derive(Clone, Copy, Debug)]
pub(super) struct Moments {
    pub(super) n: f64,
    pub(super) solved: f64,
    pub(super) sum: f64,
    pub(super) mean: f64,
    /// Sum of squared deviations from the mean.
    pub(super) m2: f64,
    /// Not all equal.
    pub(super) spread: bool,
}

/// A group's moments, plainly: the scorable rewards' count, solved count,
/// sum and extremes, then squared deviations from their mean in a second
/// pass. The reference for the AVX2 kernel, and what it falls back to for a
/// group that holds NaN.
pub(super) fn moments<R: Reward>(x: &[R], threshold: f64) -> Moments {
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

/// Std of the batch from the groups' moments (Chan et al.'s pairwise
/// combination), so no pass over the rewards is needed: of all scorable
/// rewards, or for REINFORCE++ of the group-centred ones (whose batch mean
/// is exactly 0 and whose squares sum to the groups' m2).
pub(super) fn batch_std<'a>(
    moments: impl Iterator<Item = &'a Moments> + Clone,
    rule: &Rule,
) -> f64 {
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
pub(super) const BLOCK: usize = 256;

/// A block's groups, one array per field, so that the loops over the groups
/// vectorise: their moments, then their coefficients.
pub(super) struct Block {
    pub(super) n: [f64; BLOCK],
    pub(super) solved: [f64; BLOCK],
    pub(super) sum: [f64; BLOCK],
    pub(super) mean: [f64; BLOCK],
    pub(super) m2: [f64; BLOCK],
    pub(super) spread: [bool; BLOCK],
    pub(super) std: [f64; BLOCK],
    pub(super) shift: [f64; BLOCK],
    pub(super) mul: [f64; BLOCK],
    pub(super) signal: [bool; BLOCK],
}

impl Block {
    pub(super) const EMPTY: Block = Block {
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
    pub(super) fn set(&mut self, j: usize, m: &Moments) {
        self.n[j] = m.n;
        self.solved[j] = m.solved;
        self.sum[j] = m.sum;
        self.mean[j] = m.mean;
        self.m2[j] = m.m2;
        self.spread[j] = m.spread;
    }

    #[inline(always)]
    pub(super) fn get(&self, j: usize) -> Moments {
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
    pub(super) fn coeff(&self, j: usize) -> Coeff {
        Coeff {
            shift: self.shift[j],
            mul: self.mul[j],
            signal: self.signal[j],
        }
    }
}
