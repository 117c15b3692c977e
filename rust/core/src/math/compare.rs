//! Deciding whether two parsed answers are the same answer.
//!
//! Scalars are compared by value. Polynomials and rational functions of the
//! variables compare exactly by canonical form ([`super::poly`]); other
//! expressions in variables are evaluated at five points drawn from a
//! generator seeded by a hash of both answers, so no expression can be built
//! to vanish at them. Rational values compare exactly; a decimal against a
//! value with no terminating expansion, or anything irrational, compares
//! within a relative tolerance (the caller's `rel_tol` when a decimal is
//! involved, 1e-9 otherwise). Structures compare element by element, sets
//! and bare lists without regard to order.

use std::collections::BTreeSet;

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Signed, Zero};

use super::ast::{Func, Node, RelOp, FLOAT};
use super::display::render;
use super::eval::{Cq, Evaluator, C64, V};
use super::parser::normalize_text;
use super::poly::{self, Rat};
use super::{exact, quick, real};
use super::{CompareOptions, Limits, Rejection};

type R<T> = Result<T, Rejection>;

/// Points at which expressions in variables are sampled when no exact
/// canonical form decides (see [`bind`]).
const SAMPLE_POINTS: usize = 5;

/// What a comparison learns about a constant gold that the next comparison
/// with the same gold reuses (see [`Cmp::with_memo`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct Memo {
    form: std::cell::OnceCell<Option<exact::Frac>>,
    ball: std::cell::OnceCell<Option<real::Ball>>,
    value: std::cell::OnceCell<R<V>>,
    /// Verdicts against answers already compared with this gold, under the
    /// options of the first comparison: the completions of a group often
    /// end in the same answer.
    verdicts: std::cell::RefCell<Vec<(Node, bool)>>,
    verdict_opts: std::cell::OnceCell<CompareOptions>,
}

/// How many verdicts a gold keeps (a group of completions rarely has more
/// distinct answers worth remembering).
const MEMO_VERDICTS: usize = 8;

impl Memo {
    /// The verdict already reached for `pred` under `opts`.
    pub(crate) fn verdict(&self, pred: &Node, opts: &CompareOptions) -> Option<bool> {
        if self.verdict_opts.get() != Some(opts) {
            return None;
        }
        let v = self.verdicts.borrow();
        v.iter().find(|(n, _)| n == pred).map(|&(_, b)| b)
    }

    /// Remember the verdict for `pred` (options other than the first
    /// comparison's are not remembered).
    pub(crate) fn remember(&self, pred: &Node, opts: &CompareOptions, verdict: bool) {
        if self.verdict_opts.get_or_init(|| opts.clone()) != opts {
            return;
        }
        let mut v = self.verdicts.borrow_mut();
        if v.len() < MEMO_VERDICTS {
            v.push((pred.clone(), verdict));
        }
    }
}

/// The budgets a comparison has spent (see [`Cmp::after`]).
#[derive(Clone, Copy, Default)]
pub(crate) struct Spent {
    calls: u64,
    cheap: u64,
    pub(crate) work: u64,
}

pub(crate) struct Cmp<'a> {
    opts: &'a CompareOptions,
    /// The gold's memo, for the comparisons of the gold itself (the root
    /// of `roots.0`) as a constant.
    memo: Option<&'a Memo>,
    /// The two answers being compared: the sample points are drawn from a
    /// hash of both, so no expression can be built to vanish at them.
    roots: (&'a Node, &'a Node),
    seed: std::cell::Cell<Option<u64>>,
    calls: std::cell::Cell<u64>,
    cheap: std::cell::Cell<u64>,
    /// Units of exact arithmetic spent so far (see [`super::Limits::max_work`]).
    work: std::cell::Cell<u64>,
}

impl<'a> Cmp<'a> {
    /// A comparison of `roots` with its budgets unspent.
    pub(crate) fn new(opts: &'a CompareOptions, roots: (&'a Node, &'a Node)) -> Self {
        Cmp {
            opts,
            memo: None,
            roots,
            seed: std::cell::Cell::new(None),
            calls: std::cell::Cell::new(0),
            cheap: std::cell::Cell::new(0),
            work: std::cell::Cell::new(0),
        }
    }
}

impl<'a> Cmp<'a> {
    /// Reuse (and fill) `memo` for the gold's root node.
    pub(crate) fn with_memo(mut self, memo: &'a Memo) -> Self {
        self.memo = Some(memo);
        self
    }

    /// Continue from what earlier comparisons of the same pair spent (the
    /// forms of one answer share one budget: `super::compare`).
    pub(crate) fn after(self, spent: Spent) -> Self {
        self.calls.set(spent.calls);
        self.cheap.set(spent.cheap);
        self.work.set(spent.work);
        self
    }

    /// What this comparison has spent so far (see [`Cmp::after`]).
    pub(crate) fn spent(&self) -> Spent {
        Spent {
            calls: self.calls.get(),
            cheap: self.cheap.get(),
            work: self.work.get(),
        }
    }

    /// The memo when `n` is the gold's root node.
    fn memo_of(&self, n: &Node) -> Option<&'a Memo> {
        self.memo.filter(|_| std::ptr::eq(n, self.roots.0))
    }
}

fn singleton(n: &Node) -> &Node {
    match n {
        Node::List(v) if v.len() == 1 => singleton(&v[0]),
        _ => n,
    }
}

fn is_constant(n: &Node) -> bool {
    free_symbols(n).is_empty()
}

pub(crate) fn free_symbols(n: &Node) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    n.walk(&mut |m| {
        if let Node::Sym(s) = m {
            if !matches!(s.as_str(), "e" | "i" | "pi") {
                out.insert(s.clone());
            }
        }
        if let Node::Indexed(s, _) | Node::Apply(s, _) = m {
            out.insert(format!("{s}()"));
        }
    });
    out
}

/// A name rather than a quantity: `x`, `a_3`, `f(x)`, `|AB|`, `NO/BO`, `(p,q)`.
fn label_like(n: &Node) -> bool {
    match n {
        Node::Sym(s) => !matches!(s.as_str(), "e" | "i" | "pi"),
        Node::Indexed(..) | Node::Apply(..) => true,
        Node::Mul(v) | Node::Tuple(v) => !v.is_empty() && v.iter().all(label_like),
        Node::Div(a, b) => label_like(a) && label_like(b),
        Node::Func(_, a) => label_like(a),
        _ => false,
    }
}

/// Direction-normalised chain: `a > b` becomes `b < a`.
fn normalize_chain(items: &[Node], ops: &[RelOp]) -> (Vec<Node>, Vec<RelOp>) {
    if !ops.is_empty() && ops.iter().all(|o| matches!(o, RelOp::Gt | RelOp::Ge)) {
        let items: Vec<Node> = items.iter().rev().cloned().collect();
        let ops = ops
            .iter()
            .rev()
            .map(|o| {
                if *o == RelOp::Gt {
                    RelOp::Lt
                } else {
                    RelOp::Le
                }
            })
            .collect();
        (items, ops)
    } else {
        (items.to_vec(), ops.to_vec())
    }
}

/// `x = 5`, `x = 2+3 = 5`, `|AB| = 1`: the value assigned, when every
/// earlier element is a name or a constant; and the result of a calculation
/// chain whose sides after the first are constants (`a + b + c = 4 + 5 + 1 =
/// 10` answers 10; a single equation `x + 2 = 10` is no such chain).
fn assignment(items: &[Node], ops: &[RelOp]) -> Option<(Node, Node)> {
    if items.len() < 2 || !ops.iter().all(|o| *o == RelOp::Eq) {
        return None;
    }
    let (last, rest) = items.split_last()?;
    if items.len() >= 3 && items[1..].iter().all(is_constant) && !items[0].is_structure() {
        return Some((items[0].clone(), last.clone()));
    }
    if !rest.iter().all(|n| label_like(n) || is_constant(n)) {
        return None;
    }
    // A chain of constants (`\frac12 = \frac{10}{9}`, a calculation) ends in
    // its result.
    let label = match rest.iter().find(|n| label_like(n)) {
        Some(l) => l,
        None if is_constant(last) => &rest[0],
        None => return None,
    };
    Some((label.clone(), last.clone()))
}

/// An inequality on one name as the interval it describes (or, for
/// `a \le |x| \le b` with `0 < a`, the union `[-b, -a] \cup [a, b]`).
fn as_interval(items: &[Node], ops: &[RelOp]) -> Option<Node> {
    let (items, ops) = normalize_chain(items, ops);
    if let ([a, Node::Func(Func::Abs, x), b], [o1, o2]) = (items.as_slice(), ops.as_slice()) {
        let positive = |n: &Node| {
            let limits = Limits::default();
            let mut ev = Evaluator::new(&limits);
            matches!(ev.eval(n), Ok(V::Q(c)) if c.im.is_zero() && c.re.is_positive())
        };
        if label_like(x) && is_constant(a) && is_constant(b) && positive(a) {
            let c1 = matches!(o1, RelOp::Le);
            let c2 = matches!(o2, RelOp::Le);
            if !matches!(o1, RelOp::Le | RelOp::Lt) || !matches!(o2, RelOp::Le | RelOp::Lt) {
                return None;
            }
            let neg = |n: &Node| Box::new(Node::Neg(Box::new(n.clone())));
            return Some(Node::Union(vec![
                Node::Interval(neg(b), neg(a), c2, c1),
                Node::Interval(Box::new(a.clone()), Box::new(b.clone()), c1, c2),
            ]));
        }
    }
    let closed = |o: RelOp| match o {
        RelOp::Le => Some(true),
        RelOp::Lt => Some(false),
        _ => None,
    };
    match (items.as_slice(), ops.as_slice()) {
        ([a, x, b], [o1, o2]) if label_like(x) && is_constant(a) && is_constant(b) => {
            Some(Node::Interval(
                Box::new(a.clone()),
                Box::new(b.clone()),
                closed(*o1)?,
                closed(*o2)?,
            ))
        }
        ([x, b], [o]) if label_like(x) && is_constant(b) => Some(Node::Interval(
            Box::new(Node::Neg(Box::new(Node::Inf))),
            Box::new(b.clone()),
            false,
            closed(*o)?,
        )),
        ([a, x], [o]) if label_like(x) && is_constant(a) => Some(Node::Interval(
            Box::new(a.clone()),
            Box::new(Node::Inf),
            closed(*o)?,
            false,
        )),
        _ => None,
    }
}

/// `f(x)`, `g(t)` (a function of variables) as `y`; anything else as is.
fn function_as_y(n: &Node) -> Node {
    match n {
        Node::Apply(_, args)
            if !args.is_empty() && args.iter().all(|a| matches!(a, Node::Sym(_))) =>
        {
            Node::Sym("y".into())
        }
        other => other.clone(),
    }
}

/// `\{1, 3\} \cup \{2, 4\}` as `\{1, 3, 2, 4\}`; `None` unless `n` is a
/// union of finite sets.
fn finite_union(n: &Node) -> Option<Node> {
    match n {
        Node::Union(v) if v.len() > 1 && v.iter().all(|x| matches!(x, Node::Set(_))) => {
            let items = v.iter().flat_map(|x| match x {
                Node::Set(items) => items.clone(),
                _ => Vec::new(),
            });
            Some(Node::Set(items.collect()))
        }
        _ => None,
    }
}

fn set_like(n: &Node) -> bool {
    matches!(n, Node::Interval(..) | Node::Union(_) | Node::Set(_))
        || matches!(n, Node::Tuple(v) if v.len() == 2)
}

impl Cmp<'_> {
    pub(crate) fn equiv(&self, g: &Node, p: &Node) -> R<bool> {
        self.count(1)?;
        let g = singleton(g);
        let p = singleton(p);
        match (g, p) {
            (Node::Text(a), Node::Text(b)) => return Ok(a == b),
            (Node::Text(a), o) | (o, Node::Text(a)) => {
                return Ok(!o.is_structure() && normalize_text(&render(o)) == *a)
            }
            (Node::Ellipsis, Node::Ellipsis) => return Ok(true),
            (Node::Ellipsis, _) | (_, Node::Ellipsis) => return Ok(false),
            _ => {}
        }
        // A list whose elements are all the same value is that value
        // (the same answer boxed twice).
        let list = |n: &Node| matches!(n, Node::List(_) | Node::Set(_));
        let list = |n: &Node| list(n) || matches!(n, Node::Tuple(_));
        if let (Node::List(v), false) = (g, list(p)) {
            if self.all_same(v)? {
                return self.equiv(&v[0], p);
            }
        }
        if let (false, Node::List(v)) = (list(g), p) {
            if self.all_same(v)? {
                return self.equiv(g, &v[0]);
            }
        }
        // A union of finite sets is the set of all their elements.
        if let Some(g) = finite_union(g) {
            return self.equiv(&g, p);
        }
        if let Some(p) = finite_union(p) {
            return self.equiv(g, &p);
        }
        if let Node::Rel(items, ops) = g {
            return self.rel_gold(items, ops, p);
        }
        if let Node::Rel(items, ops) = p {
            if ops.as_slice() == [RelOp::In] {
                return self.equiv(g, &items[1]);
            }
            if let Some((_, value)) = assignment(items, ops) {
                return self.equiv(g, &value);
            }
            // An inequality is the set it describes: `2 \le x \le 5` = `[2, 5]`
            // (a pair `(2, 5)` is read as an interval only when asked, or when
            // an end is infinite: `(2, \infty)`).
            let infinite = |n: &Node| {
                matches!(n, Node::Inf) || matches!(n, Node::Neg(x) if matches!(**x, Node::Inf))
            };
            let pair = matches!(g, Node::Tuple(v) if !v.iter().any(infinite));
            if set_like(g) && (!pair || self.opts.allow_set_relation_comp) {
                if let Some(iv) = as_interval(items, ops) {
                    return self.equiv(g, &iv);
                }
            }
            return Ok(false);
        }
        match (g, p) {
            (Node::List(a) | Node::Set(a), Node::List(b) | Node::Set(b)) => self.unordered(a, b),
            // A set is no tuple: `\{2, 1\}` does not answer the point
            // `(1, 2)`, nor `(1, 2)` the set `\{1, 2\}`.
            (Node::Set(_), Node::Tuple(_)) | (Node::Tuple(_), Node::Set(_)) => Ok(false),
            (Node::Tuple(a) | Node::List(a), Node::Tuple(b) | Node::List(b)) => self.ordered(a, b),
            (Node::Interval(a1, b1, l1, r1), Node::Interval(a2, b2, l2, r2)) => {
                Ok(l1 == l2 && r1 == r2 && self.equiv(a1, a2)? && self.equiv(b1, b2)?)
            }
            (Node::Interval(a1, b1, false, false), Node::Tuple(v))
            | (Node::Tuple(v), Node::Interval(a1, b1, false, false))
                if v.len() == 2 =>
            {
                Ok(self.equiv(a1, &v[0])? && self.equiv(b1, &v[1])?)
            }
            (Node::Union(a), Node::Union(b)) => self.unordered(a, b),
            (Node::Union(a), o) | (o, Node::Union(a)) if a.len() == 1 => self.equiv(&a[0], o),
            (Node::Matrix(a), Node::Matrix(b)) => {
                if a.len() != b.len() || a.iter().zip(b).any(|(x, y)| x.len() != y.len()) {
                    return Ok(false);
                }
                for (x, y) in a.iter().flatten().zip(b.iter().flatten()) {
                    if !self.equiv(x, y)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            (Node::Matrix(m), Node::Tuple(v)) | (Node::Tuple(v), Node::Matrix(m)) => {
                self.vector(m, v)
            }
            // Against a vector, `[0.5, 1]` is the list of its entries (an
            // interval is no vector).
            (Node::Matrix(m), Node::Interval(a, b, true, true))
            | (Node::Interval(a, b, true, true), Node::Matrix(m)) => {
                self.vector(m, &[(**a).clone(), (**b).clone()])
            }
            (a, b) if a.is_structure() || b.is_structure() => Ok(false),
            (a, b) => self.scalar(a, b),
        }
    }

    /// A row or column matrix against the ordered entries of a tuple.
    fn vector(&self, m: &[Vec<Node>], v: &[Node]) -> R<bool> {
        if m.len() == 1 || m.iter().all(|r| r.len() == 1) {
            let flat: Vec<Node> = m.iter().flatten().cloned().collect();
            self.ordered(&flat, v)
        } else {
            Ok(false)
        }
    }

    fn rel_gold(&self, items: &[Node], ops: &[RelOp], p: &Node) -> R<bool> {
        if ops == [RelOp::In] {
            if let Node::Rel(pi, po) = p {
                if po.as_slice() == [RelOp::In] {
                    return self.equiv(&items[1], &pi[1]);
                }
            }
            return self.equiv(&items[1], p);
        }
        let gassign = assignment(items, ops);
        if let Node::Rel(pitems, pops) = p {
            if pops.as_slice() == [RelOp::In] {
                return match as_interval(items, ops) {
                    Some(iv) => self.equiv(&iv, &pitems[1]),
                    None => Ok(false),
                };
            }
            if let (Some((gl, gv)), Some((pl, pv))) = (&gassign, assignment(pitems, pops)) {
                if is_constant(gv) && is_constant(&pv) {
                    // When both name what they assign, the names must agree:
                    // `\sin x = \frac{42}{59}` is not `\cos x = \frac{42}{59}`.
                    if label_like(gl) && label_like(&pl) && !self.same_name(gl, &pl)? {
                        return Ok(false);
                    }
                    return self.equiv(gv, &pv);
                }
            }
            return self.relations(items, ops, pitems, pops);
        }
        if let Some((_, value)) = gassign {
            return self.equiv(&value, p);
        }
        if set_like(p) {
            if let Some(iv) = as_interval(items, ops) {
                return self.equiv(&iv, p);
            }
        }
        Ok(false)
    }

    /// Whether two names on the left of relations name the same thing. A
    /// function's name (`f(x)`) names the same thing as `y`.
    fn same_name(&self, a: &Node, b: &Node) -> R<bool> {
        let (a, b) = (function_as_y(a), function_as_y(b));
        Ok(a == b || self.equiv(&a, &b)?)
    }

    /// Two relations are the same when each side's `lhs - rhs` is a constant
    /// multiple of the other's (positive for inequalities).
    fn relations(&self, gi: &[Node], go: &[RelOp], pi: &[Node], po: &[RelOp]) -> R<bool> {
        let (mut gi, go) = normalize_chain(gi, go);
        let (mut pi, po) = normalize_chain(pi, po);
        // `f(x) = 2x + 3` is `y = 2x + 3`.
        for items in [&mut gi, &mut pi] {
            if items.len() == 2 {
                items[0] = function_as_y(&items[0]);
            }
        }
        let all_eq = |o: &[RelOp]| o.iter().all(|x| *x == RelOp::Eq);
        if all_eq(&go) && all_eq(&po) {
            let dg = diff(&gi[0], &gi[gi.len() - 1]);
            let dp = diff(&pi[0], &pi[pi.len() - 1]);
            return self.proportional(&dg, &dp, false);
        }
        if go != po || gi.len() != pi.len() {
            return Ok(false);
        }
        let positive = !go[0].symmetric();
        for k in 0..go.len() {
            let dg = diff(&gi[k], &gi[k + 1]);
            let dp = diff(&pi[k], &pi[k + 1]);
            if !self.proportional(&dg, &dp, positive)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn proportional(&self, a: &Node, b: &Node, positive: bool) -> R<bool> {
        let syms = symbols_of(&[a, b]);
        if !syms.is_empty() {
            if let Some((ra, rb, mut ctx)) = self.rats(a, b, &syms) {
                let r = ctx.proportional(&ra, &rb, positive);
                self.work.set(ctx.work);
                if let Some(v) = r {
                    return Ok(v);
                }
            }
        }
        // Canonical forms decide when no opaque function of a variable
        // stands in the way.
        if let (Some(fa), Some(fb)) = (self.form(a, &syms, None), self.form(b, &syms, None)) {
            let r = self.exact(&syms, None, |ex| ex.proportional(&fa, &fb, positive));
            match r {
                Some(true) => return Ok(true),
                Some(false) if !fa.has_var_atom() && !fb.has_var_atom() => return Ok(false),
                _ => {}
            }
        }
        if syms.is_empty() {
            return Ok(false);
        }
        // Sampled: the ratio must be one constant at every point, exactly.
        let ints = integer_symbols(&[a, b]);
        let mut ratio: Option<exact::Frac> = None;
        for point in 0..SAMPLE_POINTS {
            let vals = self.point_values(&syms, &ints, point);
            let (Some(fa), Some(fb)) = (
                self.form(a, &syms, Some(&vals)),
                self.form(b, &syms, Some(&vals)),
            ) else {
                return Ok(false);
            };
            let r = self.exact(&syms, Some(&vals), |ex| {
                let za = ex.is_zero(&fa);
                let zb = ex.is_zero(&fb);
                match (za, zb) {
                    (true, true) => return Some(Step::Skip),
                    (false, false) => {}
                    _ => return Some(Step::Differ),
                }
                let q = ex.quotient(&fa, &fb)?;
                if positive && !ex.positive_constant(&q) {
                    return Some(Step::Differ);
                }
                match &ratio {
                    None => Some(Step::Ratio(q)),
                    Some(r0) => Some(if ex.equal(r0, &q)? {
                        Step::Skip
                    } else {
                        Step::Differ
                    }),
                }
            });
            match r {
                Some(Step::Skip) => {}
                Some(Step::Ratio(q)) => ratio = Some(q),
                Some(Step::Differ) | None => return Ok(false),
            }
        }
        Ok(true)
    }

    fn ordered(&self, a: &[Node], b: &[Node]) -> R<bool> {
        if a.len() != b.len() {
            return Ok(false);
        }
        for (x, y) in a.iter().zip(b) {
            if !self.equiv(x, y)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn all_same(&self, v: &[Node]) -> R<bool> {
        for n in v.iter().skip(1) {
            if !self.equiv(&v[0], n)? {
                return Ok(false);
            }
        }
        Ok(!v.is_empty())
    }

    fn dedup<'n>(&self, v: &'n [Node]) -> R<Vec<&'n Node>> {
        let mut out: Vec<&Node> = Vec::new();
        for n in v {
            let mut dup = false;
            for m in &out {
                if self.equiv(m, n)? {
                    dup = true;
                    break;
                }
            }
            if !dup {
                out.push(n);
            }
        }
        Ok(out)
    }

    /// The same elements, in any order, duplicates ignored.
    fn unordered(&self, a: &[Node], b: &[Node]) -> R<bool> {
        if a.iter().chain(b).all(|n| components(n).is_some()) {
            return self.unordered_scalars(a, b);
        }
        let a = self.dedup(a)?;
        let b = self.dedup(b)?;
        if a.len() != b.len() {
            return Ok(false);
        }
        let mut used = vec![false; b.len()];
        for x in &a {
            let mut found = false;
            for (j, y) in b.iter().enumerate() {
                if !used[j] && self.equiv(x, y)? {
                    used[j] = true;
                    found = true;
                    break;
                }
            }
            if !found {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// [`Cmp::unordered`] for lists of scalars or tuples of scalars: each
    /// component is evaluated once at the shared sample points, then the
    /// samples are compared, so a long list costs n evaluations, not n².
    fn unordered_scalars(&self, a: &[Node], b: &[Node]) -> R<bool> {
        let all: Vec<&Node> = a
            .iter()
            .chain(b)
            .flat_map(|n| components(n).unwrap_or_default())
            .collect();
        let syms = symbols_of(&all);
        let no_syms = syms.is_empty();
        let sample = |n| self.sample_element(n, no_syms);
        let sa = a.iter().map(sample).collect::<R<Vec<_>>>()?;
        let sb = b.iter().map(sample).collect::<R<Vec<_>>>()?;
        let same = |x: &Sampled<'_>, y: &Sampled<'_>| -> R<bool> {
            self.count_cheap()?;
            if x.0 != y.0 || x.1.len() != y.1.len() {
                return Ok(false);
            }
            for (p, q) in x.1.iter().zip(&y.1) {
                // Rational constants compare on their values; anything else
                // (an irrational value, an expression) in full.
                let rational = no_syms && matches!((&p.1[0], &q.1[0]), (V::Q(_), V::Q(_)));
                let equal = if rational {
                    precision_match(p.0, &p.1[0], q.0, &q.1[0], self) == Some(true)
                        || self.values_equal(&p.1[0], &q.1[0], p.2, q.2)
                } else {
                    self.count(1)?;
                    self.scalar(p.0, q.0)?
                };
                if !equal {
                    return Ok(false);
                }
            }
            Ok(true)
        };
        let dedup = |v: &[Sampled<'_>]| -> R<Vec<usize>> {
            let mut keep: Vec<usize> = Vec::new();
            for (i, x) in v.iter().enumerate() {
                let mut dup = false;
                for &k in &keep {
                    if same(&v[k], x)? {
                        dup = true;
                        break;
                    }
                }
                if !dup {
                    keep.push(i);
                }
            }
            Ok(keep)
        };
        let (ka, kb) = (dedup(&sa)?, dedup(&sb)?);
        if ka.len() != kb.len() {
            return Ok(false);
        }
        let mut used = vec![false; kb.len()];
        for &i in &ka {
            let mut found = false;
            for (j, &k) in kb.iter().enumerate() {
                if !used[j] && same(&sa[i], &sb[k])? {
                    used[j] = true;
                    found = true;
                    break;
                }
            }
            if !found {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// An element's components with their values (constants only; an
    /// expression in variables is compared in full, its value left undefined).
    fn sample_element<'n>(&self, n: &'n Node, constants: bool) -> R<Sampled<'n>> {
        let tuple = matches!(n, Node::Tuple(_));
        let mut parts = Vec::new();
        for c in components(n).unwrap_or_default() {
            self.count(1)?;
            let v = if constants {
                self.value(c)?
            } else {
                V::Undefined
            };
            parts.push((c, vec![v], c.has_decimal()));
        }
        Ok((tuple, parts))
    }

    /// An evaluator drawing on this comparison's one work budget.
    fn evaluator(&self) -> Evaluator<'_> {
        let mut ev = Evaluator::new(&self.opts.limits);
        ev.work = self.work.get();
        ev
    }

    fn count(&self, n: u64) -> R<()> {
        let calls = self.calls.get() + n;
        self.calls.set(calls);
        if calls > self.opts.limits.max_comparisons {
            return Err(Rejection::OverBudget(format!(
                "more than {} element comparisons",
                self.opts.limits.max_comparisons
            )));
        }
        Ok(())
    }

    /// Comparing two samples costs a sixteenth of a full comparison.
    fn count_cheap(&self) -> R<()> {
        let cheap = self.cheap.get() + 1;
        self.cheap.set(cheap);
        if cheap % 16 == 0 {
            self.count(1)?;
        }
        Ok(())
    }

    fn scalar(&self, g: &Node, p: &Node) -> R<bool> {
        // A percentage matches its number and its fraction, whichever side
        // carries the sign: 10% = 10 = 0.1.
        let number = match (g, p) {
            (Node::Percent(x), o) if !matches!(o, Node::Percent(_)) => Some((&**x, o)),
            (o, Node::Percent(x)) if !matches!(o, Node::Percent(_)) => Some((o, &**x)),
            _ => None,
        };
        if let Some((a, b)) = number {
            if self.scalar_values(a, b)? {
                return Ok(true);
            }
        }
        self.scalar_values(g, p)
    }

    pub(crate) fn scalar_values(&self, g: &Node, p: &Node) -> R<bool> {
        let syms = symbols_of(&[g, p]);
        if !syms.is_empty() {
            return self.expressions(g, p, &syms);
        }
        let (dg, dp) = (g.has_decimal(), p.has_decimal());
        if g == p {
            // The same constant: equal wherever it is defined.
            return Ok(!matches!(self.value(g)?, V::Undefined));
        }
        // Machine-float enclosures that do not meet: two different values,
        // told apart before any exact arithmetic (most wrong answers).
        if quick::apart(g, p, dg || dp, self.opts.rel_tol) {
            return Ok(false);
        }
        // Two monomials (`5\sqrt2`, `\frac{3\pi}{7}`): equal exactly when
        // their forms in machine integers are.
        if !dg && !dp {
            if let Some(same) = quick::monomials_equal(g, p) {
                return Ok(same);
            }
        }
        let mut vg = self.value(g)?;
        let mut vp = self.value(p)?;
        let rational = |v: &V| matches!(v, V::Q(_));
        let (mut fg, mut fp) = (None, None);
        if !rational(&vg) || !rational(&vp) {
            match (&vg, &vp) {
                (V::Undefined, _) | (_, V::Undefined) => return Ok(false),
                (V::Inf(a), V::Inf(b)) => return Ok(a == b),
                (V::Inf(_), _) | (_, V::Inf(_)) => return Ok(false),
                _ => {}
            }
            // Canonical forms; one that is rational stands for its exact
            // value (`\sin\frac{\pi}{6}` is 1/2). The same form is the
            // same value: decided before any enclosure is computed (an
            // enclosure of `10^{\frac{\sqrt{13}-5}{6}}` costs far more).
            fg = self.constant_form(g);
            fp = self.constant_form(p);
            if !dg && !dp {
                if let (Some(a), Some(b)) = (&fg, &fp) {
                    if a == b {
                        return Ok(true);
                    }
                }
            }
            // Two real values whose enclosures are apart differ: the cheap
            // way out for wrong answers the quick check left.
            if !dg && !dp && self.apart(g, &vg, p, &vp) {
                return Ok(false);
            }
            for (f, v) in [(&fg, &mut vg), (&fp, &mut vp)] {
                if let Some(q) = f.as_ref().and_then(exact::Frac::as_rational) {
                    *v = V::Q(Cq {
                        re: q,
                        im: BigRational::zero(),
                    });
                }
            }
        }
        if precision_match(g, &vg, p, &vp, self) == Some(true) {
            return Ok(true);
        }
        if rational(&vg) && rational(&vp) {
            return Ok(self.values_equal(&vg, &vp, dg, dp));
        }
        if (dg || dp) && self.within_tolerance(g, &vg, p, &vp) == Some(true) {
            return Ok(true);
        }
        match (&fg, &fp) {
            (Some(a), Some(b)) => match self.exact(&syms, None, |ex| ex.equal(a, b)) {
                Some(v) => Ok(v),
                None => self.undecided(g, p),
            },
            _ => self.undecided(g, p),
        }
    }

    /// Two constants whose canonical forms could not be built or compared
    /// within the budget: the same expression is the same answer; anything
    /// else is over budget.
    fn undecided(&self, g: &Node, p: &Node) -> R<bool> {
        if g == p {
            return Ok(true);
        }
        if self.work.get() >= self.opts.limits.max_work / 2 {
            return Err(Rejection::OverBudget(
                "values too large to compare exactly".into(),
            ));
        }
        Ok(false)
    }

    /// Two expressions in variables. Polynomials and rational functions, and
    /// every expression whose canonical form has no opaque function of a
    /// variable, are decided by their forms. Otherwise the two are compared
    /// at sample points, exactly at each point; a piecewise function of a
    /// variable (`\lfloor x \rfloor`, `|x - 500|`) must then appear on both
    /// sides alike, since no set of points can tell it apart from a smooth
    /// one.
    fn expressions(&self, g: &Node, p: &Node, syms: &[String]) -> R<bool> {
        let ints = integer_symbols(&[g, p]);
        if g == p {
            // The same expression: equal wherever it is defined, as the
            // points below would find; one point where it is suffices.
            let vals = self.point_values(syms, &ints, 0);
            if self.form(g, syms, Some(&vals)).is_some() {
                return Ok(true);
            }
        }
        if let Some(v) = self.poly_equal(g, p, syms) {
            return Ok(v);
        }
        let (fg, fp) = (self.form(g, syms, None), self.form(p, syms, None));
        if let (Some(a), Some(b)) = (&fg, &fp) {
            if self.exact(syms, None, |ex| ex.equal(a, b)) == Some(true) {
                return Ok(true);
            }
            if !a.has_var_atom() && !b.has_var_atom() {
                return Ok(false);
            }
            let (mut pa, mut pb) = (Vec::new(), Vec::new());
            a.piecewise_atoms(&mut pa);
            b.piecewise_atoms(&mut pb);
            pa.sort();
            pa.dedup();
            pb.sort();
            pb.dedup();
            if pa != pb {
                return Ok(false);
            }
        }
        let mut defined = 0;
        let far = far_magnitude(&[g, p]);
        for point in 0..SAMPLE_POINTS + 2 {
            let vals = if point < SAMPLE_POINTS {
                self.point_values(syms, &ints, point)
            } else {
                self.far_values(syms, &ints, &far, point == SAMPLE_POINTS)
            };
            match (
                self.form(g, syms, Some(&vals)),
                self.form(p, syms, Some(&vals)),
            ) {
                // Undefined on both sides: the point says nothing.
                (None, None) => {}
                (Some(a), Some(b)) => {
                    if self.exact(syms, Some(&vals), |ex| ex.equal(&a, &b)) != Some(true) {
                        return Ok(false);
                    }
                    defined += 1;
                }
                // Beyond the ordinary points, a value too large to build
                // says nothing either.
                _ if point >= SAMPLE_POINTS => {}
                _ => return Ok(false),
            }
        }
        if defined == 0 && self.work.get() >= self.opts.limits.max_work / 2 {
            return Err(Rejection::OverBudget(
                "expressions too large to compare".into(),
            ));
        }
        Ok(defined > 0)
    }

    /// The canonical form of `n` (variables bound to `point` when given),
    /// within this comparison's budget.
    fn form(
        &self,
        n: &Node,
        syms: &[String],
        point: Option<&[BigRational]>,
    ) -> Option<exact::Frac> {
        self.exact(syms, point, |ex| ex.form_at_point(n))
    }

    fn exact<T>(
        &self,
        syms: &[String],
        point: Option<&[BigRational]>,
        f: impl FnOnce(&mut exact::Exact<'_>) -> Option<T>,
    ) -> Option<T> {
        let limits = &self.opts.limits;
        let mut ex = exact::Exact::new(syms, point, limits, self.work.get(), limits.max_work);
        let r = f(&mut ex);
        self.work.set(ex.work.min(limits.max_work));
        r
    }

    /// The value of a constant, exactly while it is rational.
    fn value(&self, n: &Node) -> R<V> {
        let compute = || {
            let mut ev = self.evaluator();
            let v = ev.eval(n);
            self.work.set(ev.work);
            v
        };
        match self.memo_of(n) {
            Some(m) => m.value.get_or_init(compute).clone(),
            None => compute(),
        }
    }

    /// The canonical form of a constant (memoised for the gold).
    fn constant_form(&self, n: &Node) -> Option<exact::Frac> {
        match self.memo_of(n) {
            Some(m) => m.form.get_or_init(|| self.form(n, &[], None)).clone(),
            None => self.form(n, &[], None),
        }
    }

    /// An enclosure of a real constant at the lowest precision (memoised
    /// for the gold).
    fn ball(&self, n: &Node) -> Option<real::Ball> {
        let compute = || {
            let mut enc = real::Encloser::new(&self.opts.limits, self.work.get());
            let b = enc.eval(n, real::PRECISIONS[0]);
            self.work.set(enc.work);
            b
        };
        match self.memo_of(n) {
            Some(m) => m.ball.get_or_init(compute).clone(),
            None => compute(),
        }
    }

    /// Whether two real constants are certainly different: their
    /// enclosures at the lowest precision do not meet.
    fn apart(&self, g: &Node, vg: &V, p: &Node, vp: &V) -> bool {
        let real = |v: &V| match v {
            V::Q(c) => c.im.is_zero(),
            V::F(c) => c.im == 0.0,
            _ => false,
        };
        if !real(vg) || !real(vp) {
            return false;
        }
        let Some(bg) = self.ball(g) else {
            return false;
        };
        let Some(bp) = self.ball(p) else {
            return false;
        };
        bg.apart(&bp)
    }

    /// A caller's relative tolerance for a decimal against a value it can
    /// only approximate, decided on certified enclosures: `|g - p| <= tol ·
    /// max(|g|, |p|)`.
    fn within_tolerance(&self, g: &Node, vg: &V, p: &Node, vp: &V) -> Option<bool> {
        let tol = BigRational::from_float(self.opts.rel_tol)?;
        if tol.is_zero() {
            return None;
        }
        let exact_of = |v: &V| match v {
            V::Q(c) if c.im.is_zero() => Some(c.re.clone()),
            _ => None,
        };
        let (qg, qp) = (exact_of(vg), exact_of(vp));
        for prec in real::PRECISIONS {
            let bound = |n: &Node, q: &Option<BigRational>| -> Option<(BigRational, BigRational)> {
                if let Some(q) = q {
                    return Some((q.clone(), q.clone()));
                }
                let mut enc = real::Encloser::new(&self.opts.limits, self.work.get());
                let b = enc.eval(n, prec);
                self.work.set(enc.work);
                b.and_then(|b| b.modest_bounds())
            };
            let (glo, ghi) = bound(g, &qg)?;
            let (plo, phi) = bound(p, &qp)?;
            let (dlo, dhi) = (&glo - &phi, &ghi - &plo);
            let dmax = dlo.abs().max(dhi.abs());
            let dmin = if dlo.is_negative() && dhi.is_positive() {
                BigRational::zero()
            } else {
                dlo.abs().min(dhi.abs())
            };
            let mag = |lo: &BigRational, hi: &BigRational| {
                let up = lo.abs().max(hi.abs());
                let down = if lo.is_negative() && hi.is_positive() {
                    BigRational::zero()
                } else {
                    lo.abs().min(hi.abs())
                };
                (down, up)
            };
            let (gd, gu) = mag(&glo, &ghi);
            let (pd, pu) = mag(&plo, &phi);
            if dmax <= &tol * gd.max(pd) {
                return Some(true);
            }
            if dmin > &tol * gu.max(pu) {
                return Some(false);
            }
        }
        None
    }

    /// `g = p` as rational functions of `syms`, within half of what is left
    /// of the work budget; `None` when either is not one (or too large).
    fn poly_equal(&self, g: &Node, p: &Node, syms: &[String]) -> Option<bool> {
        let (rg, rp, mut ctx) = self.rats(g, p, syms)?;
        let r = ctx.equal(&rg, &rp);
        self.work.set(ctx.work);
        r
    }

    fn rats<'s>(
        &self,
        a: &Node,
        b: &Node,
        syms: &'s [String],
    ) -> Option<(Rat, Rat, poly::Ctx<'s>)> {
        let start = self.work.get();
        let cap = start + self.opts.limits.max_work.saturating_sub(start) / 2;
        let mut ctx = poly::Ctx::new(syms, start, cap);
        let ra = ctx.rat(a);
        let rb = ra.as_ref().and_then(|_| ctx.rat(b));
        self.work.set(ctx.work.min(cap));
        Some((ra?, rb?, ctx))
    }

    /// Two exact values: equal, or a decimal against a value it cannot write
    /// within the caller's relative tolerance.
    pub(crate) fn values_equal(&self, a: &V, b: &V, dec_a: bool, dec_b: bool) -> bool {
        match (a, b) {
            (V::Inf(x), V::Inf(y)) => x == y,
            (V::Q(x), V::Q(y)) => {
                if x == y {
                    return true;
                }
                // A decimal approximates a value it cannot write exactly.
                let approx = (dec_a && !terminates(y)) || (dec_b && !terminates(x));
                approx && close(x.to_c64(), y.to_c64(), self.opts.rel_tol)
            }
            _ => false,
        }
    }

    /// The precision rule, decided on a certified enclosure of `x_node`
    /// when its value is not rational.
    fn rounds_to(&self, d: &BigRational, e: i32, x_node: &Node, x: &V) -> Option<bool> {
        match x {
            V::Q(c) if c.im.is_zero() => rounds_to_real(d, e, &c.re),
            V::F(c) if c.im == 0.0 => {
                let mut work = self.work.get();
                let r = rounds_to_node(d, e, x_node, &self.opts.limits, &[], &mut work);
                self.work.set(work);
                r
            }
            _ => None,
        }
    }

    /// Values for `syms` beyond every root of the polynomials the answers
    /// are built from (`far`, see [`far_magnitude`]), all positive or all
    /// negative: a sign that no ordinary point reaches (`|x - 500|` against
    /// `500 - x`, `\sqrt{x^2 - 1000x + 250000}` against `500 - x`) shows
    /// there. Integer variables keep their ordinary values.
    fn far_values(
        &self,
        syms: &[String],
        ints: &BTreeSet<String>,
        far: &BigRational,
        positive: bool,
    ) -> Vec<BigRational> {
        syms.iter()
            .enumerate()
            .map(|(k, s)| {
                if ints.contains(s) {
                    return self.point_value(s, true, 0);
                }
                // Distinct values for distinct variables: far · (1 + k/7 + u).
                let u = self.point_value(s, false, 0).abs().fract();
                let scale =
                    BigRational::one() + BigRational::new(BigInt::from(k), BigInt::from(7)) + u;
                let v = far * scale;
                if positive {
                    v
                } else {
                    -v
                }
            })
            .collect()
    }

    /// Values for `syms` at sample point `point` (see [`Cmp::point_value`]).
    fn point_values(
        &self,
        syms: &[String],
        ints: &BTreeSet<String>,
        point: usize,
    ) -> Vec<BigRational> {
        syms.iter()
            .map(|s| self.point_value(s, ints.contains(s), point))
            .collect()
    }
}

/// A step of the sampled proportionality check.
enum Step {
    Skip,
    Differ,
    Ratio(exact::Frac),
}

/// A lone decimal literal (possibly negated, a percentage, or times a power
/// of ten) as its value and the power of ten of its last written digit.
fn stated(n: &Node) -> Option<(BigRational, i32)> {
    match n {
        Node::Num(v, Some(e)) if *e != FLOAT => Some(((**v).clone(), *e)),
        Node::Neg(a) => stated(a).map(|(v, e)| (-v, e)),
        Node::Percent(a) => {
            let (v, e) = stated(a)?;
            Some((v / BigRational::from_integer(BigInt::from(100)), e - 2))
        }
        Node::Mul(v) if v.len() == 2 => {
            let (d, e) = stated(&v[0])?;
            let Node::Pow(b, k) = &v[1] else { return None };
            let (Node::Num(b, None), Some(k)) = (&**b, integer_literal(k)) else {
                return None;
            };
            if **b != BigRational::from_integer(BigInt::from(10)) || k.abs() > 400 {
                return None;
            }
            let p = pow10(k.unsigned_abs());
            let shifted = if k < 0 { d / p } else { d * p };
            Some((shifted, e + k))
        }
        _ => None,
    }
}

fn integer_literal(n: &Node) -> Option<i32> {
    use num_traits::ToPrimitive;
    match n {
        Node::Num(v, None) if v.is_integer() => v.to_integer().to_i32(),
        Node::Neg(a) => integer_literal(a).map(|k| -k),
        _ => None,
    }
}

fn pow10(k: u32) -> BigRational {
    BigRational::from_integer(num_traits::pow(BigInt::from(10), k as usize))
}

/// 10^e as a rational.
fn ten_to(e: i32) -> BigRational {
    let p = pow10(e.unsigned_abs());
    if e < 0 {
        p.recip()
    } else {
        p
    }
}

/// docs/verify_semantics.md: a decimal answers to the precision it states.
/// `Some(true)` when the decimal `d` (last digit at 10^e) is `x` rounded or
/// truncated at its last digit, carries at least 4 significant digits and
/// `x` is a value it cannot write exactly; `Some(false)` when it is not;
/// `None` when the rule does not apply or the enclosures of `x` within the
/// budget cannot tell.
pub(crate) fn rounds_to_node(
    d: &BigRational,
    e: i32,
    x: &Node,
    limits: &Limits,
    env: &[(String, BigRational)],
    work: &mut u64,
) -> Option<bool> {
    if e.unsigned_abs() > 400 {
        return None;
    }
    let unit = ten_to(e);
    let digits = (d.abs() / &unit).to_integer();
    if digits.to_string().len() < 4 || d.is_zero() {
        return None;
    }
    // The values d stands for: within half a unit (rounded), or up to a
    // unit away from zero (truncated).
    let half = &unit / BigRational::from_integer(BigInt::from(2));
    let (lo, hi) = if d.is_positive() {
        (d - &half, d + &unit)
    } else {
        (d - &unit, d + &half)
    };
    real::settle(x, limits, env, work, |b, _| {
        let (blo, bhi) = b.modest_bounds()?;
        if blo > lo && bhi < hi {
            Some(true)
        } else if bhi < lo || blo > hi {
            Some(false)
        } else {
            None
        }
    })
}

/// The precision rule against a rational value: `x` is what the decimal
/// `d` (last digit at `10^e`, at least four digits) rounds, within half a
/// unit of that digit, or within one unit on the side away from zero
/// (truncation). In units of the last digit, `X = x / 10^e` and
/// `D = d / 10^e`, compared by cross-multiplication: no gcd, no division.
pub(crate) fn rounds_to_real(d: &BigRational, e: i32, x: &BigRational) -> Option<bool> {
    if e.unsigned_abs() > 400 {
        return None;
    }
    let p = num_traits::pow(BigInt::from(10), e.unsigned_abs() as usize);
    // X = a / b and D = c / f, with b, f > 0.
    let (a, b, c, f) = if e <= 0 {
        (
            x.numer() * &p,
            x.denom().clone(),
            d.numer() * &p,
            d.denom().clone(),
        )
    } else {
        (
            x.numer().clone(),
            x.denom() * &p,
            d.numer().clone(),
            d.denom() * &p,
        )
    };
    // Fewer than four digits: no precision to speak of.
    if c.abs() < &f * BigInt::from(1000) {
        return None;
    }
    if (&a % &b).is_zero() {
        return None; // a value it can write: compared exactly
    }
    let gap = (&a * &f - &c * &b).abs();
    let scale = &b * &f;
    let same_side = x.is_negative() == d.is_negative() && a.abs() * &f >= c.abs() * &b;
    (&gap * BigInt::from(2) <= scale || (same_side && gap < scale)).then_some(true)
}

/// Whether the exact canonical forms of two constants are equal (the
/// engine behind the quick paths, for their tests).
#[cfg(test)]
pub(crate) fn forms_equal(g: &Node, p: &Node, opts: &CompareOptions) -> Option<bool> {
    let c = Cmp::new(opts, (g, p));
    let (a, b) = (c.form(g, &[], None)?, c.form(p, &[], None)?);
    c.exact(&[], None, |ex| ex.equal(&a, &b))
}

/// The precision rule for a pair of constants (`None` when it does not
/// apply): a decimal against an exact value, or against a decimal with more
/// digits (the one with fewer digits must be the prediction).
fn precision_match(g: &Node, vg: &V, p: &Node, vp: &V, cmp: &Cmp<'_>) -> Option<bool> {
    match (stated(g), stated(p)) {
        (Some((_, eg)), Some((dp, ep))) if ep > eg => cmp.rounds_to(&dp, ep, g, vg),
        (Some(_), Some(_)) => None,
        (Some((dg, eg)), None) if !p.has_decimal() => cmp.rounds_to(&dg, eg, p, vp),
        (None, Some((dp, ep))) if !g.has_decimal() => cmp.rounds_to(&dp, ep, g, vg),
        _ => None,
    }
}

/// An element of a list sampled: whether it is a tuple, and each
/// component with its values at the sample points and whether it has a
/// decimal.
type Sampled<'n> = (bool, Vec<(&'n Node, Vec<V>, bool)>);

/// A plain scalar as one component, a tuple of plain scalars as its
/// components; `None` for anything else.
fn components(n: &Node) -> Option<Vec<&Node>> {
    let plain = |n: &Node| !n.is_structure() && !matches!(n, Node::Percent(_) | Node::Ellipsis);
    match n {
        Node::Tuple(v) if !v.is_empty() && v.iter().all(plain) => Some(v.iter().collect()),
        n if plain(n) => Some(vec![n]),
        _ => None,
    }
}

fn diff(a: &Node, b: &Node) -> Node {
    Node::Add(vec![a.clone(), Node::Neg(Box::new(b.clone()))])
}

/// Whether a rational has a terminating decimal expansion.
fn terminates(c: &Cq) -> bool {
    let ok = |r: &BigRational| {
        let mut d = r.denom().clone();
        for p in [2u32, 5] {
            let p = BigInt::from(p);
            while (&d % &p).is_zero() {
                d /= &p;
            }
        }
        d == BigInt::from(1) || d.is_zero()
    };
    ok(&c.re) && ok(&c.im)
}

fn close(a: C64, b: C64, tol: f64) -> bool {
    if !(a.re.is_finite() && a.im.is_finite() && b.re.is_finite() && b.im.is_finite()) {
        return false;
    }
    let d = (a.re - b.re).hypot(a.im - b.im);
    let m = a.re.hypot(a.im).max(b.re.hypot(b.im));
    d <= tol * m * (1.0 + 1e-9) || (m < 1e-12 && d < 1e-12)
}

fn symbols_of(nodes: &[&Node]) -> Vec<String> {
    let mut all = BTreeSet::new();
    for n in nodes {
        all.extend(free_symbols(n).into_iter().filter(|s| !s.ends_with("()")));
    }
    all.into_iter().collect()
}

/// Variables that must take integer values: bounds of sums and products,
/// arguments of factorials and binomials, subscripts.
fn integer_symbols(nodes: &[&Node]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for n in nodes {
        n.walk(&mut |m| match m {
            Node::BigOp(_, _, lo, hi, _) => {
                out.extend(free_symbols(lo));
                out.extend(free_symbols(hi));
            }
            Node::Fact(a) | Node::Indexed(_, a) => out.extend(free_symbols(a)),
            Node::Binom(a, b) => {
                out.extend(free_symbols(a));
                out.extend(free_symbols(b));
            }
            _ => {}
        });
    }
    out
}

/// A magnitude beyond every real root of a polynomial whose coefficients
/// are the answers' numbers: `2 (1 + H)^2`, `H` the largest numerator or
/// denominator written (Cauchy's bound; capped at 2^256 for `H`).
fn far_magnitude(nodes: &[&Node]) -> BigRational {
    let cap = BigInt::one() << 256usize;
    let mut h = BigInt::one();
    for n in nodes {
        n.walk(&mut |m| {
            if let Node::Num(v, _) = m {
                for part in [v.numer().abs(), v.denom().clone()] {
                    if part > h {
                        h = part.min(cap.clone());
                    }
                }
            }
        });
    }
    let one = BigInt::one();
    BigRational::from_integer((&one + &h) * (&one + &h) * BigInt::from(2))
}

/// FNV-1a over bytes, continuing from `h`.
pub(super) fn fnv(h: &mut u64, bytes: &[u8]) {
    for b in bytes {
        *h ^= u64::from(*b);
        *h = h.wrapping_mul(0x100_0000_01b3);
    }
}

/// A structural hash of a parsed answer, the same on every run and
/// platform (no `RandomState`).
fn hash_node(n: &Node, h: &mut u64) {
    n.walk(&mut |m| {
        let tag: u8 = match m {
            Node::Num(v, d) => {
                fnv(h, &v.numer().to_signed_bytes_le());
                fnv(h, b"/");
                fnv(h, &v.denom().to_signed_bytes_le());
                1 + u8::from(d.is_some())
            }
            Node::Sym(s) | Node::Text(s) => {
                fnv(h, s.as_bytes());
                3
            }
            Node::Indexed(s, _) | Node::Apply(s, _) | Node::BigOp(_, s, ..) => {
                fnv(h, s.as_bytes());
                4
            }
            Node::Func(f, _) => 16 + *f as u8,
            Node::Pi => 5,
            Node::Inf => 6,
            Node::Add(v) | Node::Mul(v) | Node::List(v) | Node::Tuple(v) | Node::Set(v) => {
                fnv(h, &(v.len() as u64).to_le_bytes());
                7
            }
            Node::Rel(v, ops) => {
                for o in ops {
                    fnv(h, &[*o as u8]);
                }
                fnv(h, &(v.len() as u64).to_le_bytes());
                8
            }
            Node::Neg(_) => 9,
            Node::Div(..) => 10,
            Node::Pow(..) => 11,
            Node::Root(..) => 12,
            _ => 13,
        };
        fnv(h, &[tag]);
    });
}

/// splitmix64: the next value of a deterministic stream.
pub(super) fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Cmp<'_> {
    fn seed(&self) -> u64 {
        if let Some(s) = self.seed.get() {
            return s;
        }
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        hash_node(self.roots.0, &mut h);
        fnv(&mut h, b"\0|\0");
        hash_node(self.roots.1, &mut h);
        self.seed.set(Some(h));
        h
    }

    /// Give every variable its value at sample point `point`: drawn from a
    /// generator seeded by both answers. Integer variables (bounds of sums,
    /// arguments of factorials, subscripts) get integers from 2 to 31; the
    /// others non-integers with 4-digit denominators, of both signs and
    /// magnitudes from below 1 to about 100, so that neither `\sin(42\pi x)`
    /// nor a polynomial with chosen roots vanishes at all of them.
    fn point_value(&self, s: &str, integer: bool, point: usize) -> BigRational {
        let seed = self.seed();
        let mut st = seed ^ (point as u64).wrapping_mul(0x2545_f491_4f6c_dd1d);
        fnv(&mut st, s.as_bytes());
        let r1 = splitmix(&mut st);
        let r2 = splitmix(&mut st);
        let r3 = splitmix(&mut st);
        if integer {
            return BigRational::from_integer(BigInt::from(2 + r1 % 30));
        }
        let den = 1001 + r1 % 8999;
        let num = 1 + r2 % (den - 1);
        let whole = match point % 5 {
            0 => 0,
            1 => 1 + r3 % 3,
            2 => 4 + r3 % 12,
            3 => 16 + r3 % 84,
            _ => r3 % 8,
        };
        let v = BigRational::new(BigInt::from(whole * den + num), BigInt::from(den));
        let negative = match point % 5 {
            1 | 3 => true,
            0 | 2 => false,
            _ => (r3 >> 40) & 1 == 1,
        };
        if negative {
            -v
        } else {
            v
        }
    }
}
