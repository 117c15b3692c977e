//! Estimators whose baseline is not the group's moments alone (verl's
//! `remax`, `opo` and `gpg`):
//!
//! - ReMax (Li et al. 2023, "ReMax: A Simple, Effective, and Efficient
//!   Reinforcement Learning Method for Aligning LLMs"): `A_i = r_i - b_i`,
//!   `b_i` given, the reward of the prompt's greedy completion.
//! - OPO (Hao et al. 2025, "On-Policy RL with Optimal Reward Baseline"):
//!   `A_i = r_i - sum_g(l r) / sum_g(l)`, the group's length-weighted mean
//!   reward (`l` the completion lengths; the plain mean when they sum to 0).
//! - GPG (Chu et al. 2025, "GPG: A Simple and Strong Reinforcement Learning
//!   Baseline for Model Reasoning"): `A_i = (r_i - mean_g) * B / (B - M)`,
//!   `B` the batch's scorable rollouts and `M` those in groups without
//!   signal, so the groups that carry signal are not diluted by the others.
//!
//! Each starts from [`advantage::compute`] with the group mean as baseline
//! (Dr. GRPO's centring: the statistics, `keep` and the groups without
//! signal) and computes the advantages again from the rewards in one more
//! pass, in f64. `scale` and `eps` are not used. The conventions are those of
//! `advantage`: a NaN reward is unscorable (advantage 0), a group whose
//! scorable rewards are all equal, or with fewer than two, gets 0 under OPO
//! and GPG. ReMax's baseline comes from outside the group: a group carries
//! signal when some scorable reward differs from its baseline (a singleton
//! too: ReMax samples one completion per prompt), and a NaN baseline leaves
//! its rollout unscorable.

use crate::advantage::{self, Advantages, Estimator, Params, Reward, Scale};
use crate::error::{CoreError, Result};
use crate::group::Groups;

/// The per-rollout inputs some estimators need besides the rewards.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Inputs<'a> {
    /// ReMax: each rollout's baseline (its prompt's greedy reward); NaN: unscorable.
    pub baselines: Option<&'a [f64]>,
    /// OPO: each rollout's completion length, finite and >= 0.
    pub lengths: Option<&'a [f64]>,
}

/// Advantages of any estimator, with the inputs it needs: those of
/// `crate::baseline` here, the others by [`advantage::compute`].
pub fn compute<R: Reward>(
    rewards: &[R],
    groups: &Groups,
    params: &Params,
    inputs: Inputs<'_>,
) -> Result<Advantages> {
    check_inputs(rewards.len(), params.estimator, inputs)?;
    if !params.estimator.is_baselined() {
        return advantage::compute(rewards, groups, params);
    }
    let centred = Params {
        estimator: Estimator::Grpo,
        scale: Scale::None,
        ..*params
    };
    let mut out = advantage::compute(rewards, groups, &centred)?;
    let index = groups.index();
    // check_inputs made sure that the estimator has its inputs.
    match (params.estimator, inputs.baselines, inputs.lengths) {
        (Estimator::Opo, _, Some(lengths)) => opo(rewards, &index, lengths, &mut out),
        (Estimator::Remax, Some(baselines), _) => remax(rewards, &index, baselines, &mut out),
        _ => gpg(rewards, &index, &mut out),
    }
    Ok(out)
}

fn check_inputs(n: usize, estimator: Estimator, inputs: Inputs<'_>) -> Result<()> {
    let name = <&str>::from(estimator);
    for (what, given, user, needs) in [
        (
            "baselines",
            inputs.baselines,
            Estimator::Remax,
            "the reward of each rollout's prompt's greedy completion",
        ),
        (
            "lengths",
            inputs.lengths,
            Estimator::Opo,
            "the token length of each completion",
        ),
    ] {
        match given {
            None if estimator == user => {
                return Err(CoreError::InvalidParameter(format!(
                    "estimator '{name}' needs {what}: {needs}, one per rollout"
                )))
            }
            Some(_) if estimator != user => {
                return Err(CoreError::InvalidParameter(format!(
                    "{what} are used by estimator '{}' only, not '{name}'",
                    <&str>::from(user)
                )))
            }
            Some(values) if values.len() != n => {
                return Err(CoreError::LengthMismatch {
                    left: what,
                    left_len: values.len(),
                    right: "rewards",
                    right_len: n,
                })
            }
            _ => {}
        }
    }
    if let Some(b) = inputs.baselines {
        if let Some(i) = b.iter().position(|x| x.is_infinite()) {
            return Err(CoreError::NonFinite {
                what: "baselines",
                index: i,
                value: b[i],
            });
        }
    }
    if let Some(l) = inputs.lengths {
        if let Some(i) = l.iter().position(|x| !(x.is_finite() && *x >= 0.0)) {
            return Err(CoreError::InvalidParameter(format!(
                "lengths[{i}] is {}; expected a finite number >= 0",
                l[i]
            )));
        }
    }
    Ok(())
}

/// `A = (r - mean_g) * B / (B - M)` on the rollouts `keep` marks (scorable,
/// in a group with signal); `B - M` is their number.
fn gpg<R: Reward>(rewards: &[R], index: &[u32], out: &mut Advantages) {
    let scorable: u64 = out.stats.num_valid.iter().map(|&n| u64::from(n)).sum();
    let with_signal = out.keep.iter().filter(|&&k| k).count() as u64;
    if with_signal == 0 {
        return; // every advantage is already 0
    }
    let alpha = scorable as f64 / with_signal as f64;
    for (i, a) in out.advantages.iter_mut().enumerate() {
        if out.keep[i] {
            let mean = out.stats.mean[index[i] as usize];
            *a = ((rewards[i].to_f64() - mean) * alpha) as f32;
        }
    }
}

/// `A = r - sum_g(l r) / sum_g(l)` over each group's scorable rollouts.
fn opo<R: Reward>(rewards: &[R], index: &[u32], lengths: &[f64], out: &mut Advantages) {
    let groups = out.stats.mean.len();
    let (mut weight, mut weighted) = (vec![0.0f64; groups], vec![0.0f64; groups]);
    for (i, r) in rewards.iter().enumerate() {
        let r = r.to_f64();
        if !r.is_nan() {
            let g = index[i] as usize;
            weight[g] += lengths[i];
            weighted[g] += lengths[i] * r;
        }
    }
    for (i, a) in out.advantages.iter_mut().enumerate() {
        if out.keep[i] {
            let g = index[i] as usize;
            let baseline = if weight[g] > 0.0 {
                weighted[g] / weight[g]
            } else {
                out.stats.mean[g]
            };
            *a = (rewards[i].to_f64() - baseline) as f32;
        }
    }
}

/// `A = r - b`; a group has signal where some scorable `r` differs from its `b`.
fn remax<R: Reward>(rewards: &[R], index: &[u32], baselines: &[f64], out: &mut Advantages) {
    let groups = out.stats.mean.len();
    let mut signal = vec![false; groups];
    for (i, a) in out.advantages.iter_mut().enumerate() {
        let d = rewards[i].to_f64() - baselines[i];
        *a = if d.is_nan() { 0.0 } else { d as f32 };
        signal[index[i] as usize] |= d != 0.0 && !d.is_nan();
    }
    for (i, k) in out.keep.iter_mut().enumerate() {
        let scorable = !(rewards[i].to_f64() - baselines[i]).is_nan();
        *k = scorable && signal[index[i] as usize];
    }
    let without = signal.iter().filter(|&&s| !s).count();
    out.frac_zero_std = if groups == 0 {
        0.0
    } else {
        without as f64 / groups as f64
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::group_ints;

    fn params(estimator: Estimator) -> Params {
        Params {
            estimator,
            ..Params::default()
        }
    }

    fn run(r: &[f32], ids: &[i64], estimator: Estimator, inputs: Inputs<'_>) -> Advantages {
        compute(r, &group_ints(ids).unwrap(), &params(estimator), inputs).unwrap()
    }

    #[test]
    fn remax_subtracts_the_given_baseline() {
        let r = [1.0f32, 0.0, 1.0, 1.0, 0.5, f32::NAN];
        let b = [0.0, 0.0, 1.0, 1.0, 0.5, 0.5];
        let a = run(
            &r,
            &[0, 0, 1, 1, 2, 2],
            Estimator::Remax,
            Inputs {
                baselines: Some(&b),
                lengths: None,
            },
        );
        assert_eq!(a.advantages, vec![1.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        // Group 0 has signal (1 != 0); groups 1 and 2 do not.
        assert_eq!(a.keep, vec![true, true, false, false, false, false]);
        assert!((a.frac_zero_std - 2.0 / 3.0).abs() < 1e-12);
        // A singleton group with its greedy baseline carries signal.
        let a = run(
            &[1.0f32],
            &[7],
            Estimator::Remax,
            Inputs {
                baselines: Some(&[0.25]),
                lengths: None,
            },
        );
        assert_eq!((a.advantages[0], a.keep[0]), (0.75, true));
    }

    #[test]
    fn opo_weights_the_baseline_by_length() {
        let r = [1.0f32, 0.0, 0.0];
        let l = [1.0, 3.0, 0.0];
        let a = run(
            &r,
            &[0, 0, 0],
            Estimator::Opo,
            Inputs {
                baselines: None,
                lengths: Some(&l),
            },
        );
        let b = 1.0 / 4.0; // (1 * 1 + 3 * 0 + 0 * 0) / 4
        assert_eq!(a.advantages, vec![1.0 - b, -b, -b]);
    }

    #[test]
    fn gpg_rescales_by_the_share_with_signal() {
        let r = [1.0f32, 0.0, 1.0, 1.0];
        let a = run(&r, &[0, 0, 1, 1], Estimator::Gpg, Inputs::default());
        // 4 scorable, 2 in the group with signal: alpha = 2.
        assert_eq!(a.advantages, vec![1.0, -1.0, 0.0, 0.0]);
    }

    #[test]
    fn missing_or_unused_inputs_are_errors() {
        let g = group_ints(&[0, 0]).unwrap();
        let r = [1.0f32, 0.0];
        let err = |e, inputs| compute(&r, &g, &params(e), inputs).unwrap_err().to_string();
        assert!(err(Estimator::Remax, Inputs::default()).contains("needs baselines"));
        assert!(err(Estimator::Opo, Inputs::default()).contains("needs lengths"));
        let b = [0.0, f64::INFINITY];
        let with_b = Inputs {
            baselines: Some(&b),
            lengths: None,
        };
        assert!(err(Estimator::Grpo, with_b).contains("used by estimator 'remax' only"));
        assert!(err(Estimator::Remax, with_b).contains("baselines[1] is inf"));
        let l = [1.0];
        let short = Inputs {
            baselines: None,
            lengths: Some(&l),
        };
        assert!(err(Estimator::Opo, short).contains("lengths has 1 entries but rewards has 2"));
        let l = [1.0, -1.0];
        let negative = Inputs {
            baselines: None,
            lengths: Some(&l),
        };
        assert!(err(Estimator::Opo, negative).contains("lengths[1] is -1"));
        let direct = advantage::compute(&r, &g, &params(Estimator::Gpg)).unwrap_err();
        assert!(direct.to_string().contains("computed by baseline::compute"));
    }
}
