//! Exact canonical forms of polynomials and rational functions.
//!
//! An expression built from rational (or Gaussian rational) constants, the
//! variables, `+ - * /`, percent and small integer powers is a rational
//! function `P/Q` of the variables; two of them are equal exactly when
//! `P1 Q2 = P2 Q1` as polynomials, so for these no sampling is needed and
//! no choice of points can be targeted (`x^2+(x-7)(3x-52)(7x+206)` is not
//! `x^2`). Anything else (`\pi`, roots, functions) is left to sampling.
//! Every coefficient operation is charged against the comparison's work
//! budget; an expansion that would be too large gives up (and sampling
//! decides) instead of growing.

use std::collections::BTreeMap;

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive, Zero};

use super::ast::Node;
use super::eval::Cq;

/// Largest number of terms of one polynomial.
const MAX_TERMS: usize = 400;
/// Largest integer exponent expanded.
const MAX_POWER: u64 = 64;

/// Exponents of the variables, by index.
type Mono = Vec<u32>;

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Poly(BTreeMap<Mono, Cq>);

fn cq(re: BigRational) -> Cq {
    Cq {
        re,
        im: BigRational::zero(),
    }
}

fn cq_zero(c: &Cq) -> bool {
    c.re.is_zero() && c.im.is_zero()
}

fn bits(c: &Cq) -> u64 {
    c.re.numer().bits() + c.re.denom().bits() + c.im.numer().bits() + c.im.denom().bits()
}

fn cq_add(a: &Cq, b: &Cq) -> Cq {
    Cq {
        re: &a.re + &b.re,
        im: &a.im + &b.im,
    }
}

fn cq_mul(a: &Cq, b: &Cq) -> Cq {
    if a.im.is_zero() && b.im.is_zero() {
        return cq(&a.re * &b.re);
    }
    Cq {
        re: &a.re * &b.re - &a.im * &b.im,
        im: &a.re * &b.im + &a.im * &b.re,
    }
}

fn cq_div(a: &Cq, b: &Cq) -> Option<Cq> {
    let d = &b.re * &b.re + &b.im * &b.im;
    if d.is_zero() {
        return None;
    }
    Some(Cq {
        re: (&a.re * &b.re + &a.im * &b.im) / &d,
        im: (&a.im * &b.re - &a.re * &b.im) / &d,
    })
}

impl Poly {
    fn constant(c: Cq, nvars: usize) -> Poly {
        let mut m = BTreeMap::new();
        if !cq_zero(&c) {
            m.insert(vec![0; nvars], c);
        }
        Poly(m)
    }

    fn one(nvars: usize) -> Poly {
        Poly::constant(cq(BigRational::one()), nvars)
    }

    fn var(k: usize, nvars: usize) -> Poly {
        let mut mono = vec![0; nvars];
        mono[k] = 1;
        let mut m = BTreeMap::new();
        m.insert(mono, cq(BigRational::one()));
        Poly(m)
    }

    pub(crate) fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    fn neg(mut self) -> Poly {
        for c in self.0.values_mut() {
            c.re = -std::mem::take(&mut c.re);
            c.im = -std::mem::take(&mut c.im);
        }
        self
    }

    fn leading(&self) -> Option<(&Mono, &Cq)> {
        self.0.iter().next_back()
    }
}

/// Converts expressions to rational functions within a work allowance.
pub(crate) struct Ctx<'a> {
    syms: &'a [String],
    /// Work spent, in the units of [`super::Limits::max_work`].
    pub work: u64,
    cap: u64,
}

pub(crate) type Rat = (Poly, Poly);

impl<'a> Ctx<'a> {
    pub(crate) fn new(syms: &'a [String], work: u64, cap: u64) -> Self {
        Ctx { syms, work, cap }
    }

    fn charge(&mut self, b: u64) -> Option<()> {
        self.work += 16 + b + b * b / 256;
        (self.work <= self.cap).then_some(())
    }

    fn add(&mut self, a: &Poly, b: &Poly) -> Option<Poly> {
        let mut out = a.0.clone();
        for (m, c) in &b.0 {
            self.charge(bits(c))?;
            match out.get_mut(m) {
                Some(x) => {
                    *x = cq_add(x, c);
                    if cq_zero(x) {
                        out.remove(m);
                    }
                }
                None => {
                    out.insert(m.clone(), c.clone());
                }
            }
        }
        (out.len() <= MAX_TERMS).then_some(Poly(out))
    }

    fn mul(&mut self, a: &Poly, b: &Poly) -> Option<Poly> {
        if a.0.len().saturating_mul(b.0.len()) > MAX_TERMS * 8 {
            return None;
        }
        let mut out: BTreeMap<Mono, Cq> = BTreeMap::new();
        for (ma, ca) in &a.0 {
            for (mb, cb) in &b.0 {
                self.charge(bits(ca) + bits(cb))?;
                let mono: Mono = ma.iter().zip(mb).map(|(x, y)| x + y).collect();
                let c = cq_mul(ca, cb);
                match out.get_mut(&mono) {
                    Some(x) => {
                        *x = cq_add(x, &c);
                        if cq_zero(x) {
                            out.remove(&mono);
                        }
                    }
                    None => {
                        out.insert(mono, c);
                    }
                }
            }
        }
        (out.len() <= MAX_TERMS).then_some(Poly(out))
    }

    fn scale(&mut self, a: &Poly, k: &Cq) -> Option<Poly> {
        let mut out = BTreeMap::new();
        for (m, c) in &a.0 {
            self.charge(bits(c) + bits(k))?;
            let v = cq_mul(c, k);
            if !cq_zero(&v) {
                out.insert(m.clone(), v);
            }
        }
        Some(Poly(out))
    }

    fn pow(&mut self, a: &Poly, k: u64) -> Option<Poly> {
        let mut acc = Poly::one(self.syms.len());
        let mut p = a.clone();
        let mut e = k;
        while e > 0 {
            if e & 1 == 1 {
                acc = self.mul(&acc, &p)?;
            }
            e >>= 1;
            if e > 0 {
                p = self.mul(&p, &p)?;
            }
        }
        Some(acc)
    }

    /// `n` as `P/Q`, or `None` when it is not a rational function of the
    /// variables (or too large to expand).
    pub(crate) fn rat(&mut self, n: &Node) -> Option<Rat> {
        self.charge(0)?;
        let nv = self.syms.len();
        Some(match n {
            Node::Num(v, _) => (Poly::constant(cq((**v).clone()), nv), Poly::one(nv)),
            Node::Sym(s) => {
                if let Some(k) = self.syms.iter().position(|x| x == s) {
                    (Poly::var(k, nv), Poly::one(nv))
                } else if s == "i" {
                    let i = Cq {
                        re: BigRational::zero(),
                        im: BigRational::one(),
                    };
                    (Poly::constant(i, nv), Poly::one(nv))
                } else {
                    return None;
                }
            }
            Node::Neg(a) => {
                let (p, q) = self.rat(a)?;
                (p.neg(), q)
            }
            Node::Add(v) => {
                let mut acc = (Poly::constant(cq(BigRational::zero()), nv), Poly::one(nv));
                for t in v {
                    let (p, q) = self.rat(t)?;
                    acc = if q == acc.1 {
                        (self.add(&acc.0, &p)?, q)
                    } else {
                        let a = self.mul(&acc.0, &q)?;
                        let b = self.mul(&p, &acc.1)?;
                        (self.add(&a, &b)?, self.mul(&acc.1, &q)?)
                    };
                }
                acc
            }
            Node::Mul(v) => {
                let mut acc = (Poly::one(nv), Poly::one(nv));
                for t in v {
                    let (p, q) = self.rat(t)?;
                    acc = (self.mul(&acc.0, &p)?, self.mul(&acc.1, &q)?);
                }
                acc
            }
            Node::Div(a, b) => {
                let (pa, qa) = self.rat(a)?;
                let (pb, qb) = self.rat(b)?;
                if pb.is_zero() {
                    return None;
                }
                (self.mul(&pa, &qb)?, self.mul(&qa, &pb)?)
            }
            Node::Percent(a) => {
                let (p, q) = self.rat(a)?;
                let hundred = cq(BigRational::from_integer(BigInt::from(100)));
                (p, self.scale(&q, &hundred)?)
            }
            Node::Pow(b, e) => {
                let k = match &**e {
                    Node::Num(v, None) if v.is_integer() => v.to_integer(),
                    Node::Neg(x) => match &**x {
                        Node::Num(v, None) if v.is_integer() => -v.to_integer(),
                        _ => return None,
                    },
                    _ => return None,
                };
                let m = k.abs().to_u64().filter(|m| *m <= MAX_POWER)?;
                let (p, q) = self.rat(b)?;
                if k.is_negative() && p.is_zero() {
                    return None;
                }
                let (p, q) = (self.pow(&p, m)?, self.pow(&q, m)?);
                if k.is_negative() {
                    (q, p)
                } else {
                    (p, q)
                }
            }
            _ => return None,
        })
    }

    /// `a = b` as rational functions.
    pub(crate) fn equal(&mut self, a: &Rat, b: &Rat) -> Option<bool> {
        if a.1.is_zero() || b.1.is_zero() {
            return None;
        }
        let l = self.mul(&a.0, &b.1)?;
        let r = self.mul(&b.0, &a.1)?;
        Some(l == r)
    }

    /// Whether `a = c b` for a constant `c` (positive and real when
    /// `positive`); `None` when it cannot tell.
    pub(crate) fn proportional(&mut self, a: &Rat, b: &Rat, positive: bool) -> Option<bool> {
        if a.1.is_zero() || b.1.is_zero() {
            return None;
        }
        // a / b = (Pa Qb) / (Pb Qa): a constant exactly when l = c r.
        let l = self.mul(&a.0, &b.1)?;
        let r = self.mul(&b.0, &a.1)?;
        match (l.is_zero(), r.is_zero()) {
            (true, true) => return Some(true),
            (true, false) | (false, true) => return Some(false),
            _ => {}
        }
        let (Some((ml, cl)), Some((mr, cr))) = (l.leading(), r.leading()) else {
            return Some(false);
        };
        if ml != mr || l.0.len() != r.0.len() {
            return Some(false);
        }
        let c = cq_div(cl, cr)?;
        if positive && !(c.im.is_zero() && c.re.is_positive()) {
            return Some(false);
        }
        let scaled = self.scale(&r, &c)?;
        Some(scaled == l)
    }
}
