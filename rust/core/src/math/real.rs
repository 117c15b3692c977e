//! Certified enclosures of real constants (ball arithmetic).
//!
//! A [`Ball`] is a midpoint `m·2^e`, exact, and a radius that bounds the
//! distance to the true value from above. Every operation rounds its
//! midpoint to the working precision and adds what the rounding, the inputs'
//! radii and the truncation of a series can contribute to the radius, so the
//! true value always lies in the ball: a comparison decided on balls is
//! decided, not estimated. `\pi`, `e`, roots, powers, `\exp`, `\ln`, the
//! trigonometric functions and their inverses are enclosed this way; a value
//! that is not real, or too large to enclose within the budget, has no ball.
//!
//! docs/verify_semantics.md: the precision rule for decimals ("a decimal
//! answers to the precision it states") and a caller's relative tolerance are
//! decided on these enclosures, at increasing precision until decided.

use std::cell::RefCell;

use num_bigint::{BigInt, Sign};
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive, Zero};

use super::ast::{Func, Node};
use super::eval::{Evaluator, V};
use super::Limits;

type Q = BigRational;

/// Precisions tried in turn, in bits.
pub(crate) const PRECISIONS: [u64; 4] = [96, 320, 1280, 4352];

/// Values beyond 2^MAX_EXP in magnitude are not enclosed (an `\exp` of such
/// an argument is a number with more digits than any budget allows).
const MAX_EXP: i64 = 1 << 30;

/// An upper (or, where said, lower) bound `m·2^e` with a 32-bit mantissa.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Mag {
    m: u64,
    e: i64,
}

impl Mag {
    const ZERO: Mag = Mag { m: 0, e: 0 };

    fn norm(m: u128, e: i64, up: bool) -> Mag {
        if m == 0 {
            return Mag::ZERO;
        }
        let bits = 128 - m.leading_zeros() as i64;
        if bits <= 32 {
            return Mag { m: m as u64, e };
        }
        let shift = (bits - 32) as u32;
        let mut q = m >> shift;
        if up && (q << shift) != m {
            q += 1;
        }
        Mag::norm(q, e + i64::from(shift), up).max_bits()
    }

    fn max_bits(self) -> Mag {
        if self.m >= 1 << 32 {
            Mag {
                m: self.m.div_ceil(2),
                e: self.e + 1,
            }
        } else {
            self
        }
    }

    fn is_zero(self) -> bool {
        self.m == 0
    }

    /// |x|·2^e, rounded up (or down).
    fn of_int(x: &BigInt, e: i64, up: bool) -> Mag {
        let bits = x.bits() as i64;
        if bits <= 96 {
            return Mag::norm(x.magnitude().to_u128().unwrap_or(0), e, up);
        }
        let shift = bits - 64;
        let top: BigInt = x.abs() >> (shift as usize);
        let mut m = top.to_u128().unwrap_or(0);
        if up {
            m += 1;
        }
        Mag::norm(m, e + shift, up)
    }

    fn add(self, o: Mag) -> Mag {
        if self.is_zero() {
            return o;
        }
        if o.is_zero() {
            return self;
        }
        let (hi, lo) = if self.e >= o.e { (self, o) } else { (o, self) };
        let shift = hi.e - lo.e;
        if shift >= 90 {
            return Mag::norm(u128::from(hi.m) + 1, hi.e, true);
        }
        Mag::norm((u128::from(hi.m) << shift) + u128::from(lo.m), lo.e, true)
    }

    fn mul(self, o: Mag) -> Mag {
        Mag::norm(u128::from(self.m) * u128::from(o.m), self.e + o.e, true)
    }

    /// The product rounded down (of two lower bounds).
    fn mul_down(self, o: Mag) -> Mag {
        Mag::norm(u128::from(self.m) * u128::from(o.m), self.e + o.e, false)
    }

    /// self / o where `o` is a lower bound (> 0), rounded up.
    fn div(self, o: Mag) -> Mag {
        if self.is_zero() {
            return Mag::ZERO;
        }
        let q = (u128::from(self.m) << 64) / u128::from(o.m.max(1)) + 1;
        Mag::norm(q, self.e - o.e - 64, true)
    }

    /// self - o rounded down, `None` when not positive (`self` a lower bound,
    /// `o` an upper bound).
    fn sub_down(self, o: Mag) -> Option<Mag> {
        if o.is_zero() {
            return (!self.is_zero()).then_some(self);
        }
        if self.is_zero() || self.e + 33 < o.e {
            return None;
        }
        let e = self.e.min(o.e);
        let a = u128::from(self.m) << (self.e - e).min(90);
        let b = u128::from(o.m) << (o.e - e).min(90);
        (a > b).then(|| Mag::norm(a - b, e, false))
    }

    fn scale(self, k: i64) -> Mag {
        if self.is_zero() {
            self
        } else {
            Mag {
                m: self.m,
                e: self.e + k,
            }
        }
    }

    /// An upper bound of log2 of the value.
    fn log2_up(self) -> i64 {
        if self.is_zero() {
            i64::MIN / 4
        } else {
            self.e + 64 - i64::from(self.m.leading_zeros())
        }
    }

    fn le(self, o: Mag) -> bool {
        if self.is_zero() {
            return true;
        }
        if o.is_zero() {
            return false;
        }
        let e = self.e.min(o.e);
        let (ds, dz) = (self.e - e, o.e - e);
        if ds.max(dz) > 90 {
            return self.log2_up() < o.log2_up();
        }
        (u128::from(self.m) << ds) <= (u128::from(o.m) << dz)
    }
}

/// A real number in `[m·2^e - r, m·2^e + r]`.
#[derive(Debug, Clone)]
pub(crate) struct Ball {
    m: BigInt,
    e: i64,
    r: Mag,
}

impl Ball {
    pub(crate) fn exact_int(v: BigInt) -> Ball {
        Ball {
            m: v,
            e: 0,
            r: Mag::ZERO,
        }
    }

    fn small(v: i64) -> Ball {
        Ball::exact_int(BigInt::from(v))
    }

    pub(crate) fn from_rational(q: &Q, p: u64) -> Ball {
        if q.is_integer() {
            return Ball::exact_int(q.to_integer()).round(p);
        }
        let (n, d) = (q.numer(), q.denom());
        let k = p as i64 + d.bits() as i64 - n.bits() as i64 + 2;
        let scaled = if k >= 0 {
            n << (k as usize)
        } else {
            n >> ((-k) as usize)
        };
        let m = &scaled / d;
        let exact = k >= 0 && (&m * d) == scaled;
        Ball {
            m,
            e: -k,
            r: if exact {
                Mag::ZERO
            } else {
                Mag { m: 2, e: -k }
            },
        }
    }

    /// The midpoint rounded to `p` bits, the rounding added to the radius.
    fn round(mut self, p: u64) -> Ball {
        if self.m.is_zero() {
            // A zero midpoint has no scale: an exponent kept from a product
            // (`0 \cdot 10^{300}`) grew in every power of a series, and so
            // did each term's rounding radius, so the series never ended.
            self.e = 0;
            return self;
        }
        let bits = self.m.bits();
        if bits > p {
            let shift = bits - p;
            let neg = self.m.is_negative();
            let mag: BigInt = self.m.abs() >> (shift as usize);
            self.m = if neg { -mag } else { mag };
            self.e += shift as i64;
            self.r = self.r.add(Mag { m: 1, e: self.e });
        }
        self
    }

    fn mid_mag(&self, up: bool) -> Mag {
        Mag::of_int(&self.m, self.e, up)
    }

    /// A lower bound of |x| over the ball, `None` when the ball holds 0.
    fn lower(&self) -> Option<Mag> {
        self.mid_mag(false).sub_down(self.r)
    }

    /// An upper bound of |x| over the ball.
    fn upper(&self) -> Mag {
        self.mid_mag(true).add(self.r)
    }

    /// 1 or -1 when every point of the ball has that sign; `None` when the
    /// ball holds 0.
    pub(crate) fn sign(&self) -> Option<i8> {
        self.lower()?;
        Some(if self.m.is_negative() { -1 } else { 1 })
    }

    fn too_big(&self) -> bool {
        self.e.abs() > MAX_EXP || self.upper().log2_up() > MAX_EXP
    }

    fn neg(mut self) -> Ball {
        self.m = -self.m;
        self
    }

    fn add(&self, o: &Ball, p: u64) -> Ball {
        let r = self.r.add(o.r);
        if self.m.is_zero() {
            return Ball { r, ..o.clone() }.round(p);
        }
        if o.m.is_zero() {
            return Ball { r, ..self.clone() }.round(p);
        }
        // A term far below the other's last bit joins the radius.
        let top = |b: &Ball| b.e + b.m.bits() as i64;
        let (big, tiny) = if top(self) >= top(o) {
            (self, o)
        } else {
            (o, self)
        };
        if top(big) - top(tiny) > p as i64 + 64 {
            return Ball {
                m: big.m.clone(),
                e: big.e,
                r: r.add(tiny.mid_mag(true)),
            }
            .round(p);
        }
        let e = self.e.min(o.e);
        let m = (&self.m << ((self.e - e) as usize)) + (&o.m << ((o.e - e) as usize));
        Ball { m, e, r }.round(p)
    }

    fn sub(&self, o: &Ball, p: u64) -> Ball {
        self.add(&o.clone().neg(), p)
    }

    fn mul(&self, o: &Ball, p: u64) -> Ball {
        let r = self
            .mid_mag(true)
            .mul(o.r)
            .add(o.mid_mag(true).mul(self.r))
            .add(self.r.mul(o.r));
        Ball {
            m: &self.m * &o.m,
            e: self.e + o.e,
            r,
        }
        .round(p)
    }

    fn mul_int(&self, k: i64, p: u64) -> Ball {
        self.mul(&Ball::small(k), p)
    }

    fn div_int(&self, k: u64, p: u64) -> Ball {
        // Scale first so the quotient keeps p bits.
        let shift = (p + 64).saturating_sub(self.m.bits()) as i64;
        let m = (&self.m << (shift as usize)) / BigInt::from(k);
        let kmag = Mag::norm(u128::from(k), 0, false);
        Ball {
            m,
            e: self.e - shift,
            r: self.r.div(kmag).add(Mag {
                m: 1,
                e: self.e - shift,
            }),
        }
        .round(p)
    }

    fn mul_pow2(mut self, k: i64) -> Ball {
        self.e += k;
        self.r = self.r.scale(k);
        self
    }

    fn inv(&self, p: u64) -> Option<Ball> {
        let low = self.lower()?;
        let k = p as i64 + self.m.bits() as i64 + 2;
        let q = (BigInt::one() << (k as usize)) / &self.m;
        let e = -k - self.e;
        // |1/x - 1/m| <= r / (|m| (|m| - r)), plus one unit of the quotient.
        let denom = self.mid_mag(false).mul_down(low);
        let r = self.r.div(denom).add(Mag { m: 1, e });
        Some(Ball { m: q, e, r }.round(p))
    }

    fn div(&self, o: &Ball, p: u64) -> Option<Ball> {
        Some(self.mul(&o.inv(p + 4)?, p))
    }

    fn pow_int(&self, k: u64, p: u64) -> Ball {
        let w = p + 2 * (64 - k.leading_zeros() as u64) + 8;
        let mut acc = Ball::small(1);
        let mut base = self.clone();
        let mut k = k;
        while k > 0 {
            if k & 1 == 1 {
                acc = acc.mul(&base, w);
            }
            k >>= 1;
            if k > 0 {
                base = base.mul(&base, w);
            }
        }
        acc.round(p)
    }

    /// The real n-th root (odd n of a negative value: the negative root).
    fn root(&self, n: u32, p: u64) -> Option<Ball> {
        if n == 1 {
            return Some(self.clone());
        }
        if n > 16 && self.sign() == Some(1) {
            // exp(ln(x) / n): an integer root of a number of n·p bits would
            // cost more.
            return self.ln(p + 8)?.div_int(u64::from(n), p + 8).exp(p);
        }
        if self.m.is_zero() && self.r.is_zero() {
            return Some(Ball::small(0));
        }
        let sign = self.sign()?;
        if sign < 0 {
            return (n % 2 == 1)
                .then(|| self.clone().neg().root(n, p))?
                .map(Ball::neg);
        }
        let nn = i64::from(n);
        // m·2^e with e a multiple of n and about n·p bits in m.
        let mut shift = (nn * (p as i64 + 2) - self.m.bits() as i64).max(0);
        shift += (self.e - shift).rem_euclid(nn);
        let scaled = &self.m << (shift as usize);
        let y = scaled.nth_root(n);
        let e = (self.e - shift) / nn;
        // Rounding: one unit; the input radius: r / (n · low^((n-1)/n)).
        let low = self.lower()?;
        let low_root = Ball {
            m: BigInt::from(low.m),
            e: low.e,
            r: Mag::ZERO,
        };
        let lr = low_root.root_down(n);
        let mut d = Mag { m: 1, e: 0 };
        for _ in 1..n {
            d = Mag::norm(u128::from(d.m) * u128::from(lr.m), d.e + lr.e, false);
        }
        let d = Mag::norm(u128::from(d.m) * u128::from(n), d.e, false);
        let r = self.r.div(d).add(Mag { m: 1, e });
        Some(Ball { m: y, e, r }.round(p))
    }

    /// A lower bound of the n-th root of an exact positive ball, as a Mag.
    fn root_down(&self, n: u32) -> Mag {
        let nn = i64::from(n);
        let mut shift = (nn * 40 - self.m.bits() as i64).max(0);
        shift += (self.e - shift).rem_euclid(nn);
        let y = (&self.m << (shift as usize)).nth_root(n);
        Mag::of_int(&y, (self.e - shift) / nn, false)
    }

    fn exp(&self, p: u64) -> Option<Ball> {
        if self.r.log2_up() > 0 {
            return None; // too imprecise an argument
        }
        let top = self.e + self.m.bits() as i64;
        if top > 40 {
            return None;
        }
        let k = (top + 10).max(0);
        let w = p + k as u64 + 20;
        let t = Ball {
            m: self.m.clone(),
            e: self.e - k,
            r: Mag::ZERO,
        };
        // Taylor series of exp(t), |t| < 2^-10.
        let mut sum = Ball::small(1);
        let mut term = Ball::small(1);
        let mut j = 1u64;
        loop {
            term = term.mul(&t, w).div_int(j, w);
            sum = sum.add(&term, w);
            j += 1;
            if term.upper().log2_up() < -(w as i64) - 4 || j > series_cap(w) {
                break;
            }
        }
        // The rest of the series is below twice the last term.
        sum.r = sum.r.add(term.upper().scale(1));
        for _ in 0..k {
            sum = sum.mul(&sum, w);
        }
        // exp(m ± r) ⊂ exp(m) (1 ± 2r) for r < 1.
        let spread = sum.upper().mul(self.r).scale(1);
        sum.r = sum.r.add(spread);
        Some(sum.round(p))
    }

    fn ln(&self, p: u64) -> Option<Ball> {
        if self.sign()? < 0 {
            return None;
        }
        let bits = self.m.bits() as i64;
        let q = self.e + bits - 1;
        let w = p + 20 + (64 - q.unsigned_abs().leading_zeros() as u64);
        // f = m / 2^(bits-1) in [1, 2); ln f = 2 atanh((f-1)/(f+1)).
        let f = Ball {
            m: self.m.clone(),
            e: -(bits - 1),
            r: Mag::ZERO,
        };
        let one = Ball::small(1);
        let z = f.sub(&one, w).div(&f.add(&one, w), w)?;
        let mut s = atanh_series(&z, w);
        s = s.mul_pow2(1);
        if q != 0 {
            s = s.add(&ln2(w).mul_int(q, w), w);
        }
        // ln(m ± r) ⊂ ln m ± r / low.
        let low = self.lower()?;
        s.r = s.r.add(self.r.div(low));
        Some(s.round(p))
    }

    /// (sin, cos).
    fn sin_cos(&self, p: u64) -> Option<(Ball, Ball)> {
        let top = self.e + self.m.bits() as i64;
        if top > 40 || self.r.log2_up() > 0 {
            return None;
        }
        let x = self.approx();
        let k = if top < -2 {
            0
        } else {
            (x / std::f64::consts::FRAC_PI_2).round() as i64
        };
        let w = p + 20 + (64 - k.unsigned_abs().leading_zeros() as u64);
        let mid = Ball {
            m: self.m.clone(),
            e: self.e,
            r: Mag::ZERO,
        };
        let t = if k == 0 {
            mid
        } else {
            mid.sub(&pi(w).mul_pow2(-1).mul_int(k, w), w)
        };
        let (s, c) = sin_cos_series(&t, w)?;
        let (mut s, mut c) = match k.rem_euclid(4) {
            0 => (s, c),
            1 => (c, s.neg()),
            2 => (s.neg(), c.neg()),
            _ => (c.neg(), s),
        };
        s.r = s.r.add(self.r);
        c.r = c.r.add(self.r);
        Some((s.round(p), c.round(p)))
    }

    fn atan(&self, p: u64) -> Option<Ball> {
        let w = p + 20;
        let mid = Ball {
            m: self.m.clone(),
            e: self.e,
            r: Mag::ZERO,
        };
        let one = Mag { m: 1, e: 0 };
        let mut out = if one.le(mid.mid_mag(false)) {
            // atan |x| = π/2 - atan(1/|x|), odd in x.
            let half_pi = pi(w).mul_pow2(-1);
            let neg = mid.m.is_negative();
            let abs = if neg { mid.neg() } else { mid };
            let v = half_pi.sub(&atan_reduced(&abs.inv(w)?, w)?, w);
            if neg {
                v.neg()
            } else {
                v
            }
        } else {
            atan_reduced(&mid, w)?
        };
        out.r = out.r.add(self.r);
        Some(out.round(p))
    }

    /// The midpoint in floating point (for choosing a reduction only).
    fn approx(&self) -> f64 {
        let bits = self.m.bits() as i64;
        let shift = (bits - 60).max(0);
        let top: BigInt = &self.m >> (shift as usize);
        let exp = (self.e + shift).clamp(-2000, 2000) as i32;
        top.to_f64().unwrap_or(0.0) * 2f64.powi(exp)
    }

    /// The ends of the ball as dyadic numbers `(mantissa, exponent)`.
    fn ends(&self) -> ((BigInt, i64), (BigInt, i64)) {
        let e = self.e.min(self.r.e);
        let gap = |x: i64| ((x - e).min(1 << 20)) as usize;
        let mid = &self.m << gap(self.e);
        let r = BigInt::from(self.r.m) << gap(self.r.e);
        ((&mid - &r, e), (&mid + &r, e))
    }

    /// Whether the two balls share no point.
    pub(crate) fn apart(&self, o: &Ball) -> bool {
        let (alo, ahi) = self.ends();
        let (blo, bhi) = o.ends();
        dyadic_lt(&ahi, &blo) || dyadic_lt(&bhi, &alo)
    }

    /// The exact rational interval `[lo, hi]` of the ball.
    /// [`Ball::bounds`] when they are rationals of modest size (scales
    /// within 2^±131072); `None` for a ball like `\cosh(89996225)`'s, whose
    /// bounds have 130 million bits and whose every gcd would take minutes
    /// (found by fuzzing). Callers treat `None` as undecided.
    pub(crate) fn modest_bounds(&self) -> Option<(Q, Q)> {
        const LIMIT: i64 = 1 << 17;
        let scale_ok = |e: i64, bits: i64| e.abs() <= LIMIT && (e + bits).abs() <= LIMIT;
        (scale_ok(self.e, self.m.bits() as i64) && scale_ok(self.r.e, 64)).then(|| self.bounds())
    }

    pub(crate) fn bounds(&self) -> (Q, Q) {
        let two = |e: i64| -> Q {
            let p = Q::from_integer(BigInt::one() << (e.unsigned_abs() as usize));
            if e < 0 {
                p.recip()
            } else {
                p
            }
        };
        let mid = Q::from_integer(self.m.clone()) * two(self.e);
        let r = Q::from_integer(BigInt::from(self.r.m)) * two(self.r.e);
        (&mid - &r, &mid + &r)
    }
}

/// `a < b` for dyadic numbers `m·2^e`.
fn dyadic_lt(a: &(BigInt, i64), b: &(BigInt, i64)) -> bool {
    if a.0.sign() != b.0.sign() || a.0.is_zero() || b.0.is_zero() {
        return a.0.sign() < b.0.sign()
            || (a.0.is_zero() && b.0.is_positive())
            || (b.0.is_zero() && a.0.is_negative());
    }
    let e = a.1.min(b.1);
    let (da, db) = (a.1 - e, b.1 - e);
    if da.max(db) > 1 << 20 {
        // Far apart in scale: the larger magnitude decides.
        let (ta, tb) = (a.0.bits() as i64 + a.1, b.0.bits() as i64 + b.1);
        return if a.0.is_positive() { ta < tb } else { ta > tb };
    }
    (&a.0 << (da as usize)) < (&b.0 << (db as usize))
}

/// The most terms a series at working precision `w` takes: each of its
/// terms gains at least a bit, so this is never reached by arithmetic that
/// converges; a loop that stops here still adds the bound of the rest after
/// its last term (valid wherever it stops), only wider.
fn series_cap(w: u64) -> u64 {
    4 * w + 64
}

fn atanh_series(z: &Ball, w: u64) -> Ball {
    let z2 = z.mul(z, w);
    let mut pow = z.clone();
    let mut sum = z.clone();
    let mut k = 1u64;
    loop {
        pow = pow.mul(&z2, w);
        k += 2;
        let term = pow.div_int(k, w);
        sum = sum.add(&term, w);
        if term.upper().log2_up() < -(w as i64) - 4 || k > series_cap(w) {
            break;
        }
    }
    // |z| <= 1/3: the rest is below 1.2 times the last power.
    sum.r = sum.r.add(pow.upper().scale(1));
    sum
}

/// atan of |y| <= 1, by halving the argument three times.
fn atan_reduced(y: &Ball, w: u64) -> Option<Ball> {
    let one = Ball::small(1);
    let mut y = y.clone();
    for _ in 0..3 {
        let s = one.add(&y.mul(&y, w), w).root(2, w)?;
        y = y.div(&one.add(&s, w), w)?;
    }
    Some(atan_series(&y, w).mul_pow2(3))
}

/// atan x = x - x^3/3 + x^5/5 - ... for |x| < 1, the rest (alternating,
/// decreasing) below the last power taken.
fn atan_series(x: &Ball, w: u64) -> Ball {
    let x2 = x.mul(x, w);
    let mut pow = x.clone();
    let mut sum = x.clone();
    let mut k = 1u64;
    let mut neg = false;
    loop {
        pow = pow.mul(&x2, w);
        k += 2;
        neg = !neg;
        let term = pow.div_int(k, w);
        sum = if neg {
            sum.sub(&term, w)
        } else {
            sum.add(&term, w)
        };
        if term.upper().log2_up() < -(w as i64) - 4 || k > series_cap(w) {
            break;
        }
    }
    sum.r = sum.r.add(pow.upper());
    sum
}

fn sin_cos_series(t: &Ball, w: u64) -> Option<(Ball, Ball)> {
    let t2 = t.mul(t, w);
    let mut s = t.clone();
    let mut c = Ball::small(1);
    let mut term_s = t.clone();
    let mut term_c = Ball::small(1);
    let mut k = 0u64;
    loop {
        term_c = term_c
            .mul(&t2, w)
            .div_int((2 * k + 1) * (2 * k + 2), w)
            .neg();
        term_s = term_s
            .mul(&t2, w)
            .div_int((2 * k + 2) * (2 * k + 3), w)
            .neg();
        c = c.add(&term_c, w);
        s = s.add(&term_s, w);
        k += 1;
        if term_c.upper().log2_up() < -(w as i64) - 4 && term_s.upper().log2_up() < -(w as i64) - 4
        {
            break;
        }
        if k > 40_000 {
            return None;
        }
    }
    // |t| < 1: the rest of each series is below its last term.
    s.r = s.r.add(term_s.upper());
    c.r = c.r.add(term_c.upper());
    Some((s, c))
}

thread_local! {
    static PI: RefCell<Option<Ball>> = const { RefCell::new(None) };
    static LN2: RefCell<Option<Ball>> = const { RefCell::new(None) };
}

fn cached(
    cell: &'static std::thread::LocalKey<RefCell<Option<Ball>>>,
    p: u64,
    f: fn(u64) -> Ball,
) -> Ball {
    cell.with(|c| {
        if let Some(b) = c.borrow().as_ref() {
            if b.m.bits() >= p {
                return b.clone().round(p);
            }
        }
        let b = f(p.max(PRECISIONS[0]) + 32);
        *c.borrow_mut() = Some(b.clone());
        b.round(p)
    })
}

/// π = 16 atan(1/5) - 4 atan(1/239).
fn pi(p: u64) -> Ball {
    cached(&PI, p, |w| {
        let w = w + 16;
        let series = |k: i64| {
            let x = Ball::from_rational(&Q::new(BigInt::one(), BigInt::from(k)), w);
            atan_series(&x, w)
        };
        series(5).mul_int(16, w).sub(&series(239).mul_int(4, w), w)
    })
}

fn ln2(p: u64) -> Ball {
    cached(&LN2, p, |w| {
        let third = Ball::from_rational(&Q::new(BigInt::one(), BigInt::from(3)), w + 8);
        atanh_series(&third, w + 8).mul_pow2(1)
    })
}

/// Enclosures of real constant expressions, with the variables of a sample
/// point bound to rationals.
pub(crate) struct Encloser<'a> {
    pub limits: &'a Limits,
    pub env: Vec<(String, Q)>,
    /// Work done, in the units of [`Limits::max_work`].
    pub work: u64,
}

impl<'a> Encloser<'a> {
    pub(crate) fn new(limits: &'a Limits, work: u64) -> Self {
        Encloser {
            limits,
            env: Vec::new(),
            work,
        }
    }

    fn charge(&mut self, p: u64) -> Option<()> {
        self.work += 16 + p / 8 + p * p / 16_384;
        (self.work <= self.limits.max_work).then_some(())
    }

    /// The exact value of `n` when it is a real rational.
    fn rational(&mut self, n: &Node) -> Option<Q> {
        let mut ev = Evaluator::new(self.limits);
        ev.work = self.work;
        for (k, v) in &self.env {
            ev.env.push((
                k.clone(),
                V::Q(super::eval::Cq {
                    re: v.clone(),
                    im: Q::zero(),
                }),
            ));
        }
        let v = ev.eval(n);
        self.work = ev.work;
        match v {
            Ok(V::Q(c)) if c.im.is_zero() => Some(c.re),
            _ => None,
        }
    }

    /// A ball holding the value of `n` at precision `p`, `None` when `n` is
    /// not a real constant this module encloses (or over budget).
    pub(crate) fn eval(&mut self, n: &Node, p: u64) -> Option<Ball> {
        self.charge(p)?;
        let b = match n {
            Node::Num(v, _) => Ball::from_rational(v, p),
            Node::Sym(s) => match self.env.iter().rev().find(|(k, _)| k == s) {
                Some((_, v)) => Ball::from_rational(&v.clone(), p),
                None if s == "e" => Ball::small(1).exp(p)?,
                None if s == "pi" => pi(p),
                None => return None,
            },
            Node::Pi => pi(p),
            Node::Add(v) => {
                let mut acc = Ball::small(0);
                for t in v {
                    let b = self.eval(t, p)?;
                    acc = acc.add(&b, p);
                }
                acc
            }
            Node::Neg(a) => self.eval(a, p)?.neg(),
            Node::Mul(v) => {
                let mut acc = Ball::small(1);
                for t in v {
                    let b = self.eval(t, p)?;
                    acc = acc.mul(&b, p);
                }
                acc
            }
            Node::Div(a, b) => {
                let a = self.eval(a, p)?;
                let b = self.eval(b, p)?;
                a.div(&b, p)?
            }
            Node::Percent(a) => self.eval(a, p)?.div_int(100, p),
            Node::Pow(b, e) => self.pow(b, e, p)?,
            Node::Root(k, x) => {
                let k = self.rational(k)?;
                if !k.is_integer() {
                    return None;
                }
                let k = k.to_integer().to_u32().filter(|k| (1..=1000).contains(k))?;
                self.eval(x, p)?.root(k, p)?
            }
            Node::Fact(_) | Node::Binom(..) | Node::Mod(..) => {
                Ball::from_rational(&self.rational(n)?, p)
            }
            Node::Func(f, x) => self.func(*f, x, p)?,
            Node::Log(b, x) => {
                let b = self.eval(b, p)?.ln(p)?;
                let x = self.eval(x, p)?.ln(p)?;
                x.div(&b, p)?
            }
            Node::BigOp(sum, var, lo, hi, body) => {
                let lo = self.rational(lo)?;
                let hi = self.rational(hi)?;
                if !lo.is_integer() || !hi.is_integer() {
                    return None;
                }
                let (lo, hi) = (lo.to_integer(), hi.to_integer());
                if &hi - &lo > BigInt::from(self.limits.max_terms) {
                    return None;
                }
                let mut acc = Ball::small(i64::from(!*sum));
                let mut k = lo;
                while k <= hi {
                    self.env.push((var.clone(), Q::from_integer(k.clone())));
                    let v = self.eval(body, p);
                    self.env.pop();
                    let v = v?;
                    acc = if *sum { acc.add(&v, p) } else { acc.mul(&v, p) };
                    k += 1;
                }
                acc
            }
            _ => return None,
        };
        (!b.too_big()).then_some(b)
    }

    fn pow(&mut self, b: &Node, e: &Node, p: u64) -> Option<Ball> {
        if let Some(q) = self.rational(e) {
            let k = q.numer().to_i64()?;
            let d = q.denom().to_u32()?;
            if k.unsigned_abs() > self.limits.max_exponent || d > 1000 {
                return None;
            }
            let extra = 2 * (64 - k.unsigned_abs().leading_zeros() as u64) + 16;
            let base = self.eval(b, p + extra)?;
            let root = base.root(d, p + extra)?;
            let powed = root.pow_int(k.unsigned_abs(), p + extra);
            return if k < 0 {
                powed.inv(p)
            } else {
                Some(powed.round(p))
            };
        }
        let ev = self.eval(e, p)?;
        let lb = if matches!(b, Node::Sym(s) if s == "e" && !self.env.iter().any(|(k, _)| k == "e"))
        {
            Ball::small(1)
        } else {
            self.eval(b, p)?.ln(p)?
        };
        ev.mul(&lb, p).exp(p)
    }

    fn func(&mut self, f: Func, x: &Node, p: u64) -> Option<Ball> {
        let w = p;
        if matches!(f, Func::Floor | Func::Ceil) {
            if let Some(q) = self.rational(x) {
                let v = if f == Func::Floor {
                    q.floor()
                } else {
                    q.ceil()
                };
                return Some(Ball::from_rational(&v, p));
            }
            let b = self.eval(x, w)?;
            let (lo, hi) = b.modest_bounds()?;
            let (a, c) = if f == Func::Floor {
                (lo.floor(), hi.floor())
            } else {
                (lo.ceil(), hi.ceil())
            };
            return (a == c).then(|| Ball::from_rational(&a, p));
        }
        let b = self.eval(x, w)?;
        Some(match f {
            Func::Abs => match b.sign() {
                Some(s) if s < 0 => b.neg(),
                Some(_) => b,
                None => {
                    let up = b.upper();
                    Ball {
                        m: BigInt::from(up.m),
                        e: up.e - 1,
                        r: up.scale(-1),
                    }
                }
            },
            Func::Exp => b.exp(p)?,
            Func::Ln => b.ln(p)?,
            Func::Sin => b.sin_cos(p)?.0,
            Func::Cos => b.sin_cos(p)?.1,
            Func::Tan | Func::Sec | Func::Csc | Func::Cot => {
                let (s, c) = b.sin_cos(w)?;
                match f {
                    Func::Tan => s.div(&c, p)?,
                    Func::Sec => c.inv(p)?,
                    Func::Csc => s.inv(p)?,
                    _ => c.div(&s, p)?,
                }
            }
            Func::Atan => b.atan(p)?,
            Func::Asin | Func::Acos => {
                let one = Ball::small(1);
                let half_pi = pi(w).mul_pow2(-1);
                if b.r.is_zero()
                    && b.m.abs() == BigInt::one() << ((-b.e).max(0) as usize)
                    && b.e <= 0
                {
                    // x = ±1 exactly: asin x = ±π/2.
                    let asin = if b.m.is_negative() {
                        half_pi.clone().neg()
                    } else {
                        half_pi.clone()
                    };
                    return Some(if f == Func::Asin {
                        asin.round(p)
                    } else {
                        half_pi.sub(&asin, p)
                    });
                }
                let s = one.sub(&b.mul(&b, w), w);
                let asin = if s.sign()? > 0 {
                    b.div(&s.root(2, w)?, w)?.atan(w)?
                } else {
                    return None;
                };
                if f == Func::Asin {
                    asin.round(p)
                } else {
                    half_pi.sub(&asin, p)
                }
            }
            Func::Sinh | Func::Cosh | Func::Tanh => {
                let a = b.exp(w)?;
                let ia = a.inv(w)?;
                let sinh = a.sub(&ia, w).mul_pow2(-1);
                let cosh = a.add(&ia, w).mul_pow2(-1);
                match f {
                    Func::Sinh => sinh.round(p),
                    Func::Cosh => cosh.round(p),
                    _ => sinh.div(&cosh, p)?,
                }
            }
            Func::Floor | Func::Ceil => return None,
        })
    }
}

/// Decide a question on enclosures of `n` at increasing precision: `decide`
/// answers `Some` once the ball settles it. `None` when no precision within
/// the budget does (or `n` has no enclosure).
pub(crate) fn settle<T>(
    n: &Node,
    limits: &Limits,
    env: &[(String, Q)],
    work: &mut u64,
    mut decide: impl FnMut(&Ball, u64) -> Option<T>,
) -> Option<T> {
    for p in PRECISIONS {
        let mut enc = Encloser::new(limits, *work);
        enc.env = env.to_vec();
        let b = enc.eval(n, p);
        *work = enc.work;
        let b = b?;
        if let Some(t) = decide(&b, p) {
            return Some(t);
        }
    }
    None
}

/// The sign of `b` when the ball decides it, and `Sign::NoSign` when the
/// ball is the exact zero.
pub(crate) fn sign_of(b: &Ball) -> Option<Sign> {
    if b.m.is_zero() && b.r.is_zero() {
        return Some(Sign::NoSign);
    }
    b.sign()
        .map(|s| if s < 0 { Sign::Minus } else { Sign::Plus })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enclose(n: &Node, p: u64) -> (f64, f64) {
        let limits = Limits::default();
        let mut e = Encloser::new(&limits, 0);
        let b = e.eval(n, p).expect("an enclosure");
        let (lo, hi) = b.bounds();
        (
            lo.to_f64().unwrap_or(f64::NAN),
            hi.to_f64().unwrap_or(f64::NAN),
        )
    }

    fn num(v: i64) -> Node {
        Node::num(Q::from_integer(BigInt::from(v)), None)
    }

    /// A zero reached through a product with a huge factor (`0 \cdot
    /// 10^{300}`, found by fuzzing: `\arctan` of it never returned) is an
    /// exact zero, and every function of it a narrow enclosure.
    #[test]
    fn functions_of_a_scaled_zero_are_narrow() {
        for (s, value) in [
            (r"\arctan(0 \cdot 10^{300})", 0.0),
            (r"\sin(0 \cdot 10^{300})", 0.0),
            (r"\cos(0 \cdot 10^{300})", 1.0),
            (r"e^{0 \cdot 10^{300}}", 1.0),
            (r"\ln(1 + 0 \cdot 10^{300})", 0.0),
            (r"\tan(10^{-300} \cdot 0)", 0.0),
            (
                r"\arctan(0 \cdot 10^{300}) + \arctan(0 \cdot 10^{-300})",
                0.0,
            ),
        ] {
            let n = crate::math::parse(s, &crate::math::ParseOptions::default())
                .expect(s)
                .node;
            let (lo, hi) = enclose(&n, PRECISIONS[0]);
            assert!(
                lo <= value && value <= hi && hi - lo < 1e-20,
                "{s}: [{lo}, {hi}]"
            );
        }
    }

    /// Values of thirty million digits (`\cosh(89996225)`) next to a
    /// decimal or under a floor are compared without rationals of their
    /// size (found by fuzzing: the gcds took minutes).
    #[test]
    fn huge_values_are_not_turned_into_rationals() {
        use crate::verify::{verify, VerifyOptions};
        let n = crate::math::parse(r"\cosh(89996225)", &crate::math::ParseOptions::default())
            .expect("parses")
            .node;
        let limits = Limits::default();
        let b = Encloser::new(&limits, 0)
            .eval(&n, PRECISIONS[0])
            .expect("a ball");
        assert!(b.modest_bounds().is_none());
        let small = Ball::from_rational(&Q::new(BigInt::from(21), BigInt::from(25)), 96);
        assert!(small.modest_bounds().is_some());
        let opts = VerifyOptions::default();
        for s in [r"0.84, \cosh(89996225)", r"\lfloor \cosh(89996225) \rfloor"] {
            assert!(
                verify(&format!("${s}$"), &format!("\\boxed{{{s}}}"), &opts).matched,
                "{s}"
            );
            assert!(
                !verify("$0.84$", &format!("\\boxed{{{s}}}"), &opts).matched,
                "{s}"
            );
        }
    }

    #[test]
    fn constants_are_enclosed() {
        let cases: Vec<(Node, f64)> = vec![
            (Node::Pi, std::f64::consts::PI),
            (Node::Sym("e".into()), std::f64::consts::E),
            (Node::Func(Func::Sin, Box::new(num(1))), 1f64.sin()),
            (Node::Func(Func::Cos, Box::new(num(10))), 10f64.cos()),
            (Node::Func(Func::Sin, Box::new(num(-7))), (-7f64).sin()),
            (Node::Func(Func::Ln, Box::new(num(10))), 10f64.ln()),
            (Node::Func(Func::Ln, Box::new(num(3))), 3f64.ln()),
            (Node::Func(Func::Atan, Box::new(num(3))), 3f64.atan()),
            (
                Node::Func(Func::Atan, Box::new(num(-1))),
                -std::f64::consts::FRAC_PI_4,
            ),
            (Node::Func(Func::Exp, Box::new(num(-3))), (-3f64).exp()),
            (Node::Func(Func::Exp, Box::new(num(20))), 20f64.exp()),
            (
                Node::Root(Box::new(num(3)), Box::new(num(10))),
                10f64.cbrt(),
            ),
            (Node::Root(Box::new(num(2)), Box::new(num(2))), 2f64.sqrt()),
        ];
        for (n, want) in cases {
            for p in PRECISIONS {
                let (lo, hi) = enclose(&n, p);
                let slack = want.abs() * 1e-15 + 1e-300;
                assert!(
                    lo <= want + slack && want - slack <= hi,
                    "{n:?} at {p}: [{lo}, {hi}] vs {want}"
                );
                assert!(
                    hi - lo <= want.abs() * 1e-20 + 1e-300,
                    "{n:?} at {p}: too wide"
                );
            }
        }
    }

    #[test]
    fn pi_is_pi_to_many_digits() {
        // 50 digits of pi, from the literature.
        let digits = "3.14159265358979323846264338327950288419716939937510";
        let d: Q = Q::new(
            digits.replace('.', "").parse::<BigInt>().expect("digits"),
            num_traits::pow(BigInt::from(10), 50),
        );
        let unit = Q::new(BigInt::one(), num_traits::pow(BigInt::from(10), 50));
        for p in PRECISIONS {
            let (lo, hi) = pi(p).bounds();
            assert!(lo <= &d + &unit && &d - &unit <= hi, "{p}");
        }
        let (lo, hi) = pi(PRECISIONS[3]).bounds();
        assert!(&hi - &lo < Q::new(BigInt::one(), BigInt::one() << 4000usize));
    }
}
