//! The math engine of the verifier: parse plain and LaTeX answers into
//! values and decide whether two values are the same answer.
//!
//! ```
//! use grpo_fast_core::math::{equivalent, parse, CompareOptions, ParseOptions};
//! let p = ParseOptions::default();
//! let a = parse(r"\frac{1}{\sqrt3}", &p).unwrap();
//! let b = parse(r"\frac{\sqrt{3}}{3}", &p).unwrap();
//! assert!(equivalent(&a, &b, &CompareOptions::default()));
//! ```
//!
//! What counts as a match is decided in docs/verify_semantics.md; the budgets in
//! [`Limits`] bound every step, so no input can make a call slow or large.

mod ast;
mod compare;
mod constants;
pub(crate) mod display;
mod eval;
mod exact;
mod lexer;
mod parser;
mod poly;
mod quick;
mod ratio;
mod real;
mod short;
mod snap;
mod unicode;

use std::fmt;

use ast::{Node, RelOp};

/// Hard limits on the work spent on one answer. The defaults keep any item
/// within a few milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Bytes of input.
    pub max_len: usize,
    pub max_tokens: usize,
    /// Nesting of groups and sub-expressions.
    pub max_depth: usize,
    pub max_nodes: usize,
    /// Digits of one number literal.
    pub max_digits: usize,
    /// Bits of any exact intermediate value (numerator plus denominator).
    pub max_bits: u64,
    /// Largest integer exponent computed exactly.
    pub max_exponent: u64,
    pub max_factorial: u64,
    /// Terms of a `\sum` or `\prod`.
    pub max_terms: u64,
    /// Element comparisons for one pair of answers (matching two lists is
    /// quadratic).
    pub max_comparisons: u64,
    /// Units of exact arithmetic for one comparison, all sample points and
    /// elements together (an operation on b-bit numbers costs about
    /// b + b²/256).
    pub max_work: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_len: 10_000,
            max_tokens: 4_000,
            max_depth: 64,
            max_nodes: 4_000,
            max_digits: 400,
            max_bits: 16_384,
            max_exponent: 16_384,
            max_factorial: 1_000,
            max_terms: 1_000,
            max_comparisons: 5_000,
            max_work: 400_000,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParseOptions {
    pub limits: Limits,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CompareOptions {
    /// Relative tolerance for a decimal against a value it can only
    /// approximate (`1.4142` against `\sqrt2`).
    pub rel_tol: f64,
    /// Let a pair gold `(2, 7)` accept an inequality prediction as the open
    /// interval (`2 < x < 7`). An interval with a bracket or an infinite end
    /// (`[-2, 7]`, `(2, \infty)`) and a union always equal the inequality
    /// they describe, whichever side is the gold.
    pub allow_set_relation_comp: bool,
    pub limits: Limits,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            rel_tol: 1e-6,
            allow_set_relation_comp: false,
            limits: Limits::default(),
        }
    }
}

/// Why an answer has no value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    Empty,
    /// A limit of [`Limits`] would be exceeded.
    OverBudget(String),
    Unparseable(String),
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::Empty => write!(f, "empty answer"),
            Rejection::OverBudget(why) => write!(f, "over budget: {why}"),
            Rejection::Unparseable(why) => write!(f, "unparseable: {why}"),
        }
    }
}

impl std::error::Error for Rejection {}

/// A parsed answer.
#[derive(Debug, Clone)]
pub struct Value {
    node: Node,
    /// What comparisons learn about this answer as a constant (its canonical
    /// form, its enclosure), kept for the next comparison with it: a gold is
    /// compared with every completion of its group.
    memo: compare::Memo,
}

impl PartialEq for Value {
    fn eq(&self, o: &Value) -> bool {
        self.node == o.node
    }
}

impl Value {
    fn of(node: Node) -> Value {
        Value {
            node,
            memo: compare::Memo::default(),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&display::render(&self.node))
    }
}

impl Value {
    /// What kind of answer this is: `"number"` (no variables), `"expression"`,
    /// `"relation"`, `"tuple"`, `"set"`, `"interval"`, `"union"`, `"list"`,
    /// `"matrix"` or `"text"`.
    pub fn kind(&self) -> &'static str {
        match &self.node {
            Node::Rel(..) => "relation",
            Node::Tuple(_) => "tuple",
            Node::Set(_) => "set",
            Node::Interval(..) => "interval",
            Node::Union(_) => "union",
            Node::List(_) => "list",
            Node::Matrix(_) => "matrix",
            Node::Text(_) | Node::Ellipsis => "text",
            n if compare::free_symbols(n).is_empty() => "number",
            _ => "expression",
        }
    }

    /// Several answers as one collection answer (several `\boxed{}`): a
    /// bare list of their values, nested lists flattened.
    pub fn collection(values: Vec<Value>) -> Value {
        let mut items = Vec::new();
        for v in values {
            match v.node {
                Node::List(inner) => items.extend(inner),
                other => items.push(other),
            }
        }
        Value::of(if items.len() == 1 {
            items.pop().unwrap_or(Node::Ellipsis)
        } else {
            Node::List(items)
        })
    }
}

/// Whether `s` is one of the commonest short answers (a whole number, a
/// decimal, a fraction, a square root, a pair or an interval of whole
/// numbers: `math::short`): text with no marker, no word and no markup
/// other than `\frac`, `\sqrt`, `\pi` and `\left`/`\right`.
pub(crate) fn is_short_answer(s: &str) -> bool {
    short_value(s).is_some()
}

/// The value of `s` when it is a short answer (see [`is_short_answer`]):
/// what [`parse`] gives under the default limits.
pub(crate) fn short_value(s: &str) -> Option<Value> {
    short::parse(s, &Limits::default()).map(Value::of)
}

/// Parse one answer (already extracted from its completion).
pub fn parse(s: &str, opts: &ParseOptions) -> Result<Value, Rejection> {
    // A whole number or a fraction of two needs none of the general path.
    if let Some(node) = short::parse(s, &opts.limits) {
        return Ok(Value::of(node));
    }
    parse_general(s, opts)
}

/// [`parse`] by the general path: normalise, the prose and quantity
/// checks, the lexer, the parser, the lowering.
fn parse_general(s: &str, opts: &ParseOptions) -> Result<Value, Rejection> {
    let limits = &opts.limits;
    if s.len() > limits.max_len {
        return Err(Rejection::OverBudget(format!(
            "an answer longer than {} bytes",
            limits.max_len
        )));
    }
    let s = unicode::normalize(s)?;
    let s = s.trim();
    if s.is_empty() {
        return Err(Rejection::Empty);
    }
    if let Some(words) = parser::prose(s) {
        return Ok(Value::of(Node::Text(words)));
    }
    // `7 hours 30 minutes` is one quantity: its value in its first unit
    // (docs/verify_semantics.md rule 15).
    if let Some((n, d)) = crate::extract::whole_quantity(s) {
        return parse(&format!("\\frac{{{n}}}{{{d}}}"), opts);
    }
    let inline = (s.starts_with('$') && !s.starts_with("$$")) || s.starts_with("\\(");
    if inline && s.contains('\n') {
        // As math-verify reads them: a `$...$` span broken across lines is
        // prose that happens to contain dollar signs, not an answer.
        return Err(Rejection::Unparseable(
            "inline math broken across lines".into(),
        ));
    }
    let tokens = lexer::lex(s, limits)?;
    let node = parser::parse_tokens(&tokens, limits)?;
    let node = lower(node)?;
    Ok(Value::of(node))
}

/// Whether `pred` is the same answer as `gold`; over-budget comparisons are
/// non-matches (see [`compare`] for the reason).
pub fn equivalent(gold: &Value, pred: &Value, opts: &CompareOptions) -> bool {
    compare(gold, pred, opts).unwrap_or(false)
}

/// [`equivalent`], with the reason when the comparison ran out of budget.
pub fn compare(gold: &Value, pred: &Value, opts: &CompareOptions) -> Result<bool, Rejection> {
    compare_spending(gold, pred, opts, &std::cell::Cell::new(0))
}

/// [`compare`], adding to `total` the work units its comparisons spent.
///
/// The forms of one answer (itself, its decimals as constants, its
/// constants renamed: up to 24 orders of four) share one budget: a pair
/// costs at most one budget, however many forms it has.
fn compare_spending(
    gold: &Value,
    pred: &Value,
    opts: &CompareOptions,
    total: &std::cell::Cell<u64>,
) -> Result<bool, Rejection> {
    let spent = std::cell::Cell::new(compare::Spent::default());
    let cmp = |p: &Node| {
        let c = compare::Cmp::new(opts, (&gold.node, p))
            .with_memo(&gold.memo)
            .after(spent.get());
        let before = c.spent().work;
        let r = c.equiv(&gold.node, p);
        total.set(total.get() + c.spent().work - before);
        spent.set(c.spent());
        r
    };
    if let Some(v) = gold.memo.verdict(&pred.node, opts) {
        return Ok(v);
    }
    let verdict = cmp(&pred.node)?
        // Decimals inside an expression, to the precision they state.
        || match snap::decimals_as_constants(&gold.node, &pred.node, &opts.limits) {
            Some(p) => cmp(&p)?,
            None => false,
        }
        // Arbitrary constants named differently (`c e^{2x}` for `C e^{2x}`).
        || constants::renamings(&gold.node, &pred.node)
            .iter()
            .any(|p| cmp(p) == Ok(true));
    gold.memo.remember(&pred.node, opts, verdict);
    Ok(verdict)
}

/// Whether a claimed equality `a = b` between two constants holds (the step
/// checker's question, [`crate::steps`]). `Ok(None)` when either side is not a
/// constant scalar: a name, an expression in variables, a structure, a limit,
/// infinity, `±`. Exact values compare exactly (`\frac34 + \frac18 =
/// \frac78`); a decimal holds to the precision it states, on either side, by
/// the verifier's rule (docs/verify_semantics.md: `\frac13 = 0.3333`, not
/// `0.33`); a percentage is its value (`50\% = 0.5`, not `50`). Over budget is
/// an `Err`: the claim is then not decided.
pub fn claim_holds(a: &Value, b: &Value, opts: &CompareOptions) -> Result<Option<bool>, Rejection> {
    if !constant_scalar(&a.node) || !constant_scalar(&b.node) {
        return Ok(None);
    }
    let cmp = |g: &Node, p: &Node| compare::Cmp::new(opts, (g, p)).scalar_values(g, p);
    // The precision rule reads the decimal with fewer digits as the
    // prediction; a claim has no gold side, so either order may hold.
    Ok(Some(cmp(&a.node, &b.node)? || cmp(&b.node, &a.node)?))
}

fn constant_scalar(n: &Node) -> bool {
    let mut ok = !n.is_structure();
    n.walk(&mut |m| {
        ok &= !matches!(
            m,
            Node::Sym(_)
                | Node::Indexed(..)
                | Node::Apply(..)
                | Node::Limit(..)
                | Node::Inf
                | Node::PlusMinus(..)
                | Node::Text(_)
                | Node::Ellipsis
        ) && !m.is_structure();
    });
    ok
}

const MAX_ALTERNATIVES: usize = 16;

/// Post-parse normalisation: `±` expands into alternatives, `\approx`
/// chains keep their exact part.
fn lower(node: Node) -> Result<Node, Rejection> {
    Ok(match node {
        Node::List(v) => Node::List(lower_items(v)?),
        Node::Set(v) => Node::Set(lower_items(v)?),
        // A union of finite sets is the set of all their elements
        // (`\{1, 3\} \cup \{2, 4\}` is `\{1, 2, 3, 4\}`).
        Node::Union(v) if v.len() > 1 && v.iter().all(|n| matches!(n, Node::Set(_))) => {
            let items = v
                .into_iter()
                .flat_map(|n| match n {
                    Node::Set(items) => items,
                    other => vec![other],
                })
                .collect();
            Node::Set(lower_items(items)?)
        }
        other => {
            let mut alts = expand_pm(approx(fold_matrices(other)));
            if alts.len() == 1 {
                alts.pop().unwrap_or(Node::Ellipsis)
            } else {
                Node::List(alts)
            }
        }
    })
}

fn lower_items(v: Vec<Node>) -> Result<Vec<Node>, Rejection> {
    let mut out = Vec::new();
    for n in v {
        match n {
            Node::List(_) | Node::Set(_) => out.push(lower(n)?),
            // Alternatives from `±` inside a list belong to the list itself.
            other => out.extend(expand_pm(approx(fold_matrices(other)))),
        }
    }
    Ok(out)
}

/// Sums and products of matrices with explicit entries, entry by entry.
fn fold_matrices(node: Node) -> Node {
    match node {
        Node::Add(v) if v.len() >= 2 && v.iter().all(|x| matches!(x, Node::Matrix(_))) => {
            let mut it = v.into_iter();
            let Some(Node::Matrix(mut acc)) = it.next() else {
                return Node::Ellipsis;
            };
            for m in it {
                let Node::Matrix(m) = m else {
                    return Node::Ellipsis;
                };
                if m.len() != acc.len() || m.iter().zip(&acc).any(|(a, b)| a.len() != b.len()) {
                    return Node::Ellipsis;
                }
                for (ra, rb) in acc.iter_mut().zip(m) {
                    for (a, b) in ra.iter_mut().zip(rb) {
                        *a = Node::Add(vec![std::mem::replace(a, Node::Ellipsis), b]);
                    }
                }
            }
            Node::Matrix(acc)
        }
        // A scalar times a matrix (`2\begin{pmatrix}...`).
        Node::Mul(v)
            if v.len() == 2
                && !matches!(v[0], Node::Matrix(_))
                && !v[0].is_structure()
                && matches!(v[1], Node::Matrix(_)) =>
        {
            let mut it = v.into_iter();
            let (Some(k), Some(Node::Matrix(m))) = (it.next(), it.next()) else {
                return Node::Ellipsis;
            };
            Node::Matrix(
                m.into_iter()
                    .map(|row| {
                        row.into_iter()
                            .map(|x| Node::Mul(vec![k.clone(), x]))
                            .collect()
                    })
                    .collect(),
            )
        }
        Node::Mul(v) if v.len() >= 2 && v.iter().all(|x| matches!(x, Node::Matrix(_))) => {
            let mut it = v.into_iter();
            let Some(Node::Matrix(mut acc)) = it.next() else {
                return Node::Ellipsis;
            };
            for m in it {
                let Node::Matrix(m) = m else {
                    return Node::Ellipsis;
                };
                let inner = acc.first().map_or(0, Vec::len);
                if m.len() != inner || acc.iter().any(|r| r.len() != inner) {
                    return Node::Ellipsis;
                }
                let cols = m.first().map_or(0, Vec::len);
                if m.iter().any(|r| r.len() != cols) || inner * cols > 400 {
                    return Node::Ellipsis;
                }
                acc = acc
                    .iter()
                    .map(|row| {
                        (0..cols)
                            .map(|j| {
                                Node::Add(
                                    (0..inner)
                                        .map(|k| Node::Mul(vec![row[k].clone(), m[k][j].clone()]))
                                        .collect(),
                                )
                            })
                            .collect()
                    })
                    .collect();
            }
            Node::Matrix(acc)
        }
        other => other,
    }
}

/// `x = 1/3 \approx 0.33` is `x = 1/3`; `x \approx 11` is `x = 11`.
fn approx(node: Node) -> Node {
    let Node::Rel(items, ops) = node else {
        return node;
    };
    let Some(j) = ops.iter().position(|o| *o == RelOp::Approx) else {
        return Node::Rel(items, ops);
    };
    let exact_before = items[..=j]
        .iter()
        .any(|n| compare::free_symbols(n).is_empty());
    if exact_before {
        let mut items = items;
        let mut ops = ops;
        items.truncate(j + 1);
        ops.truncate(j);
        if items.len() == 1 {
            return items.pop().unwrap_or(Node::Ellipsis);
        }
        return Node::Rel(items, ops);
    }
    let ops = ops
        .into_iter()
        .map(|o| if o == RelOp::Approx { RelOp::Eq } else { o })
        .collect();
    Node::Rel(items, ops)
}

fn expand_pm(node: Node) -> Vec<Node> {
    let mut any = false;
    node.walk(&mut |n| any |= matches!(n, Node::PlusMinus(..)));
    if !any {
        return vec![node]; // nothing to expand: no copy of the tree
    }
    let mut out = vec![node];
    for _ in 0..4 {
        let mut next = Vec::new();
        let mut changed = false;
        for n in out {
            let (plus, found) = replace_pm(&n, false);
            if found {
                changed = true;
                next.push(plus);
                next.push(replace_pm(&n, true).0);
            } else {
                next.push(n);
            }
            if next.len() > MAX_ALTERNATIVES {
                break;
            }
        }
        out = next;
        if !changed {
            break;
        }
    }
    out
}

/// A copy of `n` with its first `±` replaced by `+` (or `-` when `minus`).
fn replace_pm(n: &Node, minus: bool) -> (Node, bool) {
    fn go(n: &Node, minus: bool, done: &mut bool) -> Node {
        if *done {
            return n.clone();
        }
        let rec = |x: &Node, done: &mut bool| Box::new(go(x, minus, done));
        match n {
            Node::PlusMinus(a, b, mp) => {
                *done = true;
                let neg = minus != *mp;
                let b = if neg {
                    Node::Neg(b.clone())
                } else {
                    (**b).clone()
                };
                Node::Add(vec![(**a).clone(), b])
            }
            Node::Add(v) => Node::Add(v.iter().map(|x| go(x, minus, done)).collect()),
            Node::Mul(v) => Node::Mul(v.iter().map(|x| go(x, minus, done)).collect()),
            Node::Rel(v, o) => Node::Rel(v.iter().map(|x| go(x, minus, done)).collect(), o.clone()),
            Node::Neg(a) => Node::Neg(rec(a, done)),
            Node::Div(a, b) => {
                let a = rec(a, done);
                let b = rec(b, done);
                Node::Div(a, b)
            }
            Node::Pow(a, b) => {
                let a = rec(a, done);
                let b = rec(b, done);
                Node::Pow(a, b)
            }
            Node::Root(a, b) => {
                let a = rec(a, done);
                let b = rec(b, done);
                Node::Root(a, b)
            }
            _ => n.clone(),
        }
    }
    let mut done = false;
    let out = go(n, minus, &mut done);
    (out, done)
}

#[cfg(test)]
mod tests;
