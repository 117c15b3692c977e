//! Rational arithmetic with a machine-word fast path. `num-rational`
//! reduces every result by a `BigInt` gcd, which allocates and costs more
//! than the rest of parsing a short answer (`380.0`: the reduction of
//! 3800/10 was half of `parse`). Operands whose numerator and denominator fit
//! in an `i64` are combined in `i128`, reduced there, and built unreduced
//! from the reduced parts; others go through `num-rational`. Either way the
//! result is the same canonical fraction (lowest terms, positive
//! denominator), so every comparison of values is unchanged.

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::ToPrimitive;

/// `n / d` in lowest terms; `d` must not be zero (as [`BigRational::new`]).
pub(crate) fn new(n: BigInt, d: BigInt) -> BigRational {
    match (n.to_i128(), d.to_i128()) {
        (Some(a), Some(b)) if b != 0 => reduced(a, b).unwrap_or_else(|| BigRational::new(n, d)),
        _ => BigRational::new(n, d),
    }
}

/// `a + b`.
pub(crate) fn add(a: &BigRational, b: &BigRational) -> BigRational {
    match (small(a), small(b)) {
        (Some((an, ad)), Some((bn, bd))) => {
            reduced(an * bd + bn * ad, ad * bd).unwrap_or_else(|| a + b)
        }
        _ => a + b,
    }
}

/// `a * b`.
pub(crate) fn mul(a: &BigRational, b: &BigRational) -> BigRational {
    match (small(a), small(b)) {
        (Some((an, ad)), Some((bn, bd))) => reduced(an * bn, ad * bd).unwrap_or_else(|| a * b),
        _ => a * b,
    }
}

/// `a / b`; `b` must not be zero.
pub(crate) fn div(a: &BigRational, b: &BigRational) -> BigRational {
    match (small(a), small(b)) {
        (Some((an, ad)), Some((bn, bd))) if bn != 0 => {
            reduced(an * bd, ad * bn).unwrap_or_else(|| a / b)
        }
        _ => a / b,
    }
}

/// A fraction's parts when both fit in an `i64` (their products and a sum of
/// two products then fit in an `i128`).
fn small(r: &BigRational) -> Option<(i128, i128)> {
    Some((
        i128::from(r.numer().to_i64()?),
        i128::from(r.denom().to_i64()?),
    ))
}

/// `n / d` in lowest terms with a positive denominator; `None` for a zero
/// denominator or a part whose negation overflows (left to `num-rational`).
fn reduced(n: i128, d: i128) -> Option<BigRational> {
    if d == 0 || n == i128::MIN || d == i128::MIN {
        return None;
    }
    let g = gcd(n.unsigned_abs(), d.unsigned_abs()) as i128;
    let (mut n, mut d) = (n / g, d / g);
    if d < 0 {
        (n, d) = (-n, -d);
    }
    Some(BigRational::new_raw(BigInt::from(n), BigInt::from(d)))
}

/// The greatest common divisor (binary); `gcd(0, d)` is `d`.
fn gcd(mut a: u128, mut b: u128) -> u128 {
    if a == 0 {
        return b;
    }
    if b == 0 {
        return a;
    }
    let shift = (a | b).trailing_zeros();
    a >>= a.trailing_zeros();
    loop {
        b >>= b.trailing_zeros();
        if a > b {
            std::mem::swap(&mut a, &mut b);
        }
        b -= a;
        if b == 0 {
            return a << shift;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn big(n: i128, d: i128) -> BigRational {
        BigRational::new(BigInt::from(n), BigInt::from(d))
    }

    fn part() -> impl Strategy<Value = i128> {
        prop_oneof![
            -20i128..20,
            any::<i64>().prop_map(i128::from),
            any::<i128>(),
            Just(i128::from(i64::MIN)),
            Just(i128::from(i64::MAX)),
        ]
    }

    proptest! {
        // The fast paths give num-rational's own results, canonical form included.
        #[test]
        fn the_fast_paths_agree_with_num_rational(an in part(), ad in part(), bn in part(), bd in part()) {
            prop_assume!(ad != 0 && bd != 0);
            let (a, b) = (big(an, ad), big(bn, bd));
            let check = |got: BigRational, want: BigRational| {
                prop_assert_eq!(got.numer(), want.numer());
                prop_assert_eq!(got.denom(), want.denom());
                Ok(())
            };
            check(new(BigInt::from(an), BigInt::from(ad)), a.clone())?;
            check(add(&a, &b), &a + &b)?;
            check(mul(&a, &b), &a * &b)?;
            if bn != 0 {
                check(div(&a, &b), &a / &b)?;
            }
        }
    }
}
