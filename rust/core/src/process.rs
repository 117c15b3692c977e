//! Token advantages from step rewards: GRPO's process supervision.
//!
//! DeepSeekMath (Shao et al. 2024, §4.1.3): the step rewards of all G outputs
//! of a prompt are normalised together, `r~ = (r - mean_g) / std_g`, and the
//! advantage of token `t` of output `i` is the sum of `r~` over the steps of
//! `i` that end at or after `t`. Steps arrive as compressed sparse rows
//! (`offsets[i]..offsets[i + 1]` are output `i`'s steps), each with the index
//! of the token it ends at, so the sum is one suffix sum per output.
//!
//! Conventions are [`crate::advantage`]'s: NaN marks a step without a reward
//! (neutral: left out of the statistics, contributes 0), std is
//! Bessel-corrected when `unbiased`, `eps` is added to it, and a group with
//! fewer than two rewarded steps, or whose rewarded steps all score the same,
//! carries no signal and contributes exactly 0.

use rayon::prelude::*;

use crate::advantage::Scale;
use crate::error::{CoreError, Result};
use crate::group::Groups;
use crate::parallel;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProcessParams {
    /// What the centred step rewards are divided by: the group's std, one
    /// std of every rewarded step of the batch, or nothing.
    pub scale: Scale,
    pub eps: f64,
    pub unbiased: bool,
    /// Multiplies the process advantages before the outcome ones are added.
    pub process_weight: f64,
}

impl Default for ProcessParams {
    fn default() -> Self {
        ProcessParams {
            scale: Scale::Group,
            eps: 1e-6,
            unbiased: true,
            process_weight: 1.0,
        }
    }
}

/// The steps of a batch and where they end.
#[derive(Clone, Copy, Debug)]
pub struct StepRewards<'a> {
    /// One per step, NaN for a step without a reward.
    pub rewards: &'a [f32],
    /// The token index (in `0..lengths[i]`) at which each step ends.
    pub ends: &'a [i64],
    /// `N + 1` offsets into `rewards`.
    pub offsets: &'a [i64],
}

/// The result: `[N, width]` token advantages, row-major, and each step's
/// normalised reward (0 for a neutral step or a group without signal), with
/// the per-group statistics.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcessAdvantages {
    pub advantages: Vec<f32>,
    pub step_advantages: Vec<f32>,
    pub mean: Vec<f64>,
    pub std: Vec<f64>,
    pub num_valid: Vec<u32>,
}

fn std_of(m2: f64, n: u64, unbiased: bool) -> f64 {
    let ddof = u64::from(unbiased);
    if n <= ddof || n < 2 {
        0.0
    } else {
        (m2 / (n - ddof) as f64).sqrt()
    }
}

fn invalid(msg: String) -> CoreError {
    CoreError::InvalidParameter(msg)
}

/// Check the CSR layout against `n` outputs of `lengths` tokens, no longer
/// than `width`.
fn check(steps: &StepRewards<'_>, lengths: &[i64], width: usize, n: usize) -> Result<()> {
    let StepRewards {
        rewards,
        ends,
        offsets,
    } = *steps;
    if lengths.len() != n {
        return Err(CoreError::LengthMismatch {
            left: "lengths",
            left_len: lengths.len(),
            right: "group_ids",
            right_len: n,
        });
    }
    if offsets.len() != n + 1 {
        return Err(invalid(format!(
            "offsets has {} entries but group_ids has {n}; expected {} (one more than the \
             number of completions)",
            offsets.len(),
            n + 1
        )));
    }
    if ends.len() != rewards.len() {
        return Err(CoreError::LengthMismatch {
            left: "step_ends",
            left_len: ends.len(),
            right: "step_rewards",
            right_len: rewards.len(),
        });
    }
    if offsets[0] != 0 || offsets[n] != rewards.len() as i64 {
        return Err(invalid(format!(
            "offsets must start at 0 and end at the number of steps ({}); got {} and {}",
            rewards.len(),
            offsets[0],
            offsets[n]
        )));
    }
    if let Some(i) = (0..n).find(|&i| offsets[i] > offsets[i + 1]) {
        return Err(invalid(format!(
            "offsets must not decrease; offsets[{i}] = {} > offsets[{}] = {}",
            offsets[i],
            i + 1,
            offsets[i + 1]
        )));
    }
    for (i, &len) in lengths.iter().enumerate() {
        if len < 0 || len as u64 > width as u64 {
            return Err(invalid(format!(
                "lengths[{i}] is {len}; expected a token count in 0..={width} (the width)"
            )));
        }
        let lo = offsets[i] as usize;
        let hi = offsets[i + 1] as usize;
        if let Some(k) = ends[lo..hi].iter().position(|e| !(0..len).contains(e)) {
            return Err(invalid(format!(
                "step_ends[{}] is {}, outside completion {i}'s {len} tokens",
                lo + k,
                ends[lo + k]
            )));
        }
    }
    if let Some(s) = rewards.iter().position(|r| r.is_infinite()) {
        return Err(CoreError::NonFinite {
            what: "step_rewards",
            index: s,
            value: f64::from(rewards[s]),
        });
    }
    Ok(())
}

/// Token advantages `[N, width]` from step rewards (see the module docs),
/// plus `outcome[i]` on the first `lengths[i]` tokens of row `i` when given.
pub fn process_advantages(
    steps: &StepRewards<'_>,
    groups: &Groups,
    lengths: &[i64],
    width: usize,
    outcome: Option<&[f32]>,
    params: &ProcessParams,
) -> Result<ProcessAdvantages> {
    let n = groups.len();
    check(steps, lengths, width, n)?;
    if let Some(o) = outcome {
        if o.len() != n {
            return Err(CoreError::LengthMismatch {
                left: "outcome",
                left_len: o.len(),
                right: "group_ids",
                right_len: n,
            });
        }
        if let Some(i) = o.iter().position(|x| !x.is_finite()) {
            return Err(CoreError::NonFinite {
                what: "outcome",
                index: i,
                value: f64::from(o[i]),
            });
        }
    }
    if !(params.eps.is_finite() && params.eps >= 0.0 && params.process_weight.is_finite()) {
        return Err(invalid(format!(
            "eps must be a finite number >= 0 and process_weight finite; got eps={}, \
             process_weight={}",
            params.eps, params.process_weight
        )));
    }
    let cells = n
        .checked_mul(width)
        .filter(|c| *c <= isize::MAX as usize / 4)
        .ok_or_else(|| invalid(format!("{n} x {width} advantages are too many")))?;
    let StepRewards {
        rewards, offsets, ..
    } = *steps;
    let index = groups.index();
    let g_count = groups.num_groups();
    let step_range = |i: usize| offsets[i] as usize..offsets[i + 1] as usize;

    // Two passes per group (mean, then squared deviations), in f64.
    let mut count = vec![0u32; g_count];
    let mut sum = vec![0f64; g_count];
    for i in 0..n {
        let g = index[i] as usize;
        for &r in &rewards[step_range(i)] {
            if !r.is_nan() {
                count[g] += 1;
                sum[g] += f64::from(r);
            }
        }
    }
    let mean: Vec<f64> = (0..g_count)
        .map(|g| {
            if count[g] > 0 {
                sum[g] / f64::from(count[g])
            } else {
                f64::NAN
            }
        })
        .collect();
    let mut m2 = vec![0f64; g_count];
    for i in 0..n {
        let g = index[i] as usize;
        for &r in &rewards[step_range(i)] {
            if !r.is_nan() {
                let d = f64::from(r) - mean[g];
                m2[g] += d * d;
            }
        }
    }
    let std: Vec<f64> = (0..g_count)
        .map(|g| std_of(m2[g], u64::from(count[g]), params.unbiased))
        .collect();
    let batch_std = {
        let total: u64 = count.iter().map(|&c| u64::from(c)).sum();
        let all: f64 = sum.iter().sum();
        let bmean = if total > 0 { all / total as f64 } else { 0.0 };
        let between: f64 = (0..g_count)
            .filter(|&g| count[g] > 0)
            .map(|g| f64::from(count[g]) * (mean[g] - bmean) * (mean[g] - bmean))
            .sum();
        std_of(m2.iter().sum::<f64>() + between, total, params.unbiased)
    };
    // (shift, multiplier) per group; a group without signal gets (0, 0).
    let coeff: Vec<(f64, f64)> = (0..g_count)
        .map(|g| {
            if count[g] < 2 || m2[g] == 0.0 {
                return (0.0, 0.0);
            }
            let divisor = match params.scale {
                Scale::Group => std[g] + params.eps,
                Scale::Batch => batch_std + params.eps,
                Scale::None => 1.0,
            };
            (mean[g], 1.0 / divisor)
        })
        .collect();
    let step_advantages: Vec<f32> = (0..n)
        .flat_map(|i| {
            let (shift, mul) = coeff[index[i] as usize];
            rewards[step_range(i)].iter().map(move |&r| {
                if r.is_nan() || mul == 0.0 {
                    0.0
                } else {
                    ((f64::from(r) - shift) * mul) as f32
                }
            })
        })
        .collect();

    let mut advantages = vec![0f32; cells];
    let fill = |(i, row): (usize, &mut [f32])| {
        // Suffix sum in f64: token t gets every step ending at or after t.
        let mut add = vec![0f64; row.len()];
        for s in step_range(i) {
            add[steps.ends[s] as usize] += f64::from(step_advantages[s]);
        }
        let w = params.process_weight;
        let base = outcome.map_or(0.0, |o| f64::from(o[i]));
        let len = lengths[i] as usize;
        let mut acc = 0f64;
        for t in (0..row.len()).rev() {
            acc += add[t];
            if t < len {
                let v = base + w * acc;
                // -0.0 (from a zero weight times a negative sum) prints as 0.
                row[t] = if v == 0.0 { 0.0 } else { v as f32 };
            }
        }
    };
    if width > 0 {
        parallel::install(cells, |par| {
            if par {
                advantages.par_chunks_mut(width).enumerate().for_each(fill);
            } else {
                advantages.chunks_mut(width).enumerate().for_each(fill);
            }
        });
    }
    Ok(ProcessAdvantages {
        advantages,
        step_advantages,
        mean,
        std,
        num_valid: count,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::group_ints;

    #[allow(clippy::too_many_arguments)]
    fn run(
        rewards: &[f32],
        ends: &[i64],
        offsets: &[i64],
        ids: &[i64],
        lengths: &[i64],
        width: usize,
        outcome: Option<&[f32]>,
        params: ProcessParams,
    ) -> Result<ProcessAdvantages> {
        let groups = group_ints(ids)?;
        process_advantages(
            &StepRewards {
                rewards,
                ends,
                offsets,
            },
            &groups,
            lengths,
            width,
            outcome,
            &params,
        )
    }

    #[test]
    fn suffix_sums_of_group_normalised_step_rewards() {
        // One group, two outputs: steps [1, 0] ending at tokens 1, 3 and [1]
        // ending at token 0. mean 2/3, std (Bessel) sqrt(1/3).
        let out = run(
            &[1.0, 0.0, 1.0],
            &[1, 3, 0],
            &[0, 2, 3],
            &[7, 7],
            &[4, 2],
            4,
            None,
            ProcessParams {
                eps: 0.0,
                ..ProcessParams::default()
            },
        )
        .expect("valid");
        let s = (1.0f64 / 3.0).sqrt();
        let hi = ((1.0 - 2.0 / 3.0) / s) as f32;
        let lo = ((0.0 - 2.0 / 3.0) / s) as f32;
        let want = [hi + lo, hi + lo, lo, lo, hi, 0.0, 0.0, 0.0];
        for (a, b) in out.advantages.iter().zip(want) {
            assert!((a - b).abs() < 1e-6, "{:?} vs {want:?}", out.advantages);
        }
        assert_eq!(out.num_valid, [3]);
    }

    #[test]
    fn neutral_steps_groups_without_signal_and_outcome() {
        let out = run(
            &[f32::NAN, 1.0, 1.0, 0.0, 0.0],
            &[0, 1, 0, 0, 1],
            &[0, 2, 3, 4, 5],
            &[1, 1, 2, 2],
            &[2, 1, 1, 2],
            2,
            Some(&[0.5, -0.5, 0.0, 0.0]),
            ProcessParams::default(),
        )
        .expect("valid");
        // Group 1: rewards {1, 1} (the NaN left out) are all equal: only the
        // outcome remains. Group 2: {0, 0}: equal too.
        assert_eq!(out.advantages, [0.5, 0.5, -0.5, 0.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(out.num_valid, [2, 2]);
        assert_eq!(out.step_advantages, [0.0; 5]);
    }

    #[test]
    fn bad_layouts_are_errors() {
        let p = ProcessParams::default();
        let ok = run(&[1.0], &[0], &[0, 1], &[0], &[1], 1, None, p);
        assert!(ok.is_ok());
        for (rewards, ends, offsets, lengths, width) in [
            (
                &[1.0f32][..],
                &[1i64][..],
                &[0i64, 1][..],
                &[1i64][..],
                1usize,
            ),
            (&[1.0], &[-1], &[0, 1], &[1], 1),
            (&[1.0], &[0], &[0], &[1], 1),
            (&[1.0], &[0], &[1, 1], &[1], 1),
            (&[1.0], &[0], &[0, 1], &[2], 1),
            (&[1.0], &[0, 0], &[0, 1], &[1], 1),
            (&[f32::INFINITY], &[0], &[0, 1], &[1], 1),
        ] {
            let err = run(rewards, ends, offsets, &[0], lengths, width, None, p);
            assert!(err.is_err(), "{rewards:?} {ends:?} {offsets:?} {lengths:?}");
        }
        let err = run(&[1.0], &[0], &[0, 1], &[0], &[1], 1, Some(&[f32::NAN]), p);
        assert!(err.is_err());
    }
}
