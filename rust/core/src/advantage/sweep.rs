//! How the kernel runs over a batch of groups side by side: split into tasks
//! of whole groups for the threads, each swept a [`Block`] at a time (its
//! moments, then its coefficients, then the outputs, each element written
//! once), with a [`Kernel`] for the loops that read every reward.

use std::mem::MaybeUninit;

use rayon::prelude::*;

use super::element::Reward;
use super::estimators::{self, needs_batch, Params, Rule};
use super::statistics::{self, batch_std, Block, Moments, BLOCK};
use super::How;

/// Groups of a kernel task: large enough to amortise the hand-off, small
/// enough that two threads share the work evenly.
const TASK_GROUPS: usize = 4096;

/// Every group: in one sweep when each group's coefficients are its own,
/// else the moments of every group first, then the batch's std, then the
/// outputs.
pub(super) fn sweep_all<R: Reward>(
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
pub(super) enum Pass<'a> {
    /// Their moments only: the first pass of an estimator that needs the
    /// batch's statistics.
    Moments(&'a mut Vec<Moments>),
    /// Their outputs, from their moments when known, else computing them.
    Outputs(Option<&'a [Moments]>, Out<'a>),
}

/// The outputs of a run of whole groups: per rollout and per group. Each
/// element is written exactly once per sweep.
pub(super) struct Out<'a> {
    pub(super) adv: &'a mut [MaybeUninit<f32>],
    pub(super) keep: &'a mut [MaybeUninit<bool>],
    pub(super) mean: &'a mut [MaybeUninit<f64>],
    pub(super) std: &'a mut [MaybeUninit<f64>],
    pub(super) solve_rate: &'a mut [MaybeUninit<f64>],
    pub(super) num_valid: &'a mut [MaybeUninit<u32>],
}

impl<'a> Out<'a> {
    pub(super) fn reborrow(&mut self) -> Out<'_> {
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
pub(super) struct Status {
    pub(super) no_signal: usize,
    /// Some statistic is infinite or NaN (an infinite reward, or an overflow).
    pub(super) nonfinite: bool,
    /// The first group whose advantages do not fit f32, and their largest magnitude.
    pub(super) f32_overflow: Option<(usize, f64)>,
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

/// The two loops that read every reward: the moments of a block's groups,
/// and the advantages of a group whose rewards are all scorable. [`Plain`]
/// is the reference; [`super::avx2::Avx2`] computes the same with vector lanes.
/// The sweeps are generic over it and inlined into a function compiled for
/// its vector unit, so that their other loops vectorise by themselves.
pub(super) trait Kernel: Copy {
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
            block.set(j, &statistics::moments(&x[lo..lo + s as usize], threshold));
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
    if let Some(k) = super::avx2::Avx2::detect().filter(|_| simd) {
        return k.sweep(x, sizes, first_group, rule, pass);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = simd;
    sweep_with(Plain, x, sizes, first_group, rule, pass)
}

#[inline(always)]
pub(super) fn sweep_with<R: Reward, K: Kernel>(
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
        let s = estimators::coefficients(&mut block, rule, sizes.len(), &mut bout);
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
                if let Some(v) = estimators::write(x, &block.coeff(j), rule, adv, keep) {
                    status.f32_overflow = status.f32_overflow.or(Some((first + j, v)));
                }
            }
        }
        if s.wide && status.f32_overflow.is_none() {
            status.f32_overflow =
                estimators::widest(bx, sizes, &block).map(|(j, v)| (first + j, v));
        }
    }
    status
}
