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

use std::str::FromStr;

use rayon::prelude::*;

use crate::error::{CoreError, Result};
use crate::group::Groups;
use crate::parallel;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Estimator {
    /// `(r - mean_g) / (std + eps)` (Shao et al. 2024, DeepSeekMath).
    Grpo,
    /// Leave-one-out baseline: `r - (sum_g - r) / (n_g - 1)` (Ahmadian et al. 2024).
    Rloo,
    /// `r - mean_g`, then whitened over the batch (REINFORCE++, Hu 2025).
    ReinforcePpBaseline,
    /// Only the best rollout of a group gets `max - second max` (pass@k
    /// training, as verl's `grpo_passk`).
    GrpoPassk,
}

impl Estimator {
    pub const NAMES: &'static str = "'grpo', 'rloo', 'reinforce_pp_baseline', 'grpo_passk'";
}

impl FromStr for Estimator {
    type Err = CoreError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "grpo" => Ok(Self::Grpo),
            "rloo" => Ok(Self::Rloo),
            "reinforce_pp_baseline" | "reinforce_plus_plus_baseline" | "reinforce++-baseline" => {
                Ok(Self::ReinforcePpBaseline)
            }
            "grpo_passk" => Ok(Self::GrpoPassk),
            _ => Err(CoreError::UnknownName {
                what: "estimator",
                got: s.to_owned(),
                expected: Self::NAMES,
            }),
        }
    }
}

/// What the centred reward of `grpo` / `grpo_passk` is divided by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// The group's std (GRPO).
    Group,
    /// One std of all rewards in the batch (TRL `scale_rewards="batch"`).
    Batch,
    /// Nothing (Dr. GRPO, Liu et al. 2025).
    None,
}

impl Scale {
    pub const NAMES: &'static str = "'group', 'batch', 'none'";
}

impl FromStr for Scale {
    type Err = CoreError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "group" => Ok(Self::Group),
            "batch" => Ok(Self::Batch),
            "none" => Ok(Self::None),
            _ => Err(CoreError::UnknownName {
                what: "scale",
                got: s.to_owned(),
                expected: Self::NAMES,
            }),
        }
    }
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
}

impl Reward for f32 {
    #[inline]
    fn to_f64(self) -> f64 {
        f64::from(self)
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

fn validate<R: Reward>(rewards: &[R], groups: &Groups, params: &Params) -> Result<()> {
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
    if let Some(i) = rewards.iter().position(|r| r.to_f64().is_infinite()) {
        return Err(CoreError::NonFinite {
            what: "rewards",
            index: i,
            value: rewards[i].to_f64(),
        });
    }
    Ok(())
}

/// First pass (count, sum, extremes) then second pass (squared deviations).
fn accumulate<R: Reward>(rewards: &[R], groups: &Groups, threshold: f64, par: bool) -> Vec<Acc> {
    if groups.contiguous {
        let offsets = groups.offsets();
        let one = |w: &[u64]| {
            let (lo, hi) = (w[0] as usize, w[1] as usize);
            let mut acc = Acc::EMPTY;
            for (j, r) in rewards[lo..hi].iter().enumerate() {
                acc.push(lo + j, r.to_f64(), threshold);
            }
            let mean = acc.mean();
            acc.m2 = rewards[lo..hi]
                .iter()
                .map(|r| r.to_f64())
                .filter(|x| !x.is_nan())
                .map(|x| (x - mean) * (x - mean))
                .sum();
            acc
        };
        if par {
            offsets.par_windows(2).map(one).collect()
        } else {
            offsets.windows(2).map(one).collect()
        }
    } else {
        let mut accs = vec![Acc::EMPTY; groups.num_groups()];
        for (i, (r, &g)) in rewards.iter().zip(&groups.index).enumerate() {
            accs[g as usize].push(i, r.to_f64(), threshold);
        }
        let means: Vec<f64> = accs.iter().map(Acc::mean).collect();
        for (r, &g) in rewards.iter().zip(&groups.index) {
            let x = r.to_f64();
            if !x.is_nan() {
                let d = x - means[g as usize];
                accs[g as usize].m2 += d * d;
            }
        }
        accs
    }
}

fn std_of(m2: f64, n: u64, unbiased: bool) -> f64 {
    let ddof = u64::from(unbiased);
    if n <= ddof || n < 2 {
        0.0
    } else {
        (m2 / (n - ddof) as f64).sqrt()
    }
}

/// Compute advantages and group statistics for `rewards` grouped by `groups`.
pub fn compute<R: Reward>(rewards: &[R], groups: &Groups, params: &Params) -> Result<Advantages> {
    validate(rewards, groups, params)?;
    parallel::install(rewards.len(), |par| {
        compute_inner(rewards, groups, params, par)
    })
}

fn compute_inner<R: Reward>(
    rewards: &[R],
    groups: &Groups,
    params: &Params,
    par: bool,
) -> Result<Advantages> {
    let accs = accumulate(rewards, groups, params.success_threshold, par);
    let means: Vec<f64> = accs.iter().map(Acc::mean).collect();
    let stds: Vec<f64> = accs
        .iter()
        .map(|a| std_of(a.m2, u64::from(a.n), params.unbiased))
        .collect();

    // Batch-level moments from the group moments (Chan et al.'s pairwise
    // combination), so no extra pass over the rewards is needed.
    let n_valid: u64 = accs.iter().map(|a| u64::from(a.n)).sum();
    let batch_sum: f64 = accs.iter().map(|a| a.sum).sum();
    let batch_mean = if n_valid > 0 {
        batch_sum / n_valid as f64
    } else {
        0.0
    };
    let within_m2: f64 = accs.iter().map(|a| a.m2).sum();
    let batch_std = || {
        let between: f64 = accs
            .iter()
            .zip(&means)
            .filter(|(a, _)| a.n > 0)
            .map(|(a, &m)| f64::from(a.n) * (m - batch_mean) * (m - batch_mean))
            .sum();
        std_of(within_m2 + between, n_valid, params.unbiased)
    };

    let num_groups = accs.len();
    let mut shift = vec![0.0f64; num_groups];
    let mut mul = vec![0.0f64; num_groups];
    let mut winners: Vec<(u32, f32)> = Vec::new();
    let divisor = match (params.estimator, params.scale) {
        (Estimator::Grpo | Estimator::GrpoPassk, Scale::Batch) => Some(batch_std()),
        (Estimator::ReinforcePpBaseline, _) => {
            // Group-centred rewards have batch mean exactly 0 and a sum of
            // squares equal to the summed within-group m2.
            Some(std_of(within_m2, n_valid, params.unbiased))
        }
        _ => None,
    };
    for (g, acc) in accs.iter().enumerate() {
        if !acc.has_signal() {
            continue;
        }
        let n = f64::from(acc.n);
        match params.estimator {
            Estimator::Grpo => {
                shift[g] = means[g];
                mul[g] = match params.scale {
                    Scale::Group => 1.0 / (stds[g] + params.eps),
                    Scale::Batch => 1.0 / (divisor.unwrap_or(0.0) + params.eps),
                    Scale::None => 1.0,
                };
            }
            Estimator::Rloo => {
                shift[g] = means[g];
                mul[g] = n / (n - 1.0);
            }
            Estimator::ReinforcePpBaseline => {
                shift[g] = means[g];
                mul[g] = 1.0 / (divisor.unwrap_or(0.0) + params.eps);
            }
            Estimator::GrpoPassk => {
                let gap = acc.max - acc.second;
                let value = match params.scale {
                    Scale::Group => gap / (stds[g] + params.eps),
                    Scale::Batch => gap / (divisor.unwrap_or(0.0) + params.eps),
                    Scale::None => gap,
                };
                if gap > 0.0 {
                    winners.push((acc.best, value as f32));
                }
            }
        }
    }

    let index = &groups.index;
    let adv_of = |i: usize| -> f32 {
        let x = rewards[i].to_f64();
        let g = index[i] as usize;
        if x.is_nan() || mul[g] == 0.0 {
            0.0
        } else {
            ((x - shift[g]) * mul[g]) as f32
        }
    };
    let keep_of = |i: usize| -> bool {
        !rewards[i].to_f64().is_nan() && accs[index[i] as usize].has_signal()
    };
    let n = rewards.len();
    let (mut advantages, keep): (Vec<f32>, Vec<bool>) = if par {
        (
            (0..n).into_par_iter().map(adv_of).collect(),
            (0..n).into_par_iter().map(keep_of).collect(),
        )
    } else {
        ((0..n).map(adv_of).collect(), (0..n).map(keep_of).collect())
    };
    for (i, v) in winners {
        advantages[i as usize] = v;
    }

    let no_signal = accs.iter().filter(|a| !a.has_signal()).count();
    let stats = GroupStats {
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
        num_valid: accs.iter().map(|a| a.n).collect(),
        size: groups.sizes.clone(),
        mean: means,
        std: stds,
    };
    Ok(Advantages {
        advantages,
        stats,
        keep,
        frac_zero_std: if num_groups == 0 {
            0.0
        } else {
            no_signal as f64 / num_groups as f64
        },
    })
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
