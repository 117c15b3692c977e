//! Quick decisions between simple constants, before any big-number
//! arithmetic: machine-float enclosures that tell two values apart, and
//! exact monomial forms that decide `5\sqrt2` against `\sqrt{50}`.
//!
//! An enclosure `[lo, hi]` always holds the exact value: every operation is
//! one IEEE-754 operation rounded to nearest (within half an ulp of the exact
//! result of its arguments), and its result is widened by one ulp each way.
//! Only what that holds for is enclosed (rationals, `+ - · /`, integer
//! powers, square roots, π); anything else is `None`, and the caller falls
//! back to the exact comparison. The enclosures only ever prove two values
//! *different*; equality is never decided here.

use num_rational::BigRational;
use num_traits::{ToPrimitive, Zero};

use super::ast::{Func, Node, FLOAT};

/// The next float above `x` (finite `x`).
fn up(x: f64) -> f64 {
    if x == 0.0 {
        return f64::from_bits(1);
    }
    let b = x.to_bits();
    f64::from_bits(if x > 0.0 { b + 1 } else { b - 1 })
}

/// The next float below `x` (finite `x`).
fn down(x: f64) -> f64 {
    -up(-x)
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Iv {
    lo: f64,
    hi: f64,
}

impl Iv {
    /// The enclosure of a value computed once, rounded to nearest.
    fn around(lo: f64, hi: f64) -> Option<Iv> {
        (lo.is_finite() && hi.is_finite()).then(|| Iv {
            lo: down(lo),
            hi: up(hi),
        })
    }

    fn of_rational(q: &BigRational) -> Option<Iv> {
        let x = q.to_f64()?;
        if !x.is_finite() || (x == 0.0 && !q.is_zero()) {
            return None;
        }
        // `to_f64` is within an ulp of the value; two ulps of margin.
        Iv::around(down(x), up(x))
    }

    fn add(self, o: Iv) -> Option<Iv> {
        Iv::around(self.lo + o.lo, self.hi + o.hi)
    }

    fn neg(self) -> Iv {
        Iv {
            lo: -self.hi,
            hi: -self.lo,
        }
    }

    /// The hull of the four corner results of `op`.
    fn corners(self, o: Iv, op: fn(f64, f64) -> f64) -> Option<Iv> {
        let c = [
            op(self.lo, o.lo),
            op(self.lo, o.hi),
            op(self.hi, o.lo),
            op(self.hi, o.hi),
        ];
        let lo = c.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = c.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Iv::around(lo, hi)
    }

    fn mul(self, o: Iv) -> Option<Iv> {
        self.corners(o, |a, b| a * b)
    }

    fn div(self, o: Iv) -> Option<Iv> {
        if o.lo <= 0.0 && o.hi >= 0.0 {
            return None;
        }
        self.corners(o, |a, b| a / b)
    }

    fn sqrt(self) -> Option<Iv> {
        if self.lo < 0.0 {
            return None;
        }
        Iv::around(self.lo.sqrt(), self.hi.sqrt())
    }

    fn powi(self, k: i64) -> Option<Iv> {
        if k == 0 {
            return Some(Iv { lo: 1.0, hi: 1.0 });
        }
        let mut acc = self;
        for _ in 1..k.unsigned_abs() {
            acc = acc.mul(self)?;
        }
        if k < 0 {
            Iv { lo: 1.0, hi: 1.0 }.div(acc)
        } else {
            Some(acc)
        }
    }
}

/// The enclosure of a libm result: glibc's `exp`, `ln`, `sin` and `cos`
/// are within one ulp of the value (other platforms' within two); four ulps
/// of margin on each side.
fn libm(lo: f64, hi: f64) -> Option<Iv> {
    if !(lo.is_finite() && hi.is_finite()) {
        return None;
    }
    let (mut lo, mut hi) = (lo, hi);
    for _ in 0..4 {
        (lo, hi) = (down(lo), up(hi));
    }
    Some(Iv { lo, hi })
}

impl Iv {
    fn exp(self) -> Option<Iv> {
        libm(self.lo.exp(), self.hi.exp())
    }

    fn ln(self) -> Option<Iv> {
        (self.lo > 0.0).then(|| libm(self.lo.ln(), self.hi.ln()))?
    }

    /// `sin` or `cos` over a narrow interval (width below 10^-3, arguments
    /// below 10^6): between its values at the ends, widened by `w^2/8` (the
    /// most a function with `|f''| <= 1` strays from its chord).
    fn trig(self, f: fn(f64) -> f64) -> Option<Iv> {
        let w = self.hi - self.lo;
        if w.is_nan() || w >= 1e-3 || self.lo.abs() > 1e6 || self.hi.abs() > 1e6 {
            return None;
        }
        let (a, b) = (f(self.lo), f(self.hi));
        let m = up(up(w) * up(w) / 8.0);
        libm(a.min(b) - m, a.max(b) + m)
    }
}

/// Integer powers up to this degree are multiplied out.
const MAX_POWER: i64 = 16;

/// An enclosure of a constant, or `None` when `n` holds anything but exact
/// literals, π, `e`, `+ - · /`, small integer powers, square roots, `exp`,
/// `\ln`, `\sin` and `\cos`.
fn enclose(n: &Node, depth: u32) -> Option<Iv> {
    if depth > 64 {
        return None;
    }
    let d = depth + 1;
    match n {
        Node::Num(q, None) => Iv::of_rational(q),
        // A decimal stands for any value within its precision (the rounding
        // rule allows one unit of its last digit; two are allowed here).
        Node::Num(q, Some(e)) if *e != FLOAT && e.abs() <= 300 => {
            let x = Iv::of_rational(q)?;
            let unit = 2.0 * 10f64.powi(*e) * (1.0 + 1e-9);
            Iv::around(x.lo - unit, x.hi + unit)
        }
        Node::Pi => Some(Iv {
            lo: down(std::f64::consts::PI),
            hi: up(std::f64::consts::PI),
        }),
        Node::Sym(e) if e == "e" => Some(Iv {
            lo: down(std::f64::consts::E),
            hi: up(std::f64::consts::E),
        }),
        Node::Func(Func::Exp, x) => enclose(x, d)?.exp(),
        Node::Func(Func::Ln, x) => enclose(x, d)?.ln(),
        Node::Func(Func::Sin, x) => enclose(x, d)?.trig(f64::sin),
        Node::Func(Func::Cos, x) => enclose(x, d)?.trig(f64::cos),
        Node::Add(v) => {
            let mut acc = Iv { lo: 0.0, hi: 0.0 };
            for t in v {
                acc = acc.add(enclose(t, d)?)?;
            }
            Some(acc)
        }
        Node::Neg(a) => Some(enclose(a, d)?.neg()),
        Node::Mul(v) => {
            let mut acc = Iv { lo: 1.0, hi: 1.0 };
            for t in v {
                acc = acc.mul(enclose(t, d)?)?;
            }
            Some(acc)
        }
        Node::Div(a, b) => enclose(a, d)?.div(enclose(b, d)?),
        Node::Pow(b, e) => match &**e {
            Node::Num(k, None) if k.is_integer() => {
                let k = k.to_integer().to_i64()?;
                (k.abs() <= MAX_POWER)
                    .then(|| enclose(b, d)?.powi(k))
                    .flatten()
            }
            x if matches!(&**b, Node::Sym(e) if e == "e") => enclose(x, d)?.exp(),
            _ => None,
        },
        Node::Root(i, r) => match &**i {
            Node::Num(k, None) if **k == BigRational::from_integer(2.into()) => {
                enclose(r, d)?.sqrt()
            }
            _ => None,
        },
        _ => None,
    }
}

/// Whether two constants are certainly different: both have enclosures,
/// and they do not meet. With a decimal on either side they must also be
/// further apart than the relative tolerance `rel_tol` allows (and than the
/// `1e-12` within which values near zero are close).
pub(crate) fn apart(a: &Node, b: &Node, decimal: bool, rel_tol: f64) -> bool {
    if !(rel_tol >= 0.0 && rel_tol.is_finite()) {
        return false;
    }
    let (Some(x), Some(y)) = (enclose(a, 0), enclose(b, 0)) else {
        return false;
    };
    let slack = if decimal {
        let m = [x.lo, x.hi, y.lo, y.hi]
            .iter()
            .fold(0.0f64, |m, v| m.max(v.abs()));
        up(2.0 * rel_tol * m + 2e-12)
    } else {
        0.0
    };
    up(x.hi + slack) < y.lo || up(y.hi + slack) < x.lo
}

/// A rational in machine integers: `n / d`, `d > 0`, in lowest terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Frac {
    n: i128,
    d: i128,
}

fn gcd(mut a: i128, mut b: i128) -> i128 {
    a = a.abs();
    b = b.abs();
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Numerators and denominators stay below this (products of two fit i128).
const FRAC_LIMIT: i128 = 1 << 62;

impl Frac {
    fn new(n: i128, d: i128) -> Option<Frac> {
        if d == 0 {
            return None;
        }
        let g = gcd(n, d).max(1);
        let (n, d) = if d < 0 {
            (-n / g, -d / g)
        } else {
            (n / g, d / g)
        };
        (n.abs() < FRAC_LIMIT && d < FRAC_LIMIT).then_some(Frac { n, d })
    }
    fn int(n: i128) -> Frac {
        Frac { n, d: 1 }
    }
    fn of(q: &BigRational) -> Option<Frac> {
        Frac::new(q.numer().to_i128()?, q.denom().to_i128()?)
    }
    fn mul(self, o: Frac) -> Option<Frac> {
        Frac::new(self.n.checked_mul(o.n)?, self.d.checked_mul(o.d)?)
    }
    fn div(self, o: Frac) -> Option<Frac> {
        Frac::new(self.n.checked_mul(o.d)?, self.d.checked_mul(o.n)?)
    }
    fn add(self, o: Frac) -> Option<Frac> {
        let n = self
            .n
            .checked_mul(o.d)?
            .checked_add(o.n.checked_mul(self.d)?)?;
        Frac::new(n, self.d.checked_mul(o.d)?)
    }
}

/// `q · \sqrt{r} · π^k` with `r` square-free (1 for none). Two such values
/// are equal exactly when their triples are: square roots of different
/// square-free integers are linearly independent over the rationals, and π
/// is transcendental. Zero is `(0, 1, 0)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mono {
    q: Frac,
    r: i128,
    k: i32,
}

/// Trial division finds the square part of a radicand up to this prime.
const SQUARE_TRIAL: i128 = 1_000;

/// `m = s² · r` with `r` square-free, for `m > 0`; `None` when `m` has a
/// factor beyond the trial limit that cannot be placed (a large cofactor
/// that is neither a square nor certainly prime).
fn square_part(mut m: i128) -> Option<(i128, i128)> {
    let (mut s, mut r) = (1i128, 1i128);
    let mut p = 2i128;
    while p <= SQUARE_TRIAL && p * p <= m {
        let mut e = 0;
        while m % p == 0 {
            m /= p;
            e += 1;
        }
        for _ in 0..e / 2 {
            s *= p;
        }
        if e % 2 == 1 {
            r *= p;
        }
        p += if p == 2 { 1 } else { 2 };
    }
    if m > 1 {
        if p * p > m {
            r = r.checked_mul(m)?; // m is prime
        } else {
            let t = isqrt(m);
            if t * t != m {
                return None;
            }
            s = s.checked_mul(t)?; // m = t² (t could still hide a square: no matter, it is a square)
        }
    }
    (r < FRAC_LIMIT && s < FRAC_LIMIT).then_some((s, r))
}

fn isqrt(m: i128) -> i128 {
    let mut x = (m as f64).sqrt() as i128;
    while x * x > m {
        x -= 1;
    }
    while (x + 1) * (x + 1) <= m {
        x += 1;
    }
    x
}

impl Mono {
    const ZERO: Mono = Mono {
        q: Frac { n: 0, d: 1 },
        r: 1,
        k: 0,
    };

    fn of(q: Frac) -> Mono {
        Mono { q, r: 1, k: 0 }
    }

    /// The canonical triple of `q · \sqrt{r} · π^k` for any positive `r`.
    fn norm(q: Frac, r: i128, k: i32) -> Option<Mono> {
        if q.n == 0 {
            return Some(Mono::ZERO);
        }
        let (s, r) = square_part(r)?;
        Some(Mono {
            q: q.mul(Frac::int(s))?,
            r,
            k,
        })
    }

    fn mul(self, o: Mono) -> Option<Mono> {
        Mono::norm(
            self.q.mul(o.q)?,
            self.r.checked_mul(o.r)?,
            self.k.checked_add(o.k)?,
        )
    }

    fn div(self, o: Mono) -> Option<Mono> {
        if o.q.n == 0 {
            return None;
        }
        // q1√r1 / (q2√r2) = q1/(q2·r2) · √(r1·r2).
        let q = self.q.div(o.q.mul(Frac::int(o.r))?)?;
        Mono::norm(q, self.r.checked_mul(o.r)?, self.k.checked_sub(o.k)?)
    }

    fn sqrt(self) -> Option<Mono> {
        // Only a rational times an even power of π: √(a/b) = √(ab)/b.
        if self.r != 1 || self.k % 2 != 0 || self.q.n < 0 {
            return None;
        }
        let ab = self.q.n.checked_mul(self.q.d)?;
        if ab == 0 {
            return Some(Mono::ZERO);
        }
        Mono::norm(Frac::new(1, self.q.d)?, ab, self.k / 2)
    }

    fn powi(self, e: i64) -> Option<Mono> {
        if e <= 0 && self.q.n == 0 {
            return None; // 0^0, 1/0
        }
        let mut acc = Mono::of(Frac::int(1));
        for _ in 0..e.unsigned_abs() {
            acc = acc.mul(self)?;
        }
        if e < 0 {
            Mono::of(Frac::int(1)).div(acc)
        } else {
            Some(acc)
        }
    }
}

/// The monomial form of a constant, or `None` when `n` is not built from
/// exact literals and π by products, quotients, small integer powers,
/// square roots of rationals and sums of like terms (or outgrows machine
/// integers).
fn monomial(n: &Node, depth: u32) -> Option<Mono> {
    if depth > 64 {
        return None;
    }
    let d = depth + 1;
    match n {
        Node::Num(q, None) => Some(Mono::of(Frac::of(q)?)),
        Node::Pi => Some(Mono {
            q: Frac::int(1),
            r: 1,
            k: 1,
        }),
        Node::Neg(a) => {
            let m = monomial(a, d)?;
            Some(Mono {
                q: Frac::new(-m.q.n, m.q.d)?,
                ..m
            })
        }
        Node::Mul(v) => v
            .iter()
            .try_fold(Mono::of(Frac::int(1)), |acc, t| acc.mul(monomial(t, d)?)),
        Node::Div(a, b) => monomial(a, d)?.div(monomial(b, d)?),
        Node::Add(v) => {
            // Like terms only: the same radical and power of π (zeros aside).
            let mut acc = Mono::ZERO;
            for t in v {
                let m = monomial(t, d)?;
                if m.q.n == 0 {
                    continue;
                }
                if acc.q.n == 0 {
                    acc = m;
                } else if (m.r, m.k) == (acc.r, acc.k) {
                    let q = acc.q.add(m.q)?;
                    acc = if q.n == 0 {
                        Mono::ZERO
                    } else {
                        Mono { q, ..acc }
                    };
                } else {
                    return None;
                }
            }
            Some(acc)
        }
        Node::Pow(b, e) => match &**e {
            Node::Num(k, None) if k.is_integer() => {
                let k = k.to_integer().to_i64()?;
                (k.abs() <= MAX_POWER)
                    .then(|| monomial(b, d)?.powi(k))
                    .flatten()
            }
            _ => None,
        },
        Node::Root(i, r) => match &**i {
            Node::Num(k, None) if **k == BigRational::from_integer(2.into()) => {
                monomial(r, d)?.sqrt()
            }
            _ => None,
        },
        _ => None,
    }
}

/// Whether two exact constants are equal, when both are monomials
/// (`\frac{3\pi}{7}`, `5\sqrt2`, `\frac{\sqrt{6}}{3}`); `None` otherwise.
pub(crate) fn monomials_equal(a: &Node, b: &Node) -> Option<bool> {
    Some(monomial(a, 0)? == monomial(b, 0)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::compare::forms_equal;
    use crate::math::{parse, CompareOptions, ParseOptions};
    use num_bigint::BigInt;
    use proptest::prelude::*;

    fn node(s: &str) -> Node {
        parse(s, &ParseOptions::default()).expect("parses").node
    }

    /// The exact value of a float.
    fn exact(x: f64) -> BigRational {
        BigRational::from_float(x).expect("finite")
    }

    /// A constant written with integers, fractions, square roots, π,
    /// products, quotients, powers and sums; its text.
    fn constant() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            (0i64..60).prop_map(|n| n.to_string()),
            (1i64..40, 1i64..40).prop_map(|(a, b)| format!("\\frac{{{a}}}{{{b}}}")),
            (1i64..200).prop_map(|n| format!("\\sqrt{{{n}}}")),
            Just("\\pi".to_owned()),
            Just("e".to_owned()),
            (1i64..30).prop_map(|n| format!("\\ln {n}")),
            (0i64..30).prop_map(|n| format!("\\sin {n}")),
            (0i64..30).prop_map(|n| format!("\\cos {n}")),
        ];
        leaf.prop_recursive(3, 12, 3, |inner| {
            prop_oneof![
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{{{a}}}\\cdot{{{b}}}")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("\\frac{{{a}}}{{{b}}}")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a})+({b})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a})-({b})")),
                (inner.clone(), 0u32..4).prop_map(|(a, k)| format!("({a})^{{{k}}}")),
                inner.clone().prop_map(|a| format!("\\sqrt{{{a}}}")),
                inner.prop_map(|a| format!("e^{{{a}}}")),
            ]
        })
    }

    #[test]
    fn an_enclosure_holds_the_exact_value() {
        for (s, num, den) in [
            ("\\frac{1}{3}", 1i64, 3i64),
            ("\\frac{22}{7} - \\frac{1}{7}", 3, 1),
            (
                "\\frac{10^{15} + 1}{10^{15}}",
                1_000_000_000_000_001i64,
                1_000_000_000_000_000,
            ),
        ] {
            let x = enclose(&node(s), 0).expect("encloses");
            let v = BigRational::new(BigInt::from(num), BigInt::from(den));
            assert!(exact(x.lo) <= v && v <= exact(x.hi), "{s}: {x:?}");
        }
        // √2 and π, against their squares and a bound of many digits.
        let r = enclose(&node("\\sqrt{2}"), 0).expect("encloses");
        let two = BigRational::from_integer(2.into());
        assert!(exact(r.lo) * exact(r.lo) < two && exact(r.hi) * exact(r.hi) > two);
        let pi = enclose(&Node::Pi, 0).expect("encloses");
        let (lo, hi) = ("3.14159265358979323846", "3.14159265358979323847");
        let dec = |s: &str| {
            let digits = s.replace('.', "");
            BigRational::new(digits.parse().expect("digits"), BigInt::from(10).pow(20))
        };
        assert!(exact(pi.lo) < dec(lo) && dec(hi) < exact(pi.hi));
        // e, exp, ln, sin and cos against 25 digits.
        for (s, digits) in [
            ("e", "2.7182818284590452353602874"),
            ("e^{-1}", "0.3678794411714423215955237"),
            ("e^{\\frac{1}{2}}", "1.6487212707001281468486507"),
            ("\\exp(3)", "20.085536923187667740928529"),
            ("\\ln 2", "0.6931471805599453094172321"),
            ("\\ln(\\pi)", "1.1447298858494001741434273"),
            ("\\sin 1", "0.8414709848078965066525023"),
            ("\\cos 1", "0.5403023058681397174009366"),
            ("\\sin(\\frac{\\pi}{2})", "1.0000000000000000000000000"),
            ("\\cos(\\pi)", "-1.0000000000000000000000000"),
            ("\\sin 1000", "0.8268795405320025602558874"),
        ] {
            let x = enclose(&node(s), 0).expect(s);
            let (neg, body) = digits
                .strip_prefix('-')
                .map_or((false, digits), |b| (true, b));
            let (int, frac) = body.split_once('.').expect("a point");
            let scale = BigInt::from(10).pow(frac.len() as u32);
            let v = BigRational::new(
                format!("{int}{frac}").parse::<BigInt>().expect("digits"),
                scale.clone(),
            );
            let ulp = BigRational::new(BigInt::from(1), scale);
            let (vlo, vhi) = if neg {
                (-&v - &ulp, -&v + &ulp)
            } else {
                (&v - &ulp, &v + &ulp)
            };
            assert!(exact(x.lo) <= vlo && vhi <= exact(x.hi), "{s}: {x:?}");
            assert!(
                x.hi - x.lo < 1e-12 * x.hi.abs().max(1.0),
                "{s}: {x:?} is narrow"
            );
        }
    }

    #[test]
    fn nothing_else_is_enclosed() {
        for s in [
            "x + 1",
            "\\tan 1",
            "\\sin 10^{7}",
            "\\ln(-1)",
            "\\frac{1}{0}",
            "\\sqrt{-2}",
            "2^{\\frac12}",
            "0.5",
        ] {
            let n = node(s);
            let decimal = n.has_decimal();
            assert!(!apart(&n, &node("7"), decimal, 0.0) || decimal, "{s}");
        }
        // A decimal is apart only beyond its precision.
        assert!(!apart(&node("0.33"), &node("\\frac{1}{3}"), true, 1e-6));
        assert!(!apart(&node("3.1416"), &Node::Pi, true, 1e-6));
        assert!(apart(&node("0.36"), &node("\\frac{1}{3}"), true, 1e-6));
    }

    #[test]
    fn monomials_decide_as_the_exact_forms_do() {
        for (a, b, same) in [
            ("5\\sqrt{2}", "\\sqrt{50}", true),
            ("\\frac{3\\pi}{7}", "\\frac{3}{7}\\pi", true),
            ("\\frac{\\sqrt{6}}{3}", "\\sqrt{\\frac{2}{3}}", true),
            ("\\frac{1}{\\sqrt{2}}", "\\frac{\\sqrt{2}}{2}", true),
            ("2\\sqrt{3} + \\sqrt{3}", "\\sqrt{27}", true),
            ("\\sqrt{2}", "\\sqrt{3}", false),
            ("\\pi", "3", false),
            ("\\pi^2", "\\pi", false),
            ("0\\pi", "0", true),
        ] {
            assert_eq!(
                monomials_equal(&node(a), &node(b)),
                Some(same),
                "{a} vs {b}"
            );
        }
        // Sums of unlike terms, nested radicals, 0^0 and 1/0 are left to the
        // exact engine.
        for s in [
            "1 + \\sqrt{2}",
            "\\sqrt{2\\sqrt{2}}",
            "0^0",
            "\\frac{1}{0}",
            "\\sqrt{-4}",
        ] {
            assert_eq!(monomials_equal(&node(s), &node("1")), None, "{s}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1500))]
        /// Where both sides are monomials the quick verdict is the exact
        /// engine's; where enclosures are apart the engine never finds the
        /// two equal; every enclosure holds the float value.
        #[test]
        fn quick_verdicts_agree_with_the_exact_engine(a in constant(), b in constant()) {
            let opts = CompareOptions::default();
            let (Ok(va), Ok(vb)) = (parse(&a, &ParseOptions::default()), parse(&b, &ParseOptions::default())) else {
                return Ok(());
            };
            let (na, nb) = (&va.node, &vb.node);
            // The enclosure meets the exact engine's certified ball.
            if let Some(x) = enclose(na, 0) {
                let limits = crate::math::Limits::default();
                let mut enc = crate::math::real::Encloser::new(&limits, 0);
                if let Some(ball) = enc.eval(na, crate::math::real::PRECISIONS[0]) {
                    let (lo, hi) = ball.bounds();
                    prop_assert!(exact(x.lo) <= hi && lo <= exact(x.hi), "{}: {:?}", a, x);
                }
            }
            let engine = forms_equal(na, nb, &opts);
            if let (Some(quick), Some(engine)) = (monomials_equal(na, nb), engine) {
                prop_assert_eq!(quick, engine, "{} vs {}", a, b);
            }
            if apart(na, nb, false, 0.0) {
                prop_assert_ne!(engine, Some(true), "{} vs {}", a, b);
            }
            // The same value written another way is never apart from itself,
            // and where it is a monomial it is equal.
            let Ok(twice) = parse(&format!("\\frac{{2({a})}}{{2}}"), &ParseOptions::default()) else {
                return Ok(());
            };
            prop_assert!(!apart(na, &twice.node, false, 0.0), "{}", a);
            if let Some(q) = monomials_equal(na, &twice.node) {
                prop_assert!(q, "{}", a);
                prop_assert_ne!(forms_equal(na, &twice.node, &opts), Some(false), "{}", a);
            }
        }
    }
}
