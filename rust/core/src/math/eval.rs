//! Evaluation of a scalar expression at a point: exactly (complex rationals)
//! while the value stays rational, in complex `f64` once it does not (roots
//! that are not perfect, `\pi`, `e`, trigonometry). Every exact operation is
//! charged against a bit budget, so a power tower or a huge factorial ends in
//! [`Rejection::OverBudget`] instead of a huge allocation.

use std::f64::consts::{E, PI};

use num_bigint::BigInt;
use num_integer::Integer;
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive, Zero};

use super::ast::{Func, Node};
use super::{Limits, Rejection};

type R<T> = Result<T, Rejection>;

/// A complex number with rational parts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cq {
    pub re: BigRational,
    pub im: BigRational,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct C64 {
    pub re: f64,
    pub im: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum V {
    Q(Cq),
    F(C64),
    /// `+∞` (1) or `-∞` (-1).
    Inf(i8),
    Undefined,
}

fn q(v: BigRational) -> V {
    V::Q(Cq {
        re: v,
        im: BigRational::zero(),
    })
}

fn f(re: f64) -> V {
    V::F(C64 { re, im: 0.0 })
}

fn to_f64(r: &BigRational) -> f64 {
    r.to_f64().unwrap_or(f64::NAN)
}

impl Cq {
    pub(crate) fn to_c64(&self) -> C64 {
        C64 {
            re: to_f64(&self.re),
            im: to_f64(&self.im),
        }
    }
    pub(crate) fn is_real(&self) -> bool {
        self.im.is_zero()
    }
}

impl V {
    pub(crate) fn as_c64(&self) -> Option<C64> {
        match self {
            V::Q(c) => Some(c.to_c64()),
            V::F(c) => Some(*c),
            _ => None,
        }
    }
}

impl C64 {
    fn add(self, o: C64) -> C64 {
        C64 {
            re: self.re + o.re,
            im: self.im + o.im,
        }
    }
    fn mul(self, o: C64) -> C64 {
        C64 {
            re: self.re * o.re - self.im * o.im,
            im: self.re * o.im + self.im * o.re,
        }
    }
    fn div(self, o: C64) -> Option<C64> {
        let d = o.re * o.re + o.im * o.im;
        if d == 0.0 {
            return None;
        }
        Some(C64 {
            re: (self.re * o.re + self.im * o.im) / d,
            im: (self.im * o.re - self.re * o.im) / d,
        })
    }
    fn abs(self) -> f64 {
        self.re.hypot(self.im)
    }
    fn ln(self) -> C64 {
        C64 {
            re: self.abs().ln(),
            im: self.im.atan2(self.re),
        }
    }
    fn exp(self) -> C64 {
        let m = self.re.exp();
        C64 {
            re: m * self.im.cos(),
            im: m * self.im.sin(),
        }
    }
    fn pow(self, e: C64) -> C64 {
        if self.im == 0.0 && e.im == 0.0 && (self.re > 0.0 || e.re.fract() == 0.0) {
            return C64 {
                re: self.re.powf(e.re),
                im: 0.0,
            };
        }
        if self.re == 0.0 && self.im == 0.0 {
            return C64 { re: 0.0, im: 0.0 };
        }
        e.mul(self.ln()).exp()
    }
}

fn bits(r: &BigRational) -> u64 {
    r.numer().bits() + r.denom().bits()
}

pub(crate) struct Evaluator<'a> {
    pub limits: &'a Limits,
    pub env: Vec<(String, V)>,
    /// Work done so far; starts from what the caller has already spent, so
    /// one budget covers a whole comparison.
    pub work: u64,
}

impl<'a> Evaluator<'a> {
    pub(crate) fn new(limits: &'a Limits) -> Self {
        Evaluator {
            limits,
            env: Vec::new(),
            work: 0,
        }
    }

    fn charge(&mut self, r: &BigRational) -> R<()> {
        self.charge_bits(bits(r))
    }

    /// Charge an operation whose operands or result have `b` bits. Big
    /// rationals are normalised by a gcd, quadratic in the size, so the
    /// cost is too.
    fn charge_bits(&mut self, b: u64) -> R<()> {
        if b > self.limits.max_bits {
            return Err(Rejection::OverBudget(format!(
                "a number of more than {} bits",
                self.limits.max_bits
            )));
        }
        self.work += 16 + b + b * b / 256;
        if self.work > self.limits.max_work {
            return Err(Rejection::OverBudget("too much arithmetic".into()));
        }
        Ok(())
    }

    /// Charge a binary operation on two exact values before doing it.
    fn precharge(&mut self, a: &Cq, b: &Cq) -> R<()> {
        let size = |c: &Cq| bits(&c.re).max(bits(&c.im));
        self.charge_bits(size(a) + size(b))
    }

    fn cq(&mut self, re: BigRational, im: BigRational) -> R<V> {
        self.charge(&re)?;
        self.charge(&im)?;
        Ok(V::Q(Cq { re, im }))
    }

    fn real(&mut self, re: BigRational) -> R<V> {
        self.charge(&re)?;
        Ok(q(re))
    }

    fn lookup(&self, name: &str) -> Option<V> {
        self.env
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }

    pub(crate) fn eval(&mut self, n: &Node) -> R<V> {
        self.charge_bits(0)?;
        Ok(match n {
            Node::Num(v, _) => q((**v).clone()),
            Node::Sym(s) => match self.lookup(s) {
                Some(v) => v,
                None => match s.as_str() {
                    "e" => f(E),
                    "i" => V::Q(Cq {
                        re: BigRational::zero(),
                        im: BigRational::one(),
                    }),
                    "pi" => f(PI),
                    _ => V::Undefined,
                },
            },
            Node::Pi => f(PI),
            Node::Inf => V::Inf(1),
            Node::Indexed(name, sub) => {
                let s = self.eval(sub)?;
                pseudo(name, &[s])
            }
            Node::Apply(name, args) => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.eval(a)?);
                }
                pseudo(name, &vals)
            }
            Node::Add(terms) => {
                let mut acc = q(BigRational::zero());
                for t in terms {
                    let v = self.eval(t)?;
                    acc = self.add(acc, v)?;
                }
                acc
            }
            Node::Neg(a) => {
                let v = self.eval(a)?;
                self.neg(v)
            }
            Node::Mul(fs) => {
                let mut acc = q(BigRational::one());
                for t in fs {
                    let v = self.eval(t)?;
                    acc = self.mul(acc, v)?;
                }
                acc
            }
            Node::Div(a, b) => {
                let a = self.eval(a)?;
                let b = self.eval(b)?;
                self.div(a, b)?
            }
            Node::Mod(a, b) => {
                let a = self.eval(a)?;
                let b = self.eval(b)?;
                self.modulo(a, b)?
            }
            Node::Percent(a) => {
                let a = self.eval(a)?;
                self.div(a, q(BigRational::from_integer(100.into())))?
            }
            Node::Pow(b, e) => {
                let b = self.eval(b)?;
                let e = self.eval(e)?;
                self.pow(b, e)?
            }
            Node::Root(k, x) => {
                let k = self.eval(k)?;
                let x = self.eval(x)?;
                self.root(k, x)?
            }
            Node::Fact(x) => {
                let x = self.eval(x)?;
                self.factorial(x)?
            }
            Node::Binom(a, b) => {
                let a = self.eval(a)?;
                let b = self.eval(b)?;
                self.binom(a, b)?
            }
            Node::Func(func, x) => {
                let x = self.eval(x)?;
                self.func(*func, x)
            }
            Node::Log(b, x) => {
                let b = self.eval(b)?;
                let x = self.eval(x)?;
                self.log(b, x)?
            }
            Node::BigOp(sum, var, lo, hi, body) => {
                let lo = self.eval(lo)?;
                let hi = self.eval(hi)?;
                let (Some(lo), Some(hi)) = (int_of(&lo), int_of(&hi)) else {
                    return Ok(V::Undefined);
                };
                if &hi - &lo > BigInt::from(self.limits.max_terms) {
                    return Err(Rejection::OverBudget(format!(
                        "a sum or product of more than {} terms",
                        self.limits.max_terms
                    )));
                }
                let mut acc = q(BigRational::from_integer(BigInt::from(u8::from(!*sum))));
                let mut k = lo;
                while k <= hi {
                    self.env
                        .push((var.clone(), q(BigRational::from_integer(k.clone()))));
                    let v = self.eval(body);
                    self.env.pop();
                    let v = v?;
                    acc = if *sum {
                        self.add(acc, v)?
                    } else {
                        self.mul(acc, v)?
                    };
                    k += 1;
                }
                acc
            }
            _ => V::Undefined,
        })
    }

    fn add(&mut self, a: V, b: V) -> R<V> {
        Ok(match (a, b) {
            (V::Undefined, _) | (_, V::Undefined) => V::Undefined,
            (V::Inf(x), V::Inf(y)) => {
                if x == y {
                    V::Inf(x)
                } else {
                    V::Undefined
                }
            }
            (V::Inf(x), _) | (_, V::Inf(x)) => V::Inf(x),
            (V::Q(a), V::Q(b)) => {
                self.precharge(&a, &b)?;
                if a.im.is_zero() && b.im.is_zero() {
                    return self.real(super::ratio::add(&a.re, &b.re));
                }
                self.cq(a.re + b.re, a.im + b.im)?
            }
            (a, b) => match (a.as_c64(), b.as_c64()) {
                (Some(x), Some(y)) => V::F(x.add(y)),
                _ => V::Undefined,
            },
        })
    }

    fn neg(&mut self, a: V) -> V {
        match a {
            V::Q(c) => V::Q(Cq {
                re: -c.re,
                im: -c.im,
            }),
            V::F(c) => V::F(C64 {
                re: -c.re,
                im: -c.im,
            }),
            V::Inf(s) => V::Inf(-s),
            V::Undefined => V::Undefined,
        }
    }

    fn mul(&mut self, a: V, b: V) -> R<V> {
        Ok(match (a, b) {
            (V::Undefined, _) | (_, V::Undefined) => V::Undefined,
            (V::Inf(x), V::Inf(y)) => V::Inf(x * y),
            (V::Inf(s), o) | (o, V::Inf(s)) => match real_sign(&o) {
                Some(0) | None => V::Undefined,
                Some(t) => V::Inf(s * t),
            },
            (V::Q(a), V::Q(b)) => {
                self.precharge(&a, &b)?;
                if a.im.is_zero() && b.im.is_zero() {
                    return self.real(super::ratio::mul(&a.re, &b.re));
                }
                let re = &a.re * &b.re - &a.im * &b.im;
                let im = &a.re * &b.im + &a.im * &b.re;
                self.cq(re, im)?
            }
            (a, b) => match (a.as_c64(), b.as_c64()) {
                (Some(x), Some(y)) => V::F(x.mul(y)),
                _ => V::Undefined,
            },
        })
    }

    fn div(&mut self, a: V, b: V) -> R<V> {
        Ok(match (a, b) {
            (V::Undefined, _) | (_, V::Undefined) => V::Undefined,
            (V::Inf(_), V::Inf(_)) => V::Undefined,
            (V::Inf(s), o) => match real_sign(&o) {
                Some(0) | None => V::Undefined,
                Some(t) => V::Inf(s * t),
            },
            (_, V::Inf(_)) => q(BigRational::zero()),
            (V::Q(a), V::Q(b)) => {
                self.precharge(&a, &b)?;
                if a.im.is_zero() && b.im.is_zero() {
                    if b.re.is_zero() {
                        return Ok(V::Undefined);
                    }
                    return self.real(super::ratio::div(&a.re, &b.re));
                }
                let d = &b.re * &b.re + &b.im * &b.im;
                if d.is_zero() {
                    return Ok(V::Undefined);
                }
                let re = (&a.re * &b.re + &a.im * &b.im) / &d;
                let im = (&a.im * &b.re - &a.re * &b.im) / &d;
                self.cq(re, im)?
            }
            (a, b) => match (a.as_c64(), b.as_c64()) {
                (Some(x), Some(y)) => x.div(y).map_or(V::Undefined, V::F),
                _ => V::Undefined,
            },
        })
    }

    fn pow(&mut self, b: V, e: V) -> R<V> {
        if matches!(b, V::Undefined) || matches!(e, V::Undefined) {
            return Ok(V::Undefined);
        }
        if let V::Q(ex) = &e {
            if ex.is_real() {
                if ex.re.is_integer() {
                    let k = ex.re.to_integer();
                    if let V::Q(base) = &b {
                        return self.int_pow(base.clone(), &k);
                    }
                } else if let V::Q(base) = &b {
                    // A rational power of a positive rational: exact when
                    // the root is.
                    if base.is_real() && base.re.is_positive() {
                        let den = ex.re.denom().to_u32().unwrap_or(0);
                        if (2..=64).contains(&den) {
                            if let Some(r) = exact_root(&base.re, den) {
                                let k = ex.re.numer().clone();
                                return self.int_pow(
                                    Cq {
                                        re: r,
                                        im: BigRational::zero(),
                                    },
                                    &k,
                                );
                            }
                        }
                    }
                }
            }
        }
        if let V::Inf(_) = b {
            return Ok(match real_sign(&e) {
                Some(1) => b,
                Some(-1) => q(BigRational::zero()),
                _ => V::Undefined,
            });
        }
        // A negative real to a rational power with an odd denominator takes
        // the real root (`x^{2/3}` is `\sqrt[3]{x}^2`), as roots do.
        if let (V::Q(ex), true) = (&e, real_sign(&b) == Some(-1)) {
            if ex.is_real() && !ex.re.is_integer() && ex.re.denom().is_odd() {
                if let (Some(den), Some(num)) = (ex.re.denom().to_u32(), ex.re.numer().to_i64()) {
                    if den <= 1000 && num.unsigned_abs() <= self.limits.max_exponent {
                        let r = self.root(q(BigRational::from_integer(den.into())), b)?;
                        let k = q(BigRational::from_integer(num.into()));
                        return self.pow(r, k);
                    }
                }
            }
        }
        let (Some(x), Some(y)) = (b.as_c64(), e.as_c64()) else {
            return Ok(V::Undefined);
        };
        Ok(V::F(x.pow(y)))
    }

    /// `a mod b` for reals: `a - b floor(a / b)`.
    fn modulo(&mut self, a: V, b: V) -> R<V> {
        if let (V::Q(x), V::Q(y)) = (&a, &b) {
            if x.is_real() && y.is_real() {
                if y.re.is_zero() {
                    return Ok(V::Undefined);
                }
                self.precharge(x, y)?;
                let k = (&x.re / &y.re).floor();
                return self.real(&x.re - &y.re * k);
            }
        }
        match (a.as_c64(), b.as_c64()) {
            (Some(x), Some(y)) if x.im == 0.0 && y.im == 0.0 && y.re != 0.0 => {
                Ok(f(x.re - y.re * (x.re / y.re).floor()))
            }
            _ => Ok(V::Undefined),
        }
    }

    fn int_pow(&mut self, base: Cq, k: &BigInt) -> R<V> {
        let mag = k.abs();
        let Some(m) = mag.to_u64().filter(|m| *m <= self.limits.max_exponent) else {
            return Err(Rejection::OverBudget(format!(
                "an exponent larger than {}",
                self.limits.max_exponent
            )));
        };
        if base.re.is_zero() && base.im.is_zero() {
            return Ok(if k.is_negative() {
                V::Undefined
            } else if m == 0 {
                q(BigRational::one())
            } else {
                q(BigRational::zero())
            });
        }
        let est = (bits(&base.re) + bits(&base.im)).saturating_mul(m);
        if est > self.limits.max_bits {
            return Err(Rejection::OverBudget(format!(
                "a power of more than {} bits",
                self.limits.max_bits
            )));
        }
        let mut acc = q(BigRational::one());
        let mut p = V::Q(base);
        let mut e = m;
        while e > 0 {
            if e & 1 == 1 {
                acc = self.mul(acc, p.clone())?;
            }
            e >>= 1;
            if e > 0 {
                p = self.mul(p.clone(), p)?;
            }
        }
        if k.is_negative() {
            acc = self.div(q(BigRational::one()), acc)?;
        }
        Ok(acc)
    }

    fn root(&mut self, k: V, x: V) -> R<V> {
        let Some(kk) = int_of(&k).and_then(|k| k.to_u32()).filter(|k| *k >= 1) else {
            let inv = self.div(q(BigRational::one()), k)?;
            return self.pow(x, inv);
        };
        if kk > 1000 {
            return Err(Rejection::OverBudget("a root index over 1000".into()));
        }
        if let V::Q(c) = &x {
            if c.is_real() {
                let neg = c.re.is_negative();
                if let Some(r) = exact_root(&c.re.abs(), kk) {
                    if !neg {
                        return Ok(q(r));
                    }
                    if kk % 2 == 1 {
                        return Ok(q(-r));
                    }
                    if kk == 2 {
                        return self.cq(BigRational::zero(), r);
                    }
                }
                let v = to_f64(&c.re);
                if neg && kk % 2 == 1 {
                    return Ok(f(-(-v).powf(1.0 / f64::from(kk))));
                }
                if neg && kk == 2 {
                    return Ok(V::F(C64 {
                        re: 0.0,
                        im: (-v).sqrt(),
                    }));
                }
            }
        }
        if let V::F(c) = &x {
            if c.im == 0.0 && c.re < 0.0 && kk % 2 == 1 {
                return Ok(f(-(-c.re).powf(1.0 / f64::from(kk))));
            }
        }
        let inv = q(BigRational::new(BigInt::one(), BigInt::from(kk)));
        self.pow(x, inv)
    }

    fn factorial(&mut self, x: V) -> R<V> {
        let Some(n) = int_of(&x) else {
            return Ok(V::Undefined);
        };
        if n.is_negative() {
            return Ok(V::Undefined);
        }
        let Some(n) = n.to_u64().filter(|n| *n <= self.limits.max_factorial) else {
            return Err(Rejection::OverBudget(format!(
                "a factorial of more than {}",
                self.limits.max_factorial
            )));
        };
        let mut acc = BigInt::one();
        for i in 2..=n {
            acc *= i;
            if acc.bits() > self.limits.max_bits {
                return Err(Rejection::OverBudget("a factorial too large".into()));
            }
        }
        self.work += acc.bits();
        Ok(q(BigRational::from_integer(acc)))
    }

    fn binom(&mut self, n: V, k: V) -> R<V> {
        let (Some(n), Some(k)) = (int_of(&n), int_of(&k)) else {
            return Ok(V::Undefined);
        };
        if k.is_negative() || n.is_negative() || k > n {
            return Ok(q(BigRational::zero()));
        }
        let k = std::cmp::min(k.clone(), &n - &k);
        let Some(kk) = k.to_u64().filter(|k| *k <= self.limits.max_factorial) else {
            return Err(Rejection::OverBudget("a binomial too large".into()));
        };
        let mut acc = BigInt::one();
        for i in 0..kk {
            acc = acc * (&n - i) / (i + 1);
            if acc.bits() > self.limits.max_bits {
                return Err(Rejection::OverBudget("a binomial too large".into()));
            }
        }
        Ok(q(BigRational::from_integer(acc)))
    }

    fn func(&mut self, func: Func, x: V) -> V {
        if let (Func::Abs, V::Q(c)) = (func, &x) {
            if c.is_real() {
                return q(c.re.abs());
            }
        }
        if let (Func::Floor | Func::Ceil, V::Q(c)) = (func, &x) {
            if c.is_real() {
                return q(if func == Func::Floor {
                    c.re.floor()
                } else {
                    c.re.ceil()
                });
            }
        }
        if let (Func::Exp, V::Q(c)) = (func, &x) {
            if c.re.is_zero() && c.im.is_zero() {
                return q(BigRational::one());
            }
        }
        if let (Func::Ln, V::Q(c)) = (func, &x) {
            if c.is_real() && c.re.is_one() {
                return q(BigRational::zero());
            }
        }
        let Some(c) = x.as_c64() else {
            return V::Undefined;
        };
        if func == Func::Abs {
            return f(c.abs());
        }
        if func == Func::Exp {
            return V::F(c.exp());
        }
        if func == Func::Ln {
            if c.re == 0.0 && c.im == 0.0 {
                return V::Undefined;
            }
            return V::F(c.ln());
        }
        if c.im != 0.0 {
            return V::Undefined;
        }
        let v = c.re;
        let r = match func {
            Func::Sin => v.sin(),
            Func::Cos => v.cos(),
            Func::Tan => v.tan(),
            Func::Sec => 1.0 / v.cos(),
            Func::Csc => 1.0 / v.sin(),
            Func::Cot => 1.0 / v.tan(),
            Func::Asin => v.asin(),
            Func::Acos => v.acos(),
            Func::Atan => v.atan(),
            Func::Sinh => v.sinh(),
            Func::Cosh => v.cosh(),
            Func::Tanh => v.tanh(),
            Func::Floor => v.floor(),
            Func::Ceil => v.ceil(),
            _ => f64::NAN,
        };
        f(r)
    }

    fn log(&mut self, b: V, x: V) -> R<V> {
        if let (V::Q(bq), V::Q(xq)) = (&b, &x) {
            if bq.is_real() && xq.is_real() && bq.re.is_positive() && xq.re.is_positive() {
                let k = (to_f64(&xq.re).ln() / to_f64(&bq.re).ln()).round();
                if k.is_finite() && k.abs() <= 4096.0 {
                    if let V::Q(p) = self.int_pow(bq.clone(), &BigInt::from(k as i64))? {
                        if p.re == xq.re {
                            return Ok(q(BigRational::from_integer(BigInt::from(k as i64))));
                        }
                    }
                }
            }
        }
        let (Some(bc), Some(xc)) = (b.as_c64(), x.as_c64()) else {
            return Ok(V::Undefined);
        };
        Ok(xc.ln().div(bc.ln()).map_or(V::Undefined, V::F))
    }
}

fn real_sign(v: &V) -> Option<i8> {
    match v {
        V::Q(c) if c.is_real() => Some(if c.re.is_positive() {
            1
        } else if c.re.is_negative() {
            -1
        } else {
            0
        }),
        V::F(c) if c.im == 0.0 => Some(if c.re > 0.0 {
            1
        } else if c.re < 0.0 {
            -1
        } else {
            0
        }),
        V::Inf(s) => Some(*s),
        _ => None,
    }
}

pub(crate) fn int_of(v: &V) -> Option<BigInt> {
    match v {
        V::Q(c) if c.is_real() && c.re.is_integer() => Some(c.re.to_integer()),
        _ => None,
    }
}

/// The exact k-th root of a non-negative rational, if there is one.
fn exact_root(r: &BigRational, k: u32) -> Option<BigRational> {
    if r.is_negative() {
        return None;
    }
    let n = r.numer().nth_root(k);
    let d = r.denom().nth_root(k);
    if num_traits::pow(n.clone(), k as usize) == *r.numer()
        && num_traits::pow(d.clone(), k as usize) == *r.denom()
    {
        Some(super::ratio::new(n, d))
    } else {
        None
    }
}

/// The value of an unknown function or indexed name at its arguments: a
/// deterministic pseudo-random integer, so that `F_k F_{n-k}` and
/// `F_{n-k} F_k` agree and `f(x)` and `f(y)` do not.
fn pseudo(name: &str, args: &[V]) -> V {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x100_0000_01b3);
        }
    };
    feed(name.as_bytes());
    for a in args {
        feed(b"|");
        let key = match a {
            V::Q(c) => format!("{}/{}", c.re, c.im),
            V::F(c) => format!("{:.9e}/{:.9e}", c.re, c.im),
            V::Inf(s) => format!("inf{s}"),
            V::Undefined => return V::Undefined,
        };
        feed(key.as_bytes());
    }
    q(BigRational::from_integer(BigInt::from(
        3 + (h % 997) as i64,
    )))
}
