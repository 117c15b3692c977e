//! Exact canonical forms: equal values proven equal, not estimated.
//!
//! docs/verify_semantics.md ("When two answers are equal"): two answers
//! without a decimal are equal only when they are shown to be. An expression
//! is brought into a canonical form: a quotient of two sums of monomials
//! with Gaussian-rational coefficients, a monomial being a product of powers
//! of generators:
//!
//! - the variables (integer exponents);
//! - `p^q` for a base `p` with no integer root and `0 < q < 1` (radicals:
//!   `\sqrt8` is `2·2^{1/2}`, `\sqrt[3]{16}` is `2·2^{1/3}`);
//! - `\pi` and `\ln p` (`\ln 12` is `2\ln 2 + \ln 3`);
//! - `e^{α}` with α a polynomial of the variables (`e^{x+1}` = `e·e^x`; the
//!   trigonometric and hyperbolic functions of such arguments are their
//!   exponential forms, so `\sin^2 x + \cos^2 x` is 1 and `\sin 2x` is
//!   `2\sin x\cos x`);
//! - `e^{iπq}` for a rational `q` whose denominator is not 1, 2, 3, 4, 6 or
//!   12 (for those, the value is written with radicals: `\cos\frac{\pi}{3}`
//!   is `\frac12`, `\sin\frac{\pi}{12}` is `\frac{\sqrt6-\sqrt2}{4}`);
//! - any other function of a canonical argument, as an opaque atom (`\sin 1`,
//!   `\sqrt{1+\sqrt2}`, `\lfloor x \rfloor`, `f(x)`).
//!
//! Each rewriting is an identity, so two expressions with the same canonical
//! form have the same value: a match is a proof. Different forms are
//! different values wherever the generators are independent (radicals of
//! different bases: a theorem; `e^α` for different α: Lindemann–Weierstrass;
//! `\pi` against the others: believed, unproven), and the verifier calls
//! them no match in any case. Every operation is charged against the
//! comparison's work budget; a form that would grow too large is not built.

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

use num_bigint::BigInt;
use num_integer::Integer;
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive, Zero};

use super::ast::{Func, Node};
use super::display::render;
use super::real;
use super::Limits;

type Q = BigRational;

/// Largest number of terms of one sum.
const MAX_TERMS: usize = 400;
/// Largest integer power of a sum that is expanded.
const MAX_POWER: u64 = 64;
/// Trial division finds prime factors below this; what remains is taken as
/// one base (its root of highest degree).
const TRIAL_LIMIT: u32 = 2_000;

/// A Gaussian rational.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct C {
    re: Q,
    im: Q,
}

impl C {
    fn real(re: Q) -> C {
        C { re, im: Q::zero() }
    }
    fn int(k: i64) -> C {
        C::real(Q::from_integer(BigInt::from(k)))
    }
    fn i() -> C {
        C {
            re: Q::zero(),
            im: Q::one(),
        }
    }
    fn is_zero(&self) -> bool {
        self.re.is_zero() && self.im.is_zero()
    }
    fn is_real(&self) -> bool {
        self.im.is_zero()
    }
    fn add(&self, o: &C) -> C {
        C {
            re: q_add(&self.re, &o.re),
            im: q_add(&self.im, &o.im),
        }
    }
    fn neg(&self) -> C {
        C {
            re: -&self.re,
            im: -&self.im,
        }
    }
    fn is_one(&self) -> bool {
        self.im.is_zero() && self.re.is_one()
    }
    fn mul(&self, o: &C) -> C {
        if self.is_one() {
            return o.clone();
        }
        if o.is_one() {
            return self.clone();
        }
        if self.im.is_zero() && o.im.is_zero() {
            return C::real(q_mul(&self.re, &o.re));
        }
        C {
            re: &self.re * &o.re - &self.im * &o.im,
            im: &self.re * &o.im + &self.im * &o.re,
        }
    }
    fn inv(&self) -> Option<C> {
        if self.im.is_zero() {
            return (!self.re.is_zero()).then(|| C::real(self.re.recip()));
        }
        let d = &self.re * &self.re + &self.im * &self.im;
        Some(C {
            re: &self.re / &d,
            im: -&self.im / &d,
        })
    }
    fn bits(&self) -> u64 {
        self.re.numer().bits()
            + self.re.denom().bits()
            + self.im.numer().bits()
            + self.im.denom().bits()
    }
}

/// A generator of the canonical forms (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Gen {
    /// A variable, by its index.
    Var(u32),
    /// `n^q`: `n > 1` is no perfect power, `0 < q < 1`.
    Root(BigInt),
    Pi,
    /// `\ln n` for a base `n` as in [`Gen::Root`].
    Ln(BigInt),
    /// `e^{iπq}`, `0 < q < 1/2`.
    Unity,
    Atom(Box<Atom>),
}

/// A function of canonical arguments that has no canonical form itself.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Atom {
    Func(Func, Frac),
    Pow(Frac, Frac),
    /// An unknown function or indexed name (`f(x)`, `a_{n}`), `mod`, `!`,
    /// `\binom`.
    Named(String, Vec<Frac>),
    /// What is kept as written: a limit, a sum with symbolic bounds.
    Raw(String),
}

impl Atom {
    /// A piecewise function (`\lfloor\rfloor`, `\lceil\rceil`, `|\cdot|`,
    /// `\bmod`): sampling cannot tell one from a smooth function that agrees
    /// with it between its breaks.
    fn piecewise(&self) -> bool {
        matches!(self, Atom::Func(Func::Floor | Func::Ceil | Func::Abs, _))
            || matches!(self, Atom::Named(n, _) if n == "mod")
    }
}

/// A product of generators' powers and of `e^α` (α a polynomial of the
/// variables, nonzero).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(crate) struct Mono {
    e: Option<Box<Sum>>,
    f: Vec<(Gen, Q)>,
}

impl Mono {
    fn one() -> Mono {
        Mono::default()
    }
    fn is_one(&self) -> bool {
        self.e.is_none() && self.f.is_empty()
    }
    fn gen(g: Gen) -> Mono {
        Mono {
            e: None,
            f: vec![(g, Q::one())],
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(crate) struct Sum(BTreeMap<Mono, C>);

impl Sum {
    fn zero() -> Sum {
        Sum::default()
    }
    fn c(c: C) -> Sum {
        let mut m = BTreeMap::new();
        if !c.is_zero() {
            m.insert(Mono::one(), c);
        }
        Sum(m)
    }
    fn mono(m: Mono, c: C) -> Sum {
        let mut s = BTreeMap::new();
        if !c.is_zero() {
            s.insert(m, c);
        }
        Sum(s)
    }
    fn is_zero(&self) -> bool {
        self.0.is_empty()
    }
    fn is_one(&self) -> bool {
        self.0.len() == 1 && self.0.iter().all(|(m, c)| m.is_one() && *c == C::int(1))
    }
    /// The value when the sum is a constant of `Q(i)`.
    fn constant(&self) -> Option<C> {
        match self.0.len() {
            0 => Some(C::int(0)),
            1 => self
                .0
                .iter()
                .next()
                .filter(|(m, _)| m.is_one())
                .map(|(_, c)| c.clone()),
            _ => None,
        }
    }
    fn single(&self) -> Option<(&Mono, &C)> {
        if self.0.len() == 1 {
            self.0.iter().next()
        } else {
            None
        }
    }
}

/// `n / d`, with `d` never a single monomial (that is folded into `n`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Frac {
    n: Sum,
    d: Sum,
}

impl Frac {
    fn of(n: Sum) -> Frac {
        Frac {
            n,
            d: Sum::c(C::int(1)),
        }
    }
    fn c(c: C) -> Frac {
        Frac::of(Sum::c(c))
    }
    fn rational(q: Q) -> Frac {
        Frac::c(C::real(q))
    }
    /// The value when it is a real rational.
    pub(crate) fn as_rational(&self) -> Option<Q> {
        if !self.d.is_one() {
            return None;
        }
        self.n.constant().filter(C::is_real).map(|c| c.re)
    }
    fn as_c(&self) -> Option<C> {
        if !self.d.is_one() {
            return None;
        }
        self.n.constant()
    }
    fn has_var(&self) -> bool {
        sum_has_var(&self.n) || sum_has_var(&self.d)
    }
    /// The piecewise atoms (with variables in them) of this form.
    pub(crate) fn piecewise_atoms(&self, out: &mut Vec<Atom>) {
        for s in [&self.n, &self.d] {
            for m in s.0.keys() {
                for (g, _) in &m.f {
                    if let Gen::Atom(a) = g {
                        if a.piecewise() && atom_has_var(a) {
                            out.push((**a).clone());
                        }
                    }
                }
            }
        }
    }
    /// Whether an opaque atom with a variable in it occurs.
    pub(crate) fn has_var_atom(&self) -> bool {
        [&self.n, &self.d].iter().any(|s| {
            s.0.keys().any(|m| {
                m.f.iter()
                    .any(|(g, _)| matches!(g, Gen::Atom(a) if atom_has_var(a)))
            })
        })
    }
}

fn sum_has_var(s: &Sum) -> bool {
    s.0.keys().any(|m| {
        m.e.is_some()
            || m.f.iter().any(|(g, _)| match g {
                Gen::Var(_) => true,
                Gen::Atom(a) => atom_has_var(a),
                _ => false,
            })
    })
}

fn atom_has_var(a: &Atom) -> bool {
    match a {
        Atom::Func(_, x) => x.has_var(),
        Atom::Pow(b, e) => b.has_var() || e.has_var(),
        Atom::Named(_, v) => v.iter().any(Frac::has_var),
        Atom::Raw(_) => true,
    }
}

/// Work units per unit of [`mono_weight`]: copying one factor (an
/// allocation) costs about what 16 units of coefficient arithmetic do.
const COPY_UNITS: u64 = 16;

/// What copying or ordering a monomial costs: one per
/// factor, and the size of what its exponent and function factors hold
/// (`f(g(x_1), h(x_2))` copies its arguments). The coefficient budget alone
/// let products of such factors run a hundred times longer than it allows.
fn mono_weight(m: &Mono) -> u64 {
    let mut w = 1 + m.f.len() as u64;
    if let Some(e) = &m.e {
        w += sum_weight(e);
    }
    for (g, _) in &m.f {
        if let Gen::Atom(a) = g {
            w += match &**a {
                Atom::Func(_, x) => frac_weight(x),
                Atom::Pow(b, e) => frac_weight(b) + frac_weight(e),
                Atom::Named(name, args) => {
                    1 + name.len() as u64 / 8 + args.iter().map(frac_weight).sum::<u64>()
                }
                Atom::Raw(text) => 1 + text.len() as u64 / 8,
            };
        }
    }
    w
}

fn sum_weight(s: &Sum) -> u64 {
    s.0.keys().map(mono_weight).sum()
}

fn frac_weight(f: &Frac) -> u64 {
    sum_weight(&f.n) + sum_weight(&f.d)
}

/// Builds canonical forms within a work allowance.
pub(crate) struct Exact<'a> {
    syms: &'a [String],
    /// Values of the variables (a sample point), when substituted.
    env: Option<&'a [Q]>,
    /// Variables bound by a `\sum` or `\prod` being expanded.
    bound: Vec<(String, Q)>,
    /// The hash of `env`, once computed (for [`sampled_value`]).
    point_hash: Option<u64>,
    limits: &'a Limits,
    pub work: u64,
    cap: u64,
}

impl<'a> Exact<'a> {
    pub(crate) fn new(
        syms: &'a [String],
        env: Option<&'a [Q]>,
        limits: &'a Limits,
        work: u64,
        cap: u64,
    ) -> Self {
        Exact {
            syms,
            env,
            bound: Vec::new(),
            point_hash: None,
            limits,
            work,
            cap,
        }
    }

    fn charge(&mut self, bits: u64) -> Option<()> {
        if bits > self.limits.max_bits {
            return None;
        }
        self.work += 16 + bits + bits * bits / 256;
        (self.work <= self.cap).then_some(())
    }

    /// Work that is copying, not arithmetic: a structure of `weight` (see
    /// [`mono_weight`]).
    fn charge_copy(&mut self, weight: u64) -> Option<()> {
        self.work += COPY_UNITS * weight;
        (self.work <= self.cap).then_some(())
    }

    // ------------------------------------------------------------ sums

    fn add(&mut self, a: &Sum, b: &Sum) -> Option<Sum> {
        // Copying the terms costs too.
        self.charge_copy(sum_weight(a))?;
        let mut out = a.clone();
        self.add_into(&mut out, b)?;
        Some(out)
    }

    /// `acc += b` in place: a loop that accumulates terms (a sum's
    /// summands, `\sum_{k}`) copies none of the sum so far.
    fn add_into(&mut self, acc: &mut Sum, b: &Sum) -> Option<()> {
        self.charge(4 * b.0.len() as u64)?;
        for (m, c) in &b.0 {
            match acc.0.get_mut(m) {
                Some(x) => {
                    self.charge(c.bits().max(x.bits()))?;
                    *x = x.add(c);
                    if x.is_zero() {
                        acc.0.remove(m);
                    }
                }
                None => {
                    self.charge(c.bits())?;
                    self.charge_copy(mono_weight(m))?;
                    acc.0.insert(m.clone(), c.clone());
                }
            }
        }
        (acc.0.len() <= MAX_TERMS).then_some(())
    }

    fn scale(&mut self, a: &Sum, k: &C) -> Option<Sum> {
        if k.is_zero() {
            return Some(Sum::zero());
        }
        if k.is_one() {
            return Some(a.clone());
        }
        let mut out = BTreeMap::new();
        for (m, c) in &a.0 {
            self.charge(c.bits() + k.bits())?;
            self.charge_copy(mono_weight(m))?;
            out.insert(m.clone(), c.mul(k));
        }
        Some(Sum(out))
    }

    fn mul(&mut self, a: &Sum, b: &Sum) -> Option<Sum> {
        if a.0.len().saturating_mul(b.0.len()) > MAX_TERMS * 8 {
            return None;
        }
        // A constant factor scales.
        if let Some(c) = a.constant() {
            return self.scale(b, &c);
        }
        if let Some(c) = b.constant() {
            return self.scale(a, &c);
        }
        // The product's terms gather in place: adding each partial product
        // into a copy of the sum so far made the copying quadratic.
        let mut out: BTreeMap<Mono, C> = BTreeMap::new();
        for (ma, ca) in &a.0 {
            for (mb, cb) in &b.0 {
                self.charge(ca.bits() + cb.bits())?;
                let prod = self.mono_mul(ma, mb)?;
                let k = ca.mul(cb);
                for (m, c) in prod.0 {
                    self.charge(c.bits() + k.bits())?;
                    let c = c.mul(&k);
                    match out.entry(m) {
                        Entry::Occupied(mut e) => {
                            self.charge(c.bits().max(e.get().bits()))?;
                            let sum = e.get().add(&c);
                            if sum.is_zero() {
                                e.remove();
                            } else {
                                *e.get_mut() = sum;
                            }
                        }
                        Entry::Vacant(e) => {
                            if !c.is_zero() {
                                e.insert(c);
                            }
                        }
                    }
                }
                if out.len() > MAX_TERMS {
                    return None;
                }
            }
        }
        Some(Sum(out))
    }

    fn pow_sum(&mut self, a: &Sum, k: u64) -> Option<Sum> {
        if let Some((m, c)) = a.single() {
            // A monomial: exponents scale (no expansion).
            let m = m.clone();
            let c = c.clone();
            let kq = Q::from_integer(BigInt::from(k));
            let cm = self.c_pow(&c, k)?;
            return self.mono_pow(&m, &kq, cm);
        }
        if k > MAX_POWER {
            return None;
        }
        let mut acc = Sum::c(C::int(1));
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

    fn c_pow(&mut self, c: &C, k: u64) -> Option<C> {
        if k > self.limits.max_exponent || c.bits().saturating_mul(k) > self.limits.max_bits {
            return None;
        }
        let mut acc = C::int(1);
        let mut p = c.clone();
        let mut e = k;
        while e > 0 {
            if e & 1 == 1 {
                self.charge(acc.bits() + p.bits())?;
                acc = acc.mul(&p);
            }
            e >>= 1;
            if e > 0 {
                self.charge(2 * p.bits())?;
                p = p.mul(&p);
            }
        }
        Some(acc)
    }

    /// `m^q · c` for a rational `q` that keeps every exponent allowed (the
    /// caller checks): exponents multiply.
    fn mono_pow(&mut self, m: &Mono, q: &Q, c: C) -> Option<Sum> {
        let e = match &m.e {
            Some(a) => {
                let s = self.scale(a, &C::real(q.clone()))?;
                (!s.is_zero()).then(|| Box::new(s))
            }
            None => None,
        };
        let f = m.f.iter().map(|(g, k)| (g.clone(), k * q)).collect();
        self.normalize(c, Mono { e, f })
    }

    /// The product of two monomials (a sum: radicals carry integer parts
    /// into the coefficient, some roots of unity are radicals).
    fn mono_mul(&mut self, a: &Mono, b: &Mono) -> Option<Sum> {
        self.charge_copy(mono_weight(a) + mono_weight(b))?;
        if a.is_one() {
            return Some(Sum::mono(b.clone(), C::int(1)));
        }
        if b.is_one() {
            return Some(Sum::mono(a.clone(), C::int(1)));
        }
        let e = match (&a.e, &b.e) {
            (None, None) => None,
            (Some(x), None) | (None, Some(x)) => Some(x.clone()),
            (Some(x), Some(y)) => {
                let s = self.add(x, y)?;
                (!s.is_zero()).then(|| Box::new(s))
            }
        };
        let mut f: Vec<(Gen, Q)> = Vec::with_capacity(a.f.len() + b.f.len());
        let (mut i, mut j) = (0, 0);
        while i < a.f.len() || j < b.f.len() {
            let take_a = j >= b.f.len() || (i < a.f.len() && a.f[i].0 < b.f[j].0);
            let take_b = i >= a.f.len() || (j < b.f.len() && b.f[j].0 < a.f[i].0);
            if take_a {
                f.push(a.f[i].clone());
                i += 1;
            } else if take_b {
                f.push(b.f[j].clone());
                j += 1;
            } else {
                f.push((a.f[i].0.clone(), &a.f[i].1 + &b.f[j].1));
                i += 1;
                j += 1;
            }
        }
        self.normalize(C::int(1), Mono { e, f })
    }

    /// Reduce exponents: radicals to `[0, 1)` (integer parts into the
    /// coefficient), roots of unity to `[0, 1/2)` (powers of `i` into the
    /// coefficient; those with a small denominator become radicals), zero
    /// exponents dropped.
    fn normalize(&mut self, mut coeff: C, m: Mono) -> Option<Sum> {
        let plain = m.f.iter().all(|(g, q)| {
            !q.is_zero()
                && match g {
                    Gen::Root(_) => !q.is_negative() && q < &Q::one(),
                    Gen::Unity => false,
                    Gen::Atom(a) => q.is_integer() && !matches!(**a, Atom::Func(Func::Abs, _)),
                    Gen::Var(_) | Gen::Ln(_) => q.is_integer(),
                    Gen::Pi => true,
                }
        });
        if plain {
            return Some(Sum::mono(m, coeff));
        }
        let mut f = Vec::with_capacity(m.f.len());
        let mut expand: Option<Sum> = None;
        for (g, q) in m.f {
            if q.is_zero() {
                continue;
            }
            match g {
                Gen::Root(n) => {
                    let k = q.floor();
                    let r = &q - &k;
                    let k = k.to_integer().to_i64()?;
                    if k != 0 {
                        let p =
                            self.c_pow(&C::real(Q::from_integer(n.clone())), k.unsigned_abs())?;
                        let p = if k < 0 { p.inv()? } else { p };
                        self.charge(coeff.bits() + p.bits())?;
                        coeff = coeff.mul(&p);
                    }
                    if !r.is_zero() {
                        f.push((Gen::Root(n), r));
                    }
                }
                Gen::Unity => {
                    let two = Q::from_integer(BigInt::from(2));
                    let half = Q::new(BigInt::one(), BigInt::from(2));
                    let r = &q - (&q / &two).floor() * &two;
                    let j = (&r / &half).floor();
                    let r = &r - &j * &half;
                    for _ in 0..j.to_integer().to_u32().unwrap_or(0) {
                        coeff = coeff.mul(&C::i());
                    }
                    if r.is_zero() {
                        continue;
                    }
                    let d = r.denom().to_u32().unwrap_or(0);
                    if matches!(d, 3 | 4 | 6 | 12) {
                        let v = self.unity_radicals(&r)?;
                        expand = Some(match expand {
                            None => v,
                            Some(x) => self.mul(&x, &v)?,
                        });
                    } else {
                        f.push((Gen::Unity, r));
                    }
                }
                Gen::Var(_) | Gen::Ln(_) | Gen::Atom(_) if !q.is_integer() => return None,
                // |A|^{2k} = A^{2k} for a real polynomial A.
                Gen::Atom(a)
                    if q.to_integer().is_even()
                        && matches!(&*a, Atom::Func(Func::Abs, x) if real_polynomial(x)) =>
                {
                    let Atom::Func(_, x) = *a else {
                        return None;
                    };
                    let k = q.to_integer().to_u64()?;
                    let v = self.pow_sum(&x.n, k)?;
                    expand = Some(match expand {
                        None => v,
                        Some(e) => self.mul(&e, &v)?,
                    });
                }
                g => f.push((g, q)),
            }
        }
        let base = Sum::mono(Mono { e: m.e, f }, coeff);
        match expand {
            None => Some(base),
            Some(x) => self.mul(&base, &x),
        }
    }

    /// `e^{iπr}` for `0 < r < 1/2` with denominator 3, 4, 6 or 12, in
    /// radicals.
    fn unity_radicals(&mut self, r: &Q) -> Option<Sum> {
        let k = (r * Q::from_integer(BigInt::from(12)))
            .to_integer()
            .to_i64()?;
        let half = Q::new(BigInt::one(), BigInt::from(2));
        let quarter = Q::new(BigInt::one(), BigInt::from(4));
        let sqrt = |n: i64| Mono {
            e: None,
            f: vec![(Gen::Root(BigInt::from(n)), half.clone())],
        };
        let term = |m: Mono, re: Q, im: Q| (m, C { re, im });
        let terms: Vec<(Mono, C)> = match k {
            // cos 15° + i sin 15° = (√6+√2)/4 + i(√6-√2)/4
            1 => vec![
                term(self.sqrt6(), quarter.clone(), quarter.clone()),
                term(sqrt(2), quarter.clone(), -quarter.clone()),
            ],
            // 30°: √3/2 + i/2
            2 => vec![
                term(sqrt(3), half.clone(), Q::zero()),
                term(Mono::one(), Q::zero(), half.clone()),
            ],
            // 45°: (1+i)√2/2
            3 => vec![term(sqrt(2), half.clone(), half.clone())],
            // 60°: 1/2 + i√3/2
            4 => vec![
                term(Mono::one(), half.clone(), Q::zero()),
                term(sqrt(3), Q::zero(), half.clone()),
            ],
            // 75°: (√6-√2)/4 + i(√6+√2)/4
            5 => vec![
                term(self.sqrt6(), quarter.clone(), quarter.clone()),
                term(sqrt(2), -quarter.clone(), quarter.clone()),
            ],
            _ => return None,
        };
        let mut s = Sum::zero();
        for (m, c) in terms {
            self.add_into(&mut s, &Sum::mono(m, c))?;
        }
        Some(s)
    }

    fn sqrt6(&self) -> Mono {
        let half = Q::new(BigInt::one(), BigInt::from(2));
        Mono {
            e: None,
            f: vec![
                (Gen::Root(BigInt::from(2)), half.clone()),
                (Gen::Root(BigInt::from(3)), half),
            ],
        }
    }

    // ------------------------------------------------------------ fractions

    /// Fold a single-monomial denominator into the numerator.
    fn frac(&mut self, n: Sum, d: Sum) -> Option<Frac> {
        if d.is_zero() {
            return None; // undefined
        }
        if n.is_zero() {
            return Some(Frac::of(Sum::zero()));
        }
        if d.is_one() {
            return Some(Frac { n, d });
        }
        if let Some(c) = d.constant() {
            let inv = c.inv()?;
            let n = self.scale(&n, &inv)?;
            return Some(Frac::of(n));
        }
        if let Some((m, c)) = d.single() {
            let inv_c = c.inv()?;
            let inv = self.mono_pow(&m.clone(), &-Q::one(), inv_c)?;
            let n = self.mul(&n, &inv)?;
            return Some(Frac::of(n));
        }
        Some(Frac { n, d })
    }

    fn fadd(&mut self, a: &Frac, b: &Frac) -> Option<Frac> {
        if a.n.is_zero() {
            return Some(b.clone());
        }
        if b.n.is_zero() {
            return Some(a.clone());
        }
        if a.d == b.d {
            let n = self.add(&a.n, &b.n)?;
            return self.frac(n, a.d.clone());
        }
        let x = self.mul(&a.n, &b.d)?;
        let y = self.mul(&b.n, &a.d)?;
        let n = self.add(&x, &y)?;
        let d = self.mul(&a.d, &b.d)?;
        self.frac(n, d)
    }

    /// `acc += x`, in place where both are polynomials (no denominator).
    fn fadd_into(&mut self, acc: &mut Frac, x: &Frac) -> Option<()> {
        if let (Some(a), Some(b)) = (acc.as_rational(), x.as_rational()) {
            self.charge(q_bits(&a).max(q_bits(&b)))?;
            *acc = Frac::rational(q_add(&a, &b));
            return Some(());
        }
        if acc.d.is_one() && x.d.is_one() {
            return self.add_into(&mut acc.n, &x.n);
        }
        *acc = self.fadd(acc, x)?;
        Some(())
    }

    fn fneg(&mut self, a: &Frac) -> Option<Frac> {
        let n = self.scale(&a.n, &C::int(-1))?;
        Some(Frac { n, d: a.d.clone() })
    }

    fn fmul(&mut self, a: &Frac, b: &Frac) -> Option<Frac> {
        if let (Some(x), Some(y)) = (a.as_rational(), b.as_rational()) {
            self.charge(q_bits(&x) + q_bits(&y))?;
            return Some(Frac::rational(q_mul(&x, &y)));
        }
        if a.d.is_one() && a.n.is_one() {
            return Some(b.clone());
        }
        if b.d.is_one() && b.n.is_one() {
            return Some(a.clone());
        }
        let n = self.mul(&a.n, &b.n)?;
        let d = if a.d.is_one() {
            b.d.clone()
        } else if b.d.is_one() {
            a.d.clone()
        } else {
            self.mul(&a.d, &b.d)?
        };
        self.frac(n, d)
    }

    fn finv(&mut self, a: &Frac) -> Option<Frac> {
        self.frac(a.d.clone(), a.n.clone())
    }

    fn fdiv(&mut self, a: &Frac, b: &Frac) -> Option<Frac> {
        let inv = self.finv(b)?;
        self.fmul(a, &inv)
    }

    fn fscale(&mut self, a: &Frac, k: C) -> Option<Frac> {
        let n = self.scale(&a.n, &k)?;
        Some(Frac { n, d: a.d.clone() })
    }

    fn fpow_int(&mut self, a: &Frac, k: i64) -> Option<Frac> {
        let m = k.unsigned_abs();
        let n = self.pow_sum(&a.n, m)?;
        let d = self.pow_sum(&a.d, m)?;
        if k < 0 {
            self.frac(d, n)
        } else {
            self.frac(n, d)
        }
    }

    /// Whether two forms are equal (`None`: too large to tell).
    pub(crate) fn equal(&mut self, a: &Frac, b: &Frac) -> Option<bool> {
        if a.d == b.d {
            return Some(a.n == b.n);
        }
        let l = self.mul(&a.n, &b.d)?;
        let r = self.mul(&b.n, &a.d)?;
        Some(l == r)
    }

    /// Whether `a = c·b` for a constant `c` (real and positive when
    /// `positive`), `None` when it cannot tell.
    pub(crate) fn proportional(&mut self, a: &Frac, b: &Frac, positive: bool) -> Option<bool> {
        let l = self.mul(&a.n, &b.d)?;
        let r = self.mul(&b.n, &a.d)?;
        match (l.is_zero(), r.is_zero()) {
            (true, true) => return Some(true),
            (true, false) | (false, true) => return Some(false),
            _ => {}
        }
        if l.0.len() != r.0.len() {
            return Some(false);
        }
        // c = (cl ml) / (cr mr) for the leading term of r and some term of
        // l: a constant monomial with l = c r.
        let (mr, cr) = r.0.iter().next_back()?;
        let inv = self.mono_pow(&mr.clone(), &-Q::one(), cr.inv()?)?;
        for (ml, cl) in &l.0 {
            let ratio = self.mul(&Sum::mono(ml.clone(), cl.clone()), &inv)?;
            if sum_has_var(&ratio) {
                continue;
            }
            let scaled = self.mul(&r, &ratio)?;
            if scaled != l {
                continue;
            }
            if positive {
                let Some((m, c)) = ratio.single() else {
                    return Some(false);
                };
                let positive_gens =
                    m.e.as_ref()
                        .is_none_or(|a| a.constant().is_some_and(|x| x.is_real()))
                        && m.f
                            .iter()
                            .all(|(g, _)| matches!(g, Gen::Root(_) | Gen::Pi | Gen::Ln(_)));
                return Some(positive_gens && c.is_real() && c.re.is_positive());
            }
            return Some(true);
        }
        Some(false)
    }

    pub(crate) fn is_zero(&self, f: &Frac) -> bool {
        f.n.is_zero()
    }

    pub(crate) fn quotient(&mut self, a: &Frac, b: &Frac) -> Option<Frac> {
        self.fdiv(a, b)
    }

    /// Whether `f` is a positive real constant that its form shows to be
    /// one (a positive rational times radicals, `\pi`, logarithms of bases
    /// above 1 and real exponentials).
    pub(crate) fn positive_constant(&self, f: &Frac) -> bool {
        if let Some(q) = f.as_rational() {
            return q.is_positive();
        }
        f.d.is_one()
            && f.n.single().is_some_and(|(m, c)| {
                c.is_real()
                    && c.re.is_positive()
                    && m.e
                        .as_ref()
                        .is_none_or(|a| a.constant().is_some_and(|x| x.is_real()))
                    && m.f
                        .iter()
                        .all(|(g, _)| matches!(g, Gen::Root(_) | Gen::Pi | Gen::Ln(_)))
            })
    }

    // ------------------------------------------------------------ from nodes

    /// The canonical form of `n`; `None` when it has none (a structure,
    /// infinity, an undefined value, or over budget).
    pub(crate) fn form(&mut self, n: &Node) -> Option<Frac> {
        self.charge(0)?;
        match n {
            Node::Num(v, _) => {
                self.charge(v.numer().bits() + v.denom().bits())?;
                Some(Frac::rational((**v).clone()))
            }
            Node::Sym(s) => self.symbol(s),
            Node::Pi => Some(Frac::of(Sum::mono(Mono::gen(Gen::Pi), C::int(1)))),
            Node::Add(v) => {
                let mut acc = Frac::c(C::int(0));
                for t in v {
                    let x = self.form(t)?;
                    self.fadd_into(&mut acc, &x)?;
                }
                Some(acc)
            }
            Node::Neg(a) => {
                let x = self.form(a)?;
                self.fneg(&x)
            }
            Node::Mul(v) => {
                let mut acc = Frac::c(C::int(1));
                for t in v {
                    let x = self.form(t)?;
                    acc = self.fmul(&acc, &x)?;
                }
                Some(acc)
            }
            Node::Div(a, b) => {
                let x = self.form(a)?;
                let y = self.form(b)?;
                self.fdiv(&x, &y)
            }
            Node::Percent(a) => {
                let x = self.form(a)?;
                self.fscale(&x, C::real(Q::new(BigInt::one(), BigInt::from(100))))
            }
            Node::Pow(b, e) => self.power(b, e),
            Node::Root(k, x) => {
                let k = self.form(k)?.as_rational()?;
                if !k.is_integer() || k.is_zero() {
                    return None;
                }
                let q = k.recip();
                if let Some(f) = self.root_of_power(x, &q) {
                    return Some(f);
                }
                let base = self.form(x)?;
                self.pow_q(&base, &q)
            }
            Node::Func(f, x) => self.func(*f, x),
            Node::Log(b, x) => {
                let lx = self.ln_node(x)?;
                let lb = self.ln_node(b)?;
                self.fdiv(&lx, &lb)
            }
            Node::Fact(x) => {
                let a = self.form(x)?;
                match a.as_rational() {
                    Some(k) => self.factorial(&k),
                    None => Some(self.atom(Atom::Named("!".into(), vec![a]))),
                }
            }
            Node::Binom(a, b) => {
                let x = self.form(a)?;
                let y = self.form(b)?;
                match (x.as_rational(), y.as_rational()) {
                    (Some(n), Some(k)) => self.binom(&n, &k),
                    _ => Some(self.atom(Atom::Named("binom".into(), vec![x, y]))),
                }
            }
            Node::Mod(a, b) => {
                let x = self.form(a)?;
                let y = self.form(b)?;
                match (x.as_rational(), y.as_rational()) {
                    (Some(p), Some(q)) if !q.is_zero() => {
                        Some(Frac::rational(&p - &q * (&p / &q).floor()))
                    }
                    (Some(_), Some(_)) => None,
                    _ => Some(self.atom(Atom::Named("mod".into(), vec![x, y]))),
                }
            }
            Node::Indexed(name, sub) => {
                let s = self.form(sub)?;
                Some(self.application(name, vec![s]))
            }
            Node::Apply(name, args) => {
                let mut v = Vec::with_capacity(args.len());
                for a in args {
                    v.push(self.form(a)?);
                }
                Some(self.application(name, v))
            }
            Node::BigOp(sum, var, lo, hi, body) => self.big_op(*sum, var, lo, hi, body, n),
            Node::Limit(..) => Some(self.atom(Atom::Raw(render(n)))),
            _ => None,
        }
    }

    /// An unknown function or indexed name applied (`f(x)`, `F_{k}`): an
    /// opaque atom; but at a sample point, with rational arguments, a value
    /// drawn from the point, the name and the arguments, so that such names
    /// are sampled like variables (the same application has the same value
    /// on both sides). `F_n = \sum_{k=0}^{n-1} F_k F_{n-k-1}` then costs
    /// rational arithmetic, not sums of products of atoms.
    fn application(&mut self, name: &str, args: Vec<Frac>) -> Frac {
        if let Some(env) = self.env {
            let rational: Option<Vec<Q>> = args.iter().map(Frac::as_rational).collect();
            if let Some(qs) = rational {
                let point = *self.point_hash.get_or_insert_with(|| point_hash(env));
                return Frac::rational(sampled_value(point, name, &qs));
            }
        }
        self.atom(Atom::Named(name.to_string(), args))
    }

    fn atom(&mut self, a: Atom) -> Frac {
        Frac::of(Sum::mono(Mono::gen(Gen::Atom(Box::new(a))), C::int(1)))
    }

    fn symbol(&mut self, s: &str) -> Option<Frac> {
        if let Some((_, v)) = self.bound.iter().rev().find(|(k, _)| k == s) {
            return Some(Frac::rational(v.clone()));
        }
        if let Some(k) = self.syms.iter().position(|x| x == s) {
            return Some(match self.env {
                Some(vals) => Frac::rational(vals.get(k)?.clone()),
                None => Frac::of(Sum::mono(Mono::gen(Gen::Var(k as u32)), C::int(1))),
            });
        }
        match s {
            "e" => Some(Frac::of(Sum::mono(
                Mono {
                    e: Some(Box::new(Sum::c(C::int(1)))),
                    f: Vec::new(),
                },
                C::int(1),
            ))),
            "i" => Some(Frac::c(C::i())),
            "pi" => Some(Frac::of(Sum::mono(Mono::gen(Gen::Pi), C::int(1)))),
            _ => None,
        }
    }

    fn big_op(
        &mut self,
        sum: bool,
        var: &str,
        lo: &Node,
        hi: &Node,
        body: &Node,
        n: &Node,
    ) -> Option<Frac> {
        let l = self.form(lo)?;
        let h = self.form(hi)?;
        let (Some(l), Some(h)) = (l.as_rational(), h.as_rational()) else {
            if l.has_var() || h.has_var() {
                return Some(self.atom(Atom::Raw(render(n))));
            }
            return None;
        };
        if !l.is_integer() || !h.is_integer() {
            return None;
        }
        let (l, h) = (l.to_integer(), h.to_integer());
        if &h - &l > BigInt::from(self.limits.max_terms) {
            return None;
        }
        // Rational terms gather in `q`, the others in `acc`.
        let mut q = Q::from_integer(BigInt::from(i64::from(!sum)));
        let mut acc = Frac::c(C::int(i64::from(!sum)));
        let mut k = l;
        while k <= h {
            self.bound
                .push((var.to_string(), Q::from_integer(k.clone())));
            let v = match self.rational(body) {
                Some(r) => Ok(r),
                None => Err(self.form(body)),
            };
            self.bound.pop();
            match v {
                Ok(r) => {
                    self.charge(q_bits(&q) + q_bits(&r))?;
                    q = if sum { q_add(&q, &r) } else { q_mul(&q, &r) };
                }
                Err(v) if sum => self.fadd_into(&mut acc, &v?)?,
                Err(v) => acc = self.fmul(&acc, &v?)?,
            }
            k += 1;
        }
        let q = Frac::rational(q);
        if sum {
            self.fadd(&acc, &q)
        } else {
            self.fmul(&acc, &q)
        }
    }

    /// The value of `n` when rational operations on rational values give it
    /// (at a sample point, or a sum's term): what [`Exact::form`] gives,
    /// without building sums of monomials. `None` when any part is not
    /// such a value (`\pi`, a root, a function, a division by zero): then
    /// [`Exact::form`] decides.
    fn rational(&mut self, n: &Node) -> Option<Q> {
        self.charge(0)?;
        match n {
            Node::Num(v, _) => {
                self.charge(q_bits(v))?;
                Some((**v).clone())
            }
            Node::Sym(s) => {
                if let Some((_, v)) = self.bound.iter().rev().find(|(k, _)| k == s) {
                    return Some(v.clone());
                }
                let k = self.syms.iter().position(|x| x == s)?;
                self.env?.get(k).cloned()
            }
            Node::Indexed(name, sub) => {
                let env = self.env?;
                let q = self.rational(sub)?;
                let point = *self.point_hash.get_or_insert_with(|| point_hash(env));
                Some(sampled_value(point, name, &[q]))
            }
            Node::Apply(name, args) => {
                let env = self.env?;
                let mut qs = Vec::with_capacity(args.len());
                for a in args {
                    qs.push(self.rational(a)?);
                }
                let point = *self.point_hash.get_or_insert_with(|| point_hash(env));
                Some(sampled_value(point, name, &qs))
            }
            Node::Add(v) => {
                let mut acc = Q::zero();
                for t in v {
                    let x = self.rational(t)?;
                    self.charge(q_bits(&acc).max(q_bits(&x)))?;
                    acc = q_add(&acc, &x);
                }
                Some(acc)
            }
            Node::Neg(a) => Some(-self.rational(a)?),
            Node::Mul(v) => {
                let mut acc = Q::one();
                for t in v {
                    let x = self.rational(t)?;
                    self.charge(q_bits(&acc) + q_bits(&x))?;
                    acc = q_mul(&acc, &x);
                }
                Some(acc)
            }
            Node::Div(a, b) => {
                let x = self.rational(a)?;
                let y = self.rational(b)?;
                if y.is_zero() {
                    return None;
                }
                self.charge(q_bits(&x) + q_bits(&y))?;
                Some(q_mul(&x, &y.recip()))
            }
            Node::Pow(b, e) => {
                let k = self.rational(e)?;
                if !k.is_integer() {
                    return None;
                }
                let k = k.to_integer().to_i64()?;
                let x = self.rational(b)?;
                if x.is_zero() && k <= 0 {
                    return None;
                }
                let bits = q_bits(&x).saturating_mul(k.unsigned_abs());
                if k.unsigned_abs() > self.limits.max_exponent || bits > self.limits.max_bits {
                    return None;
                }
                self.charge(bits)?;
                Some(num_traits::pow::Pow::pow(&x, k as i32))
            }
            Node::Percent(a) => Some(self.rational(a)? / Q::from_integer(BigInt::from(100))),
            _ => None,
        }
    }

    /// [`Exact::form`], through [`Exact::rational`] first at a sample point.
    pub(crate) fn form_at_point(&mut self, n: &Node) -> Option<Frac> {
        if self.env.is_some() {
            if let Some(q) = self.rational(n) {
                return Some(Frac::rational(q));
            }
        }
        self.form(n)
    }

    fn factorial(&mut self, k: &Q) -> Option<Frac> {
        if !k.is_integer() || k.is_negative() {
            return None;
        }
        let n = k
            .to_integer()
            .to_u64()
            .filter(|n| *n <= self.limits.max_factorial)?;
        let mut acc = BigInt::one();
        for i in 2..=n {
            acc *= i;
            self.charge(acc.bits())?;
        }
        Some(Frac::rational(Q::from_integer(acc)))
    }

    fn binom(&mut self, n: &Q, k: &Q) -> Option<Frac> {
        if !n.is_integer() || !k.is_integer() {
            return None;
        }
        let (n, k) = (n.to_integer(), k.to_integer());
        if k.is_negative() || n.is_negative() || k > n {
            return Some(Frac::rational(Q::zero()));
        }
        let k = std::cmp::min(k.clone(), &n - &k);
        let kk = k.to_u64().filter(|k| *k <= self.limits.max_factorial)?;
        let mut acc = BigInt::one();
        for i in 0..kk {
            acc = acc * (&n - i) / (i + 1);
            self.charge(acc.bits())?;
        }
        Some(Frac::rational(Q::from_integer(acc)))
    }

    /// `(A^k)^q` for an even integer `k` and a real polynomial `A`, when
    /// `kq` is an integer: `|A|^{kq}` (`\sqrt{(x-1)^2}` is `|x-1|`).
    fn root_of_power(&mut self, b: &Node, q: &Q) -> Option<Frac> {
        let Node::Pow(inner, k) = b else {
            return None;
        };
        let k = self.form(k)?.as_rational()?;
        let kq = &k * q;
        if !k.is_integer() || !k.to_integer().is_even() || !kq.is_integer() || q.is_integer() {
            return None;
        }
        let a = self.form(inner)?;
        if !real_polynomial(&a) || !a.has_var() {
            return None;
        }
        let n = kq.to_integer().to_i64()?;
        if n % 2 == 0 {
            return self.fpow_int(&a, n);
        }
        let abs = self.atom(Atom::Func(Func::Abs, a));
        self.fpow_int(&abs, n)
    }

    fn power(&mut self, b: &Node, e: &Node) -> Option<Frac> {
        let ef = self.form(e)?;
        if let Some(q) = ef.as_rational() {
            if let Some(f) = self.root_of_power(b, &q) {
                return Some(f);
            }
            let bf = self.form(b)?;
            return self.pow_q(&bf, &q);
        }
        let bf = self.form(b)?;
        if is_e(&bf) {
            return self.exp(&ef);
        }
        Some(self.atom(Atom::Pow(bf, ef)))
    }

    /// `b^q` for a rational `q`. Roots of negative numbers follow the
    /// evaluator: an odd root of a negative real is the real root.
    fn pow_q(&mut self, b: &Frac, q: &Q) -> Option<Frac> {
        if q.is_integer() {
            let k = q.to_integer().to_i64()?;
            if k.unsigned_abs() > self.limits.max_exponent {
                return None;
            }
            if b.n.is_zero() {
                return match k.signum() {
                    0 => Some(Frac::c(C::int(1))),
                    1 => Some(Frac::c(C::int(0))),
                    _ => None,
                };
            }
            return self.fpow_int(b, k);
        }
        if b.n.is_zero() {
            return q.is_positive().then(|| Frac::c(C::int(0)));
        }
        if b.d.is_one() {
            if let Some((m, c)) = b.n.single() {
                if let Some(s) = self.mono_root(m, c, q) {
                    return Some(Frac::of(s));
                }
            }
        }
        if *q == Q::new(BigInt::one(), BigInt::from(2)) {
            if let Some(s) = self.denest(b) {
                return Some(s);
            }
        }
        Some(self.atom(Atom::Pow(b.clone(), Frac::rational(q.clone()))))
    }

    /// `(c·m)^q` distributed over the factors, when that is an identity: the
    /// coefficient is a real rational, the other factors are radicals, `\pi`
    /// and real exponentials (positive), and variables whose exponent stays
    /// an integer: `(x^2)^{1/2}` is `|x|`, `(x^4)^{1/2}` is `x^2`, `(x^3)^{1/3}`
    /// is `x` (the real root, as the evaluator takes it).
    fn mono_root(&mut self, m: &Mono, c: &C, q: &Q) -> Option<Sum> {
        if !c.is_real()
            || !m
                .e
                .as_ref()
                .is_none_or(|a| a.constant().is_some_and(|x| x.is_real()))
        {
            return None;
        }
        let mut rest = Mono {
            e: m.e.clone(),
            f: Vec::with_capacity(m.f.len()),
        };
        let mut abs_vars = Vec::new();
        for (g, a) in &m.f {
            match g {
                Gen::Root(_) | Gen::Pi => rest.f.push((g.clone(), a.clone())),
                Gen::Var(k) => {
                    let aq = a * q;
                    if !aq.is_integer() || !a.is_integer() {
                        return None;
                    }
                    if a.to_integer().is_even() && aq.to_integer().is_odd() {
                        abs_vars.push((*k, aq));
                    } else {
                        rest.f.push((g.clone(), a.clone()));
                    }
                }
                _ => return None,
            }
        }
        let coeff = self.rational_power(&c.re, q)?;
        let scaled = self.mono_pow(&rest, q, C::int(1))?;
        let mut out = self.mul(&coeff, &scaled)?;
        for (k, e) in abs_vars {
            let var = Frac::of(Sum::mono(Mono::gen(Gen::Var(k)), C::int(1)));
            let abs = Gen::Atom(Box::new(Atom::Func(Func::Abs, var)));
            let s = self.normalize(
                C::int(1),
                Mono {
                    e: None,
                    f: vec![(abs, e)],
                },
            )?;
            out = self.mul(&out, &s)?;
        }
        Some(out)
    }

    /// `r^q` for a rational `r`: prime factors' powers; `(-1)^q` is `±1`
    /// for an odd denominator (the real root) and `e^{iπq}` otherwise.
    fn rational_power(&mut self, r: &Q, q: &Q) -> Option<Sum> {
        let mut acc = Sum::c(C::int(1));
        if r.is_negative() {
            let sign = if q.denom().is_odd() {
                let odd = q.numer().is_odd();
                Sum::c(C::int(if odd { -1 } else { 1 }))
            } else {
                self.normalize(
                    C::int(1),
                    Mono {
                        e: None,
                        f: vec![(Gen::Unity, q.clone())],
                    },
                )?
            };
            acc = sign;
        }
        for (part, sign) in [(r.numer().abs(), 1i64), (r.denom().clone(), -1)] {
            if part.is_one() {
                continue;
            }
            for (base, k) in self.factor(&part)? {
                let exp = q * Q::from_integer(BigInt::from(k * sign));
                let m = Mono {
                    e: None,
                    f: vec![(Gen::Root(base), exp)],
                };
                let s = self.normalize(C::int(1), m)?;
                acc = self.mul(&acc, &s)?;
            }
        }
        Some(acc)
    }

    /// `n` as bases (no perfect powers) with exponents: the primes below
    /// [`TRIAL_LIMIT`], then what remains as its root of highest degree.
    fn factor(&mut self, n: &BigInt) -> Option<Vec<(BigInt, i64)>> {
        self.charge(n.bits() * 8)?;
        if let Some(mut m) = n.to_u64() {
            // Machine integers: trial division in u64.
            let mut out = Vec::new();
            let mut p = 2u64;
            while p * p <= m && p < u64::from(TRIAL_LIMIT) {
                let mut k = 0i64;
                while m % p == 0 {
                    m /= p;
                    k += 1;
                }
                if k > 0 {
                    out.push((BigInt::from(p), k));
                }
                p += if p == 2 { 1 } else { 2 };
            }
            if m > 1 {
                if p * p > m {
                    out.push((BigInt::from(m), 1));
                } else {
                    let (base, k) = self.perfect_power(BigInt::from(m))?;
                    out.push((base, k));
                }
            }
            return Some(out);
        }
        let mut n = n.clone();
        let mut out = Vec::new();
        let mut p = 2u32;
        while p < TRIAL_LIMIT && n > BigInt::one() {
            let bp = BigInt::from(p);
            let mut k = 0i64;
            while (&n % &bp).is_zero() {
                n /= &bp;
                k += 1;
            }
            if k > 0 {
                out.push((bp, k));
            }
            p += if p == 2 { 1 } else { 2 };
            if n.bits() < 64 && BigInt::from(p) * BigInt::from(p) > n {
                break;
            }
        }
        if n > BigInt::one() {
            let (base, k) = self.perfect_power(n)?;
            out.push((base, k));
        }
        Some(out)
    }

    fn perfect_power(&mut self, n: BigInt) -> Option<(BigInt, i64)> {
        let mut base = n;
        let mut k = 1i64;
        let mut j = 2u32;
        // Every factor of `base` exceeds TRIAL_LIMIT > 2^10.
        while u64::from(j) * 10 <= base.bits() {
            self.charge(base.bits())?;
            let r = base.nth_root(j);
            if num_traits::pow(r.clone(), j as usize) == base {
                base = r;
                k *= i64::from(j);
            } else {
                j += 1;
            }
        }
        Some((base, k))
    }

    /// `\sqrt{a + b\sqrt c}` = `\sqrt x + \sqrt y` when `a^2 - b^2 c` is a
    /// rational square.
    fn denest(&mut self, b: &Frac) -> Option<Frac> {
        if !b.d.is_one() || b.n.0.len() != 2 {
            return None;
        }
        let mut a = None;
        let mut rad = None;
        for (m, c) in &b.n.0 {
            if !c.is_real() {
                return None;
            }
            if m.is_one() {
                a = Some(c.re.clone());
            } else {
                rad = Some((m.clone(), c.re.clone()));
            }
        }
        let (a, (m, bc)) = (a?, rad?);
        // m must be a square root: every exponent 1/2.
        let half = Q::new(BigInt::one(), BigInt::from(2));
        if m.e.is_some()
            || !m
                .f
                .iter()
                .all(|(g, q)| matches!(g, Gen::Root(_)) && *q == half)
        {
            return None;
        }
        let mut c = Q::one();
        for (g, _) in &m.f {
            if let Gen::Root(n) = g {
                c *= Q::from_integer(n.clone());
            }
        }
        let disc = &a * &a - &bc * &bc * &c;
        if disc.is_negative() {
            return None;
        }
        let root = |x: &Q| -> Option<Q> {
            let n = x.numer().sqrt();
            let d = x.denom().sqrt();
            (&n * &n == *x.numer() && &d * &d == *x.denom()).then(|| Q::new(n, d))
        };
        let d = root(&disc)?;
        let two = Q::from_integer(BigInt::from(2));
        let x = (&a + &d) / &two;
        let y = (&a - &d) / &two;
        if x.is_negative() || y.is_negative() {
            return None;
        }
        let sx = self.rational_power(&x, &half)?;
        let sy = self.rational_power(&y, &half)?;
        let sy = if bc.is_negative() {
            self.scale(&sy, &C::int(-1))?
        } else {
            sy
        };
        let s = self.add(&sx, &sy)?;
        Some(Frac::of(s))
    }

    /// `e^{A}`: the variables' polynomial part as `e^α`, `q\ln n` terms as
    /// `n^q`, `iπq` terms as roots of unity; anything else makes it an atom.
    fn exp(&mut self, a: &Frac) -> Option<Frac> {
        if !a.d.is_one() {
            return Some(self.atom(Atom::Func(Func::Exp, a.clone())));
        }
        let mut alpha = Sum::zero();
        let mut rest = Sum::c(C::int(1));
        for (m, c) in &a.n.0 {
            let vars_only = m.e.is_none() && m.f.iter().all(|(g, _)| matches!(g, Gen::Var(_)));
            if vars_only {
                self.add_into(&mut alpha, &Sum::mono(m.clone(), c.clone()))?;
                continue;
            }
            if m.e.is_none() && m.f.len() == 1 {
                match &m.f[0] {
                    (Gen::Ln(n), k) if k.is_one() && c.is_real() => {
                        let s = self.rational_power(&Q::from_integer(n.clone()), &c.re)?;
                        rest = self.mul(&rest, &s)?;
                        continue;
                    }
                    (Gen::Pi, k) if k.is_one() && c.re.is_zero() => {
                        let s = self.normalize(
                            C::int(1),
                            Mono {
                                e: None,
                                f: vec![(Gen::Unity, c.im.clone())],
                            },
                        )?;
                        rest = self.mul(&rest, &s)?;
                        continue;
                    }
                    _ => {}
                }
            }
            return Some(self.atom(Atom::Func(Func::Exp, a.clone())));
        }
        let e = Sum::mono(
            Mono {
                e: (!alpha.is_zero()).then(|| Box::new(alpha)),
                f: Vec::new(),
            },
            C::int(1),
        );
        let s = self.mul(&e, &rest)?;
        Some(Frac::of(s))
    }

    fn func(&mut self, f: Func, x: &Node) -> Option<Frac> {
        let a = self.form(x)?;
        match f {
            Func::Exp => self.exp(&a),
            Func::Ln => self.ln(&a),
            Func::Sin | Func::Cos | Func::Tan | Func::Sec | Func::Csc | Func::Cot => {
                let ia = self.fscale(&a, C::i())?;
                let p = self.exp(&ia)?;
                let mia = self.fscale(&a, C::i().neg())?;
                let m = self.exp(&mia)?;
                if is_atom_of(&p, Func::Exp) {
                    return Some(self.atom(Atom::Func(f, a)));
                }
                let half = C::real(Q::new(BigInt::one(), BigInt::from(2)));
                let sum = self.fadd(&p, &m)?;
                let cos = self.fscale(&sum, half.clone())?;
                let neg_m = self.fneg(&m)?;
                let diff = self.fadd(&p, &neg_m)?;
                // 1/(2i) = -i/2
                let sin = self.fscale(
                    &diff,
                    C {
                        re: Q::zero(),
                        im: -half.re,
                    },
                )?;
                match f {
                    Func::Sin => Some(sin),
                    Func::Cos => Some(cos),
                    Func::Tan => self.fdiv(&sin, &cos),
                    Func::Cot => self.fdiv(&cos, &sin),
                    Func::Sec => self.finv(&cos),
                    _ => self.finv(&sin),
                }
            }
            Func::Sinh | Func::Cosh | Func::Tanh => {
                let p = self.exp(&a)?;
                if is_atom_of(&p, Func::Exp) {
                    return Some(self.atom(Atom::Func(f, a)));
                }
                let na = self.fneg(&a)?;
                let m = self.exp(&na)?;
                let half = C::real(Q::new(BigInt::one(), BigInt::from(2)));
                let s = self.fadd(&p, &m)?;
                let cosh = self.fscale(&s, half.clone())?;
                let nm = self.fneg(&m)?;
                let d = self.fadd(&p, &nm)?;
                let sinh = self.fscale(&d, half)?;
                match f {
                    Func::Sinh => Some(sinh),
                    Func::Cosh => Some(cosh),
                    _ => self.fdiv(&sinh, &cosh),
                }
            }
            Func::Asin | Func::Acos | Func::Atan => self.inverse_trig(f, a),
            Func::Abs | Func::Floor | Func::Ceil => self.piecewise(f, a, x),
        }
    }

    fn ln_node(&mut self, x: &Node) -> Option<Frac> {
        let a = self.form(x)?;
        self.ln(&a)
    }

    /// `\ln A`: of a positive rational times radicals, `\pi` and real
    /// exponentials, the sum of the logarithms; of a negative rational,
    /// `\ln|r| + iπ`; anything else an atom.
    fn ln(&mut self, a: &Frac) -> Option<Frac> {
        if a.d.is_one() {
            if let Some((m, c)) = a.n.single() {
                if c.is_real() && c.re.is_negative() && m.is_one() {
                    let l = self.ln_rational(&-c.re.clone())?;
                    let ipi = Frac::of(Sum::mono(Mono::gen(Gen::Pi), C::i()));
                    return self.fadd(&l, &ipi);
                }
                let real_exp =
                    m.e.as_ref()
                        .is_none_or(|x| x.constant().is_some_and(|v| v.is_real()));
                let simple = m.f.iter().all(|(g, _)| matches!(g, Gen::Root(_) | Gen::Pi));
                if c.is_real() && c.re.is_positive() && real_exp && simple {
                    let (m, c) = (m.clone(), c.clone());
                    let mut acc = self.ln_rational(&c.re)?;
                    if let Some(x) = &m.e {
                        let v = x.constant()?;
                        acc = self.fadd(&acc, &Frac::c(v))?;
                    }
                    for (g, q) in &m.f {
                        let term = match g {
                            Gen::Root(n) => {
                                Sum::mono(Mono::gen(Gen::Ln(n.clone())), C::real(q.clone()))
                            }
                            _ => {
                                let ln_pi = Atom::Func(
                                    Func::Ln,
                                    Frac::of(Sum::mono(Mono::gen(Gen::Pi), C::int(1))),
                                );
                                Sum::mono(Mono::gen(Gen::Atom(Box::new(ln_pi))), C::real(q.clone()))
                            }
                        };
                        acc = self.fadd(&acc, &Frac::of(term))?;
                    }
                    return Some(acc);
                }
            }
        }
        if a.n.is_zero() {
            return None;
        }
        Some(self.atom(Atom::Func(Func::Ln, a.clone())))
    }

    fn ln_rational(&mut self, r: &Q) -> Option<Frac> {
        let mut acc = Sum::zero();
        for (part, sign) in [(r.numer().clone(), 1i64), (r.denom().clone(), -1)] {
            if part.is_one() {
                continue;
            }
            for (base, k) in self.factor(&part)? {
                let t = Sum::mono(Mono::gen(Gen::Ln(base)), C::int(k * sign));
                self.add_into(&mut acc, &t)?;
            }
        }
        Some(Frac::of(acc))
    }

    /// `\arcsin`, `\arccos`, `\arctan` of the values in their tables, as
    /// rational multiples of `\pi`; anything else an atom.
    fn inverse_trig(&mut self, f: Func, a: Frac) -> Option<Frac> {
        let half = Q::new(BigInt::one(), BigInt::from(2));
        // (value, multiple of π) for arcsin and arctan, on [0, ∞).
        let table: Vec<(Frac, Q)> = match f {
            Func::Atan => vec![
                (Frac::rational(Q::zero()), Q::zero()),
                (Frac::rational(Q::one()), Q::new(1.into(), 4.into())),
                (self.sqrt_of(3, Q::one())?, Q::new(1.into(), 3.into())),
                (
                    self.sqrt_of(3, Q::new(1.into(), 3.into()))?,
                    Q::new(1.into(), 6.into()),
                ),
            ],
            _ => vec![
                (Frac::rational(Q::zero()), Q::zero()),
                (Frac::rational(half.clone()), Q::new(1.into(), 6.into())),
                (self.sqrt_of(2, half.clone())?, Q::new(1.into(), 4.into())),
                (self.sqrt_of(3, half.clone())?, Q::new(1.into(), 3.into())),
                (Frac::rational(Q::one()), half.clone()),
            ],
        };
        let neg = self.fneg(&a)?;
        for (v, q) in &table {
            for (x, sign) in [(&a, 1), (&neg, -1)] {
                if self.equal(x, v)? {
                    let q = if sign < 0 { -q.clone() } else { q.clone() };
                    let q = if f == Func::Acos { &half - &q } else { q };
                    return Some(Frac::of(Sum::mono(Mono::gen(Gen::Pi), C::real(q))));
                }
            }
        }
        Some(self.atom(Atom::Func(f, a)))
    }

    /// `k·\sqrt n` as a form.
    fn sqrt_of(&mut self, n: i64, k: Q) -> Option<Frac> {
        let s = self.rational_power(
            &Q::from_integer(BigInt::from(n)),
            &Q::new(BigInt::one(), BigInt::from(2)),
        )?;
        let s = self.scale(&s, &C::real(k))?;
        Some(Frac::of(s))
    }

    /// `|A|`, `\lfloor A \rfloor`, `\lceil A \rceil`: exact for a rational;
    /// for another real constant, decided on a certified enclosure; with
    /// variables (or undecided), an atom.
    fn piecewise(&mut self, f: Func, a: Frac, x: &Node) -> Option<Frac> {
        if let Some(q) = a.as_rational() {
            return Some(Frac::rational(match f {
                Func::Abs => q.abs(),
                Func::Floor => q.floor(),
                _ => q.ceil(),
            }));
        }
        if f == Func::Abs {
            if let Some(c) = a.as_c() {
                // |a + bi| = sqrt(a^2 + b^2)
                let sq = &c.re * &c.re + &c.im * &c.im;
                return self.pow_q(&Frac::rational(sq), &Q::new(1.into(), 2.into()));
            }
        }
        if !a.has_var() {
            let env: Vec<(String, Q)> = self.point_env();
            let mut work = self.work;
            let value = if f == Func::Abs {
                real::settle(x, self.limits, &env, &mut work, |b, _| {
                    real::sign_of(b).map(|s| s == num_bigint::Sign::Minus)
                })
                .map(|neg| (neg, None))
            } else {
                // The ball decides when it lies within one unit: the value
                // then has that floor (or ceiling).
                real::settle(x, self.limits, &env, &mut work, |b, _| {
                    let (lo, hi) = b.modest_bounds()?;
                    let (l, h) = if f == Func::Floor {
                        (lo.floor(), hi.floor())
                    } else {
                        (lo.ceil(), hi.ceil())
                    };
                    (l == h).then_some(l)
                })
                .map(|v| (false, Some(v)))
            };
            self.work = work.max(self.work);
            self.charge(0)?;
            match value {
                Some((_, Some(v))) => return Some(Frac::rational(v)),
                Some((true, None)) => return self.fneg(&a),
                Some((false, None)) => return Some(a),
                None => {}
            }
        }
        Some(self.atom(Atom::Func(f, a)))
    }

    fn point_env(&self) -> Vec<(String, Q)> {
        let mut env: Vec<(String, Q)> = match self.env {
            Some(vals) => self
                .syms
                .iter()
                .cloned()
                .zip(vals.iter().cloned())
                .collect(),
            None => Vec::new(),
        };
        env.extend(self.bound.iter().cloned());
        env
    }
}

/// A polynomial of the variables with real rational coefficients.
/// The value of `name(args)` at the sample point `env`: a non-integer of
/// either sign, below 100 in magnitude, the same for the same point, name
/// and arguments. Every application at one point shares its 4-digit
/// denominator (drawn from the point), so that sums of their products keep
/// small denominators: a sum of thirty products of values with different
/// denominators spent its time in the gcds of 800-bit rationals.
fn sampled_value(point: u64, name: &str, args: &[Q]) -> Q {
    use super::compare::{fnv, splitmix};
    let mut h = point;
    let mut p = point;
    let den = 1001 + splitmix(&mut p) % 8999;
    fnv(&mut h, name.as_bytes());
    for q in args {
        fnv(&mut h, b"|");
        fnv(&mut h, &q.numer().to_signed_bytes_le());
        fnv(&mut h, b"/");
        fnv(&mut h, &q.denom().to_signed_bytes_le());
    }
    let (r1, r2) = (splitmix(&mut h), splitmix(&mut h));
    let num = i128::from((r2 % 100) * den + 1 + r1 % (den - 1));
    let sign = if (r2 >> 40) & 1 == 1 { -1 } else { 1 };
    reduced(sign * num, i128::from(den))
}

/// A rational whose numerator and denominator fit in an `i64`.
fn small(q: &Q) -> Option<(i128, i128)> {
    Some((
        i128::from(q.numer().to_i64()?),
        i128::from(q.denom().to_i64()?),
    ))
}

/// `n / d` in lowest terms, for `d > 0` (both products of two `i64`s).
fn reduced(n: i128, d: i128) -> Q {
    let (mut a, mut b) = (n.unsigned_abs(), d.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    let g = a.max(1) as i128;
    Q::new_raw(BigInt::from(n / g), BigInt::from(d / g))
}

/// `a + b`, in machine integers while the terms fit (big rationals spend
/// most of their time allocating and in gcds on small values).
fn q_add(a: &Q, b: &Q) -> Q {
    match (small(a), small(b)) {
        (Some((an, ad)), Some((bn, bd))) if ad == bd => reduced(an + bn, ad),
        (Some((an, ad)), Some((bn, bd))) => reduced(an * bd + bn * ad, ad * bd),
        _ => a + b,
    }
}

/// `a · b`, as [`q_add`].
fn q_mul(a: &Q, b: &Q) -> Q {
    match (small(a), small(b)) {
        (Some((an, ad)), Some((bn, bd))) => reduced(an * bn, ad * bd),
        _ => a * b,
    }
}

fn q_bits(q: &Q) -> u64 {
    q.numer().bits() + q.denom().bits()
}

/// A hash of a sample point's values.
fn point_hash(env: &[Q]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for q in env {
        super::compare::fnv(&mut h, &q.numer().to_signed_bytes_le());
        super::compare::fnv(&mut h, b"/");
        super::compare::fnv(&mut h, &q.denom().to_signed_bytes_le());
    }
    h
}

fn real_polynomial(f: &Frac) -> bool {
    f.d.is_one()
        && f.n.0.iter().all(|(m, c)| {
            c.is_real() && m.e.is_none() && m.f.iter().all(|(g, _)| matches!(g, Gen::Var(_)))
        })
}

fn is_e(f: &Frac) -> bool {
    f.d.is_one()
        && f.n.single().is_some_and(|(m, c)| {
            *c == C::int(1) && m.f.is_empty() && m.e.as_ref().is_some_and(|a| a.is_one())
        })
}

fn is_atom_of(f: &Frac, func: Func) -> bool {
    f.d.is_one()
        && f.n.single().is_some_and(|(m, _)| {
            m.f.iter().any(
                |(g, _)| matches!(g, Gen::Atom(a) if matches!(**a, Atom::Func(x, _) if x == func)),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::{parse, ParseOptions};

    fn form_of(s: &str, syms: &[String]) -> Option<Frac> {
        let v = parse(s, &ParseOptions::default()).expect(s);
        let limits = Limits::default();
        let mut ex = Exact::new(syms, None, &limits, 0, limits.max_work);
        ex.form(&v.node)
    }

    fn same(a: &str, b: &str) -> bool {
        let syms: Vec<String> = ["x", "y", "n"].iter().map(|s| s.to_string()).collect();
        let limits = Limits::default();
        let (Some(fa), Some(fb)) = (form_of(a, &syms), form_of(b, &syms)) else {
            return false;
        };
        let mut ex = Exact::new(&syms, None, &limits, 0, limits.max_work);
        ex.equal(&fa, &fb) == Some(true)
    }

    /// `1 + x + ... + x^{k-1}`.
    fn poly_of(k: usize) -> String {
        (0..k)
            .map(|i| format!("x^{{{i}}}"))
            .collect::<Vec<_>>()
            .join("+")
    }

    /// The square of `text` (an expression in `x`) and the work it is charged.
    fn square_work(text: &str) -> (Sum, u64) {
        let syms = vec!["x".to_string()];
        let f = form_of(text, &syms).expect("a form");
        let limits = Limits::default();
        let mut ex = Exact::new(&syms, None, &limits, 0, u64::MAX);
        let p = ex.mul(&f.n, &f.n).expect("within the term limit");
        (p, ex.work)
    }

    /// The work a product of two `k`-term polynomials in `x` is charged.
    fn product_work(k: usize) -> u64 {
        let (p, work) = square_work(&poly_of(k));
        assert_eq!(p.0.len(), 2 * k - 1);
        work
    }

    #[test]
    fn a_product_costs_its_term_products_not_a_copy_per_term() {
        // k^2 term products: tripling k costs about 9 times the work. The sum
        // gathered by copying it once per partial product cost k^3 (27 times),
        // and a 30-term by 30-term product took 100 ms.
        let (small, large) = (product_work(10), product_work(30));
        assert!(large < small * 14, "{small} -> {large}");
    }

    /// The work `(\\sin P + \\cos P)^2` is charged, for `P` a polynomial
    /// of `k` terms: the same coefficients whatever `k`.
    fn function_product_work(k: usize) -> u64 {
        let p = poly_of(k);
        square_work(&format!("\\sin({p}) + \\cos({p})")).1
    }

    #[test]
    fn copying_large_factors_is_charged() {
        // Monomials holding large function factors cost their size to copy
        // and order: products of such factors (fuzzed) ran 100 ms on a work
        // budget meant for 5 ms when only coefficients were charged.
        // Four term products, each copying two monomials that grew by 39
        // terms of `P`.
        let (small, large) = (function_product_work(1), function_product_work(40));
        assert!(
            large - small >= 4 * 2 * 39 * COPY_UNITS,
            "{small} -> {large}"
        );
    }

    proptest::proptest! {
        /// The machine-integer paths of `q_add` and `q_mul` give the big
        /// rationals' results in lowest terms, extremes of `i64` included.
        #[test]
        fn machine_rationals_are_big_rationals(
            an in proptest::prop_oneof![proptest::num::i64::ANY, -3i64..3, proptest::strategy::Just(i64::MIN)],
            ad in proptest::prop_oneof![1..=i64::MAX, 1i64..5, proptest::strategy::Just(i64::MAX)],
            bn in proptest::prop_oneof![proptest::num::i64::ANY, -3i64..3, proptest::strategy::Just(i64::MIN)],
            bd in proptest::prop_oneof![1..=i64::MAX, 1i64..5, proptest::strategy::Just(i64::MAX)],
            same_den in proptest::bool::ANY,
        ) {
            let bd = if same_den { ad } else { bd };
            let a = Q::new_raw(an.into(), ad.into());
            let b = Q::new_raw(bn.into(), bd.into());
            for (got, want) in [(q_add(&a, &b), &a + &b), (q_mul(&a, &b), &a * &b)] {
                proptest::prop_assert_eq!(got.numer(), want.numer());
                proptest::prop_assert_eq!(got.denom(), want.denom());
            }
        }
    }

    fn expression() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            (-20i64..20).prop_map(|k| k.to_string()),
            Just("x".to_string()),
            Just("n".to_string()),
            Just(r"\frac{3}{7}".to_string()),
            Just("0".to_string()),
        ];
        leaf.prop_recursive(4, 24, 3, |inner| {
            prop_oneof![
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a})+({b})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a})-({b})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a})\\cdot({b})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!(r"\frac{{{a}}}{{{b}}}")),
                (inner.clone(), -3i64..4).prop_map(|(a, k)| format!("({a})^{{{k}}}")),
                inner.clone().prop_map(|a| format!("f({a})")),
                inner.clone().prop_map(|a| format!("F_{{{a}}}")),
                inner.clone().prop_map(|a| format!("{a}\\%")),
                inner.prop_map(|a| format!(r"\sum_{{k=1}}^{{4}} (k + {a})")),
            ]
        })
    }

    proptest::proptest! {
        /// At a sample point, the rational path gives what the canonical
        /// form gives whenever it gives anything (and is undefined, or
        /// declines, otherwise).
        #[test]
        fn the_rational_path_agrees_with_the_form(e in expression()) {
            let Ok(v) = parse(&e, &ParseOptions::default()) else { return Ok(()); };
            let syms: Vec<String> = ["n", "x"].iter().map(|s| s.to_string()).collect();
            let env = [Q::from_integer(BigInt::from(5)), Q::new(BigInt::from(-1234), BigInt::from(1009))];
            let limits = Limits::default();
            let mut ex = Exact::new(&syms, Some(&env), &limits, 0, limits.max_work);
            let fast = ex.rational(&v.node);
            let mut ex = Exact::new(&syms, Some(&env), &limits, 0, limits.max_work);
            let form = ex.form(&v.node);
            if let Some(q) = fast {
                proptest::prop_assert_eq!(form.and_then(|f| f.as_rational()), Some(q), "{}", e);
            }
        }
    }

    #[test]
    fn the_same_expression_matches_where_it_is_defined() {
        use crate::verify::{verify, VerifyOptions};
        let opts = VerifyOptions::default();
        for (e, defined) in [
            (r"\sin(x) + x^2", true),
            (r"\frac{1}{3\sqrt[3]{x}^2}", true),
            (r"\frac{1}{x - x}", false),
            (r"\frac{x}{0}", false),
        ] {
            let v = verify(&format!("${e}$"), &format!("\\boxed{{{e}}}"), &opts);
            assert_eq!(v.matched, defined, "{e}: {}", v.reason);
        }
    }

    #[test]
    fn unknown_functions_are_sampled_like_variables() {
        use crate::verify::{verify, VerifyOptions};
        let opts = VerifyOptions::default();
        let sum = r"F_n = \sum_{k=0}^{n-1} F_k F_{n-k-1}";
        for (gold, pred, equal) in [
            (sum, r"F_n = \sum_{k=0}^{n-1} F_{n-k-1} F_k", true),
            (sum, r"F_n = \sum_{k=0}^{n-2} F_k F_{n-k-2}", false),
            (sum, r"F_n = \sum_{k=1}^{n-1} F_k F_{n-k-1}", false),
            (r"f(x) + f(2x)", r"f(2x) + f(x)", true),
            (r"f(x) + f(2x)", r"2f(x)", false),
            (r"f(x) + f(2x)", r"f(x) + f(x + x)", true),
            (r"f(x) + f(2x)", r"f(x) + g(2x)", false),
            (r"a_{n+1} - a_n", r"-(a_n - a_{n+1})", true),
            (r"a_{n+1} - a_n", r"a_n - a_{n+1}", false),
            (r"a_{n+1} - a_n", r"a_{n+2} - a_{n+1}", false),
        ] {
            let v = verify(&format!("${gold}$"), &format!("\\boxed{{{pred}}}"), &opts);
            assert_eq!(v.matched, equal, "{gold} against {pred}: {}", v.reason);
        }
    }

    #[test]
    fn identities_are_proven() {
        for (a, b) in [
            (r"2\sqrt2", r"\sqrt8"),
            (r"\frac{1}{\sqrt3}", r"\frac{\sqrt3}{3}"),
            (r"\sqrt[3]{16}", r"2\sqrt[3]{2}"),
            (r"\sqrt{12}", r"2\sqrt{3}"),
            (r"\sqrt{2}\sqrt{3}", r"\sqrt{6}"),
            (r"\frac{1}{1+\sqrt2}", r"\sqrt2-1"),
            (r"(1+\sqrt2)^2", r"3+2\sqrt2"),
            (r"\sqrt{3+2\sqrt2}", r"1+\sqrt2"),
            (r"\sqrt{5-2\sqrt6}", r"\sqrt3-\sqrt2"),
            (r"\frac{9}{4}\pi", r"\frac{9\pi}{4}"),
            (r"e^{-1}", r"\frac1e"),
            (r"e^{2}e^{3}", r"e^5"),
            (r"\sqrt{e}", r"e^{1/2}"),
            (r"\ln 8", r"3\ln 2"),
            (r"\ln 12", r"2\ln 2 + \ln 3"),
            (r"\log_2 8", "3"),
            (r"\log_4 8", r"\frac32"),
            (r"\frac{\ln 8}{\ln 2}", "3"),
            (r"e^{\ln 3}", "3"),
            (r"\ln(e^2)", "2"),
            (r"\sin\frac{\pi}{6}", r"\frac12"),
            (r"\cos\frac{\pi}{3}", r"\frac12"),
            (r"\sin 60^\circ", r"\frac{\sqrt3}{2}"),
            (r"\tan\frac{\pi}{3}", r"\sqrt3"),
            (r"\cos\frac{\pi}{12}", r"\frac{\sqrt6+\sqrt2}{4}"),
            (r"\sin 80^\circ", r"\cos 10^\circ"),
            (r"\sin^2 1 + \cos^2 1", "1"),
            (r"e^{i\pi}", "-1"),
            (r"\arctan 1", r"\frac{\pi}{4}"),
            (r"\arcsin\frac12", r"\frac{\pi}{6}"),
            (r"\arccos\frac12", r"\frac{\pi}{3}"),
            (r"\sqrt{-4}", "2i"),
            (r"(1+i)^2", "2i"),
            (r"|3-4i|", "5"),
            (r"\lfloor \pi \rfloor", "3"),
            (r"\lceil \sqrt2 \rceil", "2"),
            (r"|1-\sqrt2|", r"\sqrt2-1"),
            (r"\sin^2 x + \cos^2 x", "1"),
            (r"\sin 2x", r"2\sin x\cos x"),
            (r"\tan^2 y + 1", r"\sec^2 y"),
            (r"e^{x+1}", r"e \cdot e^x"),
            (r"\cosh^2 x - \sinh^2 x", "1"),
            (r"\sqrt2 x", r"x\sqrt2"),
            (r"\frac{x}{\sqrt2}", r"\frac{\sqrt2 x}{2}"),
            (r"\sum_{k=1}^{4} k^2", "30"),
            (r"\lfloor x \rfloor + 1", r"1 + \lfloor x \rfloor"),
            (r"\sqrt{x^2}", r"|x|"),
            (r"|x|^2", r"x^2"),
            (r"\sqrt{(x-1)^2}", r"|x-1|"),
            (r"\sqrt[3]{x^3}", "x"),
        ] {
            assert!(same(a, b), "{a} = {b}");
        }
    }

    #[test]
    fn tiny_differences_are_differences() {
        for (a, b) in [
            (r"3 + 10^{-9}\sin 1", "3"),
            (r"\pi + 10^{-125}", r"\pi"),
            (r"\sqrt2 + 10^{-70}", r"\sqrt2"),
            (r"x^2 + 1.0000000001", "x^2 + 1"),
            (r"\lfloor x \rfloor", "x"),
            (r"x + 10^{-12}\sin x", "x"),
            (r"\sqrt2", r"\sqrt3"),
            (r"\frac{355}{113}", r"\pi"),
            (r"e^{\pi\sqrt{163}}", "262537412640768744"),
            (r"\sin 1", r"\sin 2"),
            (r"2^{1/3}", r"3^{1/4}"),
            (r"\ln 2", r"\ln 3"),
        ] {
            assert!(!same(a, b), "{a} != {b}");
        }
    }
}
