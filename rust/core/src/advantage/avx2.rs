//! The AVX2 kernel. A group's rewards accumulate in four f64 lanes, and four
//! groups' lanes are then reduced together by a transpose (lane g of the
//! result is group g's), so that no group pays for a reduction of its own
//! and the statistics come out four groups to a vector. The compiler does
//! not find this by itself (it may not reassociate floating-point sums).
//! [`statistics::moments`] is the reference it must equal (up to the order of
//! the additions), and what it falls back to for a group that holds NaN.

use std::arch::x86_64::*;
use std::mem::MaybeUninit;

use super::element::Reward;
use super::estimators::{Estimator, Rule};
use super::statistics::{self, Block, BLOCK};
use super::sweep::{Kernel, Pass, Status};

/// Proof that the CPU has AVX2: made only by [`Avx2::detect`].
#[derive(Clone, Copy)]
pub(super) struct Avx2(());

impl Avx2 {
    #[inline]
    pub(super) fn detect() -> Option<Avx2> {
        // std caches the answer.
        std::arch::is_x86_feature_detected!("avx2").then_some(Avx2(()))
    }

    /// [`super::sweep::sweep_with`] compiled for AVX2.
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
            super::sweep::sweep_with(k, x, sizes, first_group, rule, pass)
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
            && rule.estimator != Estimator::GrpoPassk;
        if simple {
            // SAFETY: as above; `x`, `adv` and `keep` hold the 4s rewards
            // and outputs of the quad.
            unsafe { write_equal_quad(x, s, block, j, adv, keep) };
        }
        simple
    }
}

/// The moments of up to [`BLOCK`] groups, four at a time.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn moments<R: Reward>(x: &[R], sizes: &[u32], threshold: f64, block: &mut Block) {
    let mut lo = 0;
    for (q, quad) in sizes.chunks(4).take(BLOCK / 4).enumerate() {
        // A last, partial quad has empty groups.
        let mut groups: [&[R]; 4] = [&[]; 4];
        for (g, &s) in groups.iter_mut().zip(quad) {
            *g = &x[lo..lo + s as usize];
            lo += s as usize;
        }
        let s = groups[0].len();
        let [n, solved, sum, mean, m2, spread] = if s < SMALL && groups.iter().all(|g| g.len() == s)
        {
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
                block.set(j + g, &statistics::moments(group, threshold));
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
