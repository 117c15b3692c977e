//! A second look at two exact irrational values that agree in `f64`.
//!
//! `\sqrt2 + 10^{-12}` and `\sqrt2` agree to 1e-12, closer than any float
//! tolerance can tell apart, yet they are different exact values and must
//! not match. Real constant expressions built from rationals, `+ - * /`,
//! rational powers, roots, `\pi` and `e` are evaluated again in binary fixed
//! point with [`P`] fractional bits; two values that differ by more than
//! 2^-200 (relative) are different.

use num_bigint::{BigInt, Sign};
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive, Zero};

use super::ast::{Func, Node};

/// Fractional bits of the fixed-point values.
const P: u64 = 400;
/// Largest magnitude (in bits) worth carrying.
const MAX_BITS: u64 = 4096;

type Fx = BigInt;

fn from_rational(r: &BigRational) -> Option<Fx> {
    if r.numer().bits() > MAX_BITS || r.denom().bits() > MAX_BITS {
        return None;
    }
    Some((r.numer() << P) / r.denom())
}

fn mul(a: &Fx, b: &Fx) -> Option<Fx> {
    let r: BigInt = (a * b) >> P;
    (r.bits() <= MAX_BITS + P).then_some(r)
}

fn div(a: &Fx, b: &Fx) -> Option<Fx> {
    if b.is_zero() {
        return None;
    }
    let r: BigInt = (a << P) / b;
    (r.bits() <= MAX_BITS + P).then_some(r)
}

fn pow_int(base: &Fx, k: i64) -> Option<Fx> {
    if k.unsigned_abs() > 4096 {
        return None;
    }
    let mut acc: Fx = BigInt::one() << P;
    let mut p = base.clone();
    let mut e = k.unsigned_abs();
    while e > 0 {
        if e & 1 == 1 {
            acc = mul(&acc, &p)?;
        }
        e >>= 1;
        if e > 0 {
            p = mul(&p, &p)?;
        }
    }
    if k < 0 {
        div(&(BigInt::one() << P), &acc)
    } else {
        Some(acc)
    }
}

fn root(x: &Fx, n: u32) -> Option<Fx> {
    if n == 0 || n > 64 {
        return None;
    }
    if x.is_negative() {
        return if n % 2 == 1 {
            root(&-x, n).map(|r| -r)
        } else {
            None
        };
    }
    let scaled: BigInt = x << (P * u64::from(n - 1));
    Some(scaled.nth_root(n))
}

/// π by Machin's formula, 16 atan(1/5) - 4 atan(1/239).
fn pi() -> Fx {
    fn atan_inv(k: u64) -> Fx {
        let one: Fx = BigInt::one() << (P + 16);
        let mut term = &one / BigInt::from(k);
        let mut sum = term.clone();
        let k2 = BigInt::from(k * k);
        let mut n = 1u64;
        while !term.is_zero() {
            term /= &k2;
            let t = &term / BigInt::from(2 * n + 1);
            if n % 2 == 1 {
                sum -= t;
            } else {
                sum += t;
            }
            n += 1;
        }
        sum
    }
    (atan_inv(5) * 16 - atan_inv(239) * 4) >> 16
}

fn euler() -> Fx {
    let mut term: Fx = BigInt::one() << (P + 16);
    let mut sum = term.clone();
    let mut k = 1u64;
    while !term.is_zero() {
        term /= BigInt::from(k);
        sum += &term;
        k += 1;
    }
    sum >> 16
}

fn eval(n: &Node) -> Option<Fx> {
    match n {
        Node::Num(v, _) => from_rational(v),
        Node::Pi => Some(pi()),
        Node::Sym(s) if s == "e" => Some(euler()),
        Node::Add(v) => v
            .iter()
            .try_fold(BigInt::zero(), |acc, t| Some(acc + eval(t)?)),
        Node::Neg(a) => eval(a).map(|x| -x),
        Node::Mul(v) => v
            .iter()
            .try_fold(BigInt::one() << P, |acc, t| mul(&acc, &eval(t)?)),
        Node::Div(a, b) => div(&eval(a)?, &eval(b)?),
        Node::Percent(a) => div(&eval(a)?, &(BigInt::from(100) << P)),
        Node::Func(Func::Abs, a) => eval(a).map(|x| x.abs()),
        Node::Root(k, x) => {
            let Node::Num(k, _) = &**k else { return None };
            if !k.is_integer() {
                return None;
            }
            root(&eval(x)?, k.to_integer().to_u32()?)
        }
        Node::Pow(b, e) => {
            let base = eval(b)?;
            let Node::Num(e, _) = &**e else {
                let Node::Neg(inner) = &**e else { return None };
                let Node::Num(e, _) = &**inner else {
                    return None;
                };
                let k = e.to_integer().to_i64().filter(|_| e.is_integer())?;
                return pow_int(&base, -k);
            };
            let q = e.denom().to_u32()?;
            let p = e.numer().to_i64()?;
            let b = if q == 1 { base } else { root(&base, q)? };
            pow_int(&b, p)
        }
        _ => None,
    }
}

/// The value of a real constant of this kind as `(x, P)`: `x / 2^P`.
pub(crate) fn fixed(n: &Node) -> Option<(BigInt, u64)> {
    eval(n).map(|x| (x, P))
}

/// `Some(false)` when both are real constants of this kind whose values
/// differ beyond 2^-200 relative; `None` when it cannot tell.
pub(crate) fn differ(a: &Node, b: &Node) -> Option<bool> {
    let x = eval(a)?;
    let y = eval(b)?;
    let diff = (&x - &y).abs();
    let scale = x.abs().max(y.abs());
    // Below 2^-100 in magnitude compare absolutely, at 2^-300.
    let floor: BigInt = BigInt::one() << (P - 100);
    let bound = scale.max(floor);
    let lhs: BigInt = diff << 200u32;
    Some(lhs > bound && lhs.sign() != Sign::NoSign)
}
