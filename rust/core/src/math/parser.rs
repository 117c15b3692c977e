//! A Pratt parser from tokens to [`Node`]s.
//!
//! Binding powers, loosest first: `;` (1), `,` / "and" / "or" (2), relations
//! (3, read as chains), `\cup` (5), ratio `:` (6), `+ - ±` (7), `* /` and
//! juxtaposition (9), `%` (10), trailing units (11), `^` (13, right
//! associative), `!` (14).

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive, Zero};

use super::ast::{Func, Node, RelOp};
use super::lexer::{is_system_env, Token, T};
use super::{Limits, Rejection};

type R<T> = Result<T, Rejection>;

const FUNCTION_LETTERS: &[&str] = &["f", "g", "h", "F", "G", "H", "P", "Q", "W"];

pub(crate) struct Parser<'a> {
    toks: &'a [Token],
    pos: usize,
    limits: &'a Limits,
    depth: usize,
    nodes: usize,
    abs_depth: usize,
    fn_arg: bool,
    /// Inside the argument of a trigonometric function, where `30^\circ`
    /// means π/6.
    trig: usize,
    /// A degree sign ended the brace-less argument of a function being read
    /// (`\sin 80^\circ (\ldots)`: what follows multiplies the sine).
    angle_closed: bool,
}

pub(crate) fn parse_tokens(toks: &[Token], limits: &Limits) -> R<Node> {
    let mut p = Parser {
        toks,
        pos: 0,
        limits,
        depth: 0,
        nodes: 0,
        abs_depth: 0,
        fn_arg: false,
        trig: 0,
        angle_closed: false,
    };
    if toks.is_empty() {
        return Err(Rejection::Empty);
    }
    let node = p.expr(0)?;
    if p.pos < toks.len() {
        return Err(Rejection::Unparseable(format!(
            "unexpected {:?}",
            toks[p.pos].t
        )));
    }
    Ok(node)
}

fn unparseable<X>(what: &str) -> R<X> {
    Err(Rejection::Unparseable(what.to_string()))
}

fn is_and_or(t: &T) -> bool {
    match t {
        T::Text(s) => {
            let l = s.trim().to_ascii_lowercase();
            l == "and" || l == "or" || l == "und"
        }
        _ => false,
    }
}

fn is_or(t: &T) -> bool {
    matches!(t, T::Text(s) if s.trim().eq_ignore_ascii_case("or"))
}

fn small_int(n: &Node) -> Option<BigInt> {
    match n {
        Node::Num(v, None) if v.is_integer() => Some(v.to_integer()),
        _ => None,
    }
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&'a T> {
        self.toks.get(self.pos).map(|t| &t.t)
    }
    fn peek_at(&self, k: usize) -> Option<&'a Token> {
        self.toks.get(self.pos + k)
    }
    fn bump(&mut self) -> Option<&'a T> {
        let t = self.toks.get(self.pos).map(|t| &t.t);
        self.pos += 1;
        t
    }
    fn eat(&mut self, t: &T) -> bool {
        if self.peek() == Some(t) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, t: &T) -> R<()> {
        if self.eat(t) {
            Ok(())
        } else {
            Err(Rejection::Unparseable(format!(
                "expected {t:?}, found {:?}",
                self.peek()
            )))
        }
    }

    fn tick(&mut self) -> R<()> {
        self.nodes += 1;
        if self.nodes > self.limits.max_nodes {
            return Err(Rejection::OverBudget(format!(
                "more than {} expression nodes",
                self.limits.max_nodes
            )));
        }
        Ok(())
    }

    fn at_terminator(&self) -> bool {
        match self.peek() {
            None => true,
            Some(t) => {
                matches!(
                    t,
                    T::P(')')
                        | T::P(']')
                        | T::P('}')
                        | T::SetClose
                        | T::P('&')
                        | T::RowSep
                        | T::End(_)
                        | T::Cmd("rfloor")
                        | T::Cmd("rceil")
                ) || (matches!(t, T::P('|')) && self.abs_depth > 0)
            }
        }
    }

    /// Can this token start an operand of an implicit product?
    fn starts_atom(&self, t: &T) -> bool {
        match t {
            T::Letter(_) | T::P('(') | T::P('{') | T::SetOpen | T::Begin(_) => true,
            T::P('|') => self.abs_depth == 0,
            T::Cmd(c) => {
                let func = matches!(
                    *c,
                    "sin"
                        | "cos"
                        | "tan"
                        | "sec"
                        | "csc"
                        | "cot"
                        | "arcsin"
                        | "arccos"
                        | "arctan"
                        | "sinh"
                        | "cosh"
                        | "tanh"
                        | "ln"
                        | "log"
                        | "exp"
                        | "lg"
                );
                !(matches!(
                    *c,
                    "cup" | "cap" | "choose" | "rfloor" | "rceil" | "bmod" | "to"
                ) || func && self.fn_arg)
            }
            _ => false,
        }
    }

    fn lbp(&self, t: &T) -> u8 {
        match t {
            T::P(';') => 1,
            T::P(',') => 2,
            _ if is_and_or(t) => 2,
            T::Rel(_) => 3,
            T::Cmd("cup") | T::Cmd("cap") => 5,
            T::P(':') => 6,
            T::P('+') | T::P('-') | T::PlusMinus | T::MinusPlus => 7,
            T::P('*') | T::P('/') | T::Cmd("bmod") => 9,
            T::Cmd("to") => 0,
            T::Percent => 10,
            T::Text(_) => 11,
            T::P('^') => 13,
            T::P('!') | T::P('_') | T::Degree => 14,
            T::Ellipsis => 2,
            _ if self.starts_atom(t) => 9,
            _ => 0,
        }
    }

    pub(crate) fn expr(&mut self, min_bp: u8) -> R<Node> {
        self.depth += 1;
        if self.depth > self.limits.max_depth {
            return Err(Rejection::OverBudget(format!(
                "nesting deeper than {}",
                self.limits.max_depth
            )));
        }
        let mut left = self.nud()?;
        let mut chain = 0usize;
        while let Some(t) = self.peek() {
            if self.at_terminator() {
                break;
            }
            let mut lbp = self.lbp(t);
            // `2!\,8!`, `\sqrt{2}\,3`: a number after a factorial, root or
            // power multiplies (after a plain number it does not: `2 3`).
            let last = match &left {
                Node::Mul(v) => v.last().unwrap_or(&left),
                other => other,
            };
            if lbp == 0
                && matches!(t, T::Num(..))
                && matches!(last, Node::Fact(_) | Node::Root(..) | Node::Pow(..))
            {
                lbp = 9;
            }
            // The brace-less argument of a function ends after a degree sign
            // and at a parenthesis after a space, as in textbooks: `\sin
            // 80^\circ (1 + x)`, `\sin 80^\circ \cdot 2` and `\sin x (1 + \cos
            // x)` multiply the sine.
            if self.fn_arg && lbp == 9 {
                let spaced_paren = *t == T::P('(') && self.toks[self.pos].space;
                if self.angle_closed || spaced_paren {
                    break;
                }
            }
            if lbp <= min_bp {
                break;
            }
            self.tick()?;
            left = self.led(left, t, lbp)?;
            // `a/b/c/...`, `5!!!` and `a ± b ± c` nest to the left without
            // recursing here: count that nesting against the depth limit too.
            if matches!(
                left,
                Node::Div(..)
                    | Node::Fact(_)
                    | Node::Percent(_)
                    | Node::PlusMinus(..)
                    | Node::Pow(..)
            ) {
                chain += 1;
                if self.depth + chain > self.limits.max_depth {
                    return Err(Rejection::OverBudget(format!(
                        "nesting deeper than {}",
                        self.limits.max_depth
                    )));
                }
            }
        }
        self.depth -= 1;
        Ok(left)
    }

    fn led(&mut self, left: Node, t: &'a T, lbp: u8) -> R<Node> {
        match t {
            T::P(';') | T::P(',') | T::Ellipsis | T::Text(_) if lbp <= 2 => {
                let sep_bp = lbp;
                let mut items = vec![left];
                // Only "or" between the items (`x < 1 \text{ or } x > 3`).
                let mut only_or = true;
                while let Some(t) = self.peek() {
                    if self.lbp(t) != sep_bp || self.at_terminator() {
                        break;
                    }
                    if matches!(t, T::Ellipsis) {
                        self.bump();
                        items.push(Node::Ellipsis);
                        continue;
                    }
                    if sep_bp == 1 && !matches!(t, T::P(';')) {
                        break;
                    }
                    only_or &= is_or(t);
                    self.bump();
                    while self.peek().is_some_and(is_and_or) || self.peek() == Some(&T::P(',')) {
                        self.bump();
                    }
                    if self.at_terminator() {
                        break;
                    }
                    if self.peek() == Some(&T::Ellipsis) {
                        continue;
                    }
                    items.push(self.expr(sep_bp)?);
                }
                let inequality = |n: &Node| matches!(n, Node::Rel(_, ops) if ops.iter().all(|o| matches!(o, RelOp::Lt | RelOp::Le | RelOp::Gt | RelOp::Ge)));
                Ok(if items.len() == 1 {
                    items.pop().unwrap_or(Node::Ellipsis)
                } else if only_or && items.iter().all(inequality) {
                    // Inequalities joined by "or" are the union of their sets.
                    Node::Union(items)
                } else {
                    Node::List(items)
                })
            }
            T::Rel(op) => {
                let mut items = vec![left];
                let mut ops = vec![*op];
                self.bump();
                items.push(self.expr(3)?);
                while let Some(T::Rel(op)) = self.peek() {
                    self.bump();
                    ops.push(*op);
                    items.push(self.expr(3)?);
                }
                Ok(Node::Rel(items, ops))
            }
            T::Cmd("cup") => {
                self.bump();
                // `{2, 4}` written with bare braces beside `\cup` is a set.
                let right = if self.peek() == Some(&T::P('{')) {
                    braced_set(self.group()?)
                } else {
                    self.expr(5)?
                };
                let mut v = match left {
                    Node::Union(v) => v,
                    other => vec![other],
                };
                v.push(right);
                Ok(Node::Union(v))
            }
            T::Cmd(_) if lbp == 5 => unparseable("set intersection"),
            T::P(':') => {
                self.bump();
                // `12:00` is a time of day, not a ratio.
                if let (Node::Num(_, None), Some(tok)) = (&left, self.peek_at(0)) {
                    if let T::Num(_, None, d) = &tok.t {
                        if d.len() == 2 && d.starts_with('0') && !tok.space {
                            let l = crate::math::display::render(&left);
                            let d = d.clone();
                            self.bump();
                            return Ok(Node::Text(format!("{l}:{d}")));
                        }
                    }
                }
                let right = self.expr(6)?;
                Ok(Node::Div(Box::new(left), Box::new(right)))
            }
            T::P('+') => {
                self.bump();
                let right = self.expr(7)?;
                Ok(add(left, right))
            }
            T::P('-') => {
                self.bump();
                let right = self.expr(7)?;
                Ok(add(left, Node::Neg(Box::new(right))))
            }
            T::PlusMinus | T::MinusPlus => {
                self.bump();
                let right = self.expr(7)?;
                Ok(Node::PlusMinus(
                    Box::new(left),
                    Box::new(right),
                    matches!(t, T::MinusPlus),
                ))
            }
            T::P('*') => {
                self.bump();
                let right = self.expr(9)?;
                Ok(mul(left, right))
            }
            T::P('/') => {
                self.bump();
                let right = self.expr(9)?;
                Ok(Node::Div(Box::new(left), Box::new(right)))
            }
            T::Cmd("bmod") => {
                self.bump();
                let right = self.expr(9)?;
                Ok(Node::Mod(Box::new(left), Box::new(right)))
            }
            T::Percent => {
                self.bump();
                Ok(Node::Percent(Box::new(left)))
            }
            T::Text(_) => {
                // A trailing unit (`125 miles`, `10\text{ cm}^2`): decoration.
                self.bump();
                if self.peek() == Some(&T::P('^')) {
                    let at = |k: usize| self.peek_at(k).map(|t| &t.t);
                    match (at(1), at(2), at(3)) {
                        (Some(T::Num(..)), _, _) => self.pos += 2,
                        // `\text{ cm}^{2}`
                        (Some(T::P('{')), Some(T::Num(..)), Some(T::P('}'))) => self.pos += 4,
                        _ => {}
                    }
                }
                Ok(left)
            }
            T::P('^') => {
                self.bump();
                let right = self.expr(12)?;
                Ok(Node::Pow(Box::new(left), Box::new(right)))
            }
            T::P('!') => {
                self.bump();
                Ok(Node::Fact(Box::new(left)))
            }
            T::Degree => {
                self.bump();
                if self.trig == 0 {
                    return Ok(left);
                }
                if self.fn_arg {
                    self.angle_closed = true;
                }
                let per_degree = Node::Div(
                    Box::new(Node::Pi),
                    Box::new(Node::num(BigRational::from_integer(180.into()), None)),
                );
                Ok(mul(left, per_degree))
            }
            T::P('_') => {
                self.bump();
                let _ = self.expr(14)?;
                Ok(left)
            }
            _ => {
                // Juxtaposition: `2x`, `2\sqrt2`, `(a+5)(b+2)`; a unit in
                // braces (`14 \mathrm{cm}`) is decoration.
                let right = self.expr(9)?;
                if matches!(right, Node::Text(_)) && !matches!(left, Node::Text(_)) {
                    return Ok(left);
                }
                Ok(mul(left, right))
            }
        }
    }

    /// A braced group `{...}` (the lexer braces command arguments).
    fn group(&mut self) -> R<Node> {
        self.expect(&T::P('{'))?;
        if self.eat(&T::P('}')) {
            return Err(Rejection::Empty);
        }
        let saved = (self.fn_arg, self.abs_depth);
        self.fn_arg = false;
        self.abs_depth = 0;
        let n = self.expr(0)?;
        (self.fn_arg, self.abs_depth) = saved;
        // An unclosed group at the very end (a truncated answer) is closed.
        if self.peek().is_some() {
            self.expect(&T::P('}'))?;
        }
        Ok(n)
    }

    fn nud(&mut self) -> R<Node> {
        self.tick()?;
        let Some(t) = self.bump() else {
            return Err(Rejection::Empty);
        };
        match t {
            T::Num(v, dec, digits) => self.number(v, *dec, digits),
            T::Letter(name) => self.letter(name),
            T::Text(s) => {
                if is_and_or(t) && !self.at_terminator() {
                    return self.nud();
                }
                Ok(Node::Text(normalize_text(s)))
            }
            T::Cmd(c) => self.command(c),
            T::P('(') | T::P('[') => self.paren(t == &T::P('[')),
            T::P('{') => {
                self.pos -= 1;
                let n = self.group()?;
                // `{1, 3} \cup {2, 4}`: a braced list united with another
                // is a set (math-verify's README reads it so).
                Ok(if self.peek() == Some(&T::Cmd("cup")) {
                    braced_set(n)
                } else {
                    n
                })
            }
            T::SetOpen => {
                if self.eat(&T::SetClose) {
                    return Ok(Node::Set(vec![]));
                }
                let saved = self.abs_depth;
                self.abs_depth = 0;
                let inner = self.expr(0)?;
                self.abs_depth = saved;
                self.expect(&T::SetClose)?;
                Ok(Node::Set(match inner {
                    Node::List(v) => v,
                    other => vec![other],
                }))
            }
            T::P('|') => {
                self.abs_depth += 1;
                let inner = self.expr(2)?;
                self.abs_depth -= 1;
                self.expect(&T::P('|'))?;
                Ok(Node::Func(Func::Abs, Box::new(inner)))
            }
            T::P('-') => {
                let inner = self.expr(9)?;
                Ok(Node::Neg(Box::new(inner)))
            }
            T::P('+') => self.expr(9),
            T::PlusMinus | T::MinusPlus => {
                let inner = self.expr(9)?;
                Ok(Node::PlusMinus(
                    Box::new(Node::num(BigRational::zero(), None)),
                    Box::new(inner),
                    matches!(t, T::MinusPlus),
                ))
            }
            T::Begin(env) => {
                let system = is_system_env(env);
                let rows = self.matrix_rows()?;
                Ok(if system && rows.iter().all(|r| r.len() == 1) {
                    // A system of equations is the list of them (order
                    // ignored, as `x = 1, y = 2`).
                    let mut items: Vec<Node> = rows.into_iter().flatten().collect();
                    if items.len() == 1 {
                        items.pop().unwrap_or(Node::Ellipsis)
                    } else {
                        Node::List(items)
                    }
                } else {
                    Node::Matrix(rows)
                })
            }
            T::Ellipsis => Ok(Node::Ellipsis),
            other => Err(Rejection::Unparseable(format!("unexpected {other:?}"))),
        }
    }

    fn number(&mut self, v: &BigRational, dec: Option<i32>, digits: &str) -> R<Node> {
        let node = Node::num(v.clone(), dec);
        // `204_5`: a numeral in base 5.
        if self.peek() == Some(&T::P('_')) && dec.is_none() {
            let save = self.pos;
            self.bump();
            let braced = self.eat(&T::P('{'));
            if let Some(T::Num(b, None, _)) = self.peek() {
                let base = b.to_integer().to_u32().unwrap_or(0);
                self.bump();
                if (!braced || self.eat(&T::P('}'))) && (2..=36).contains(&base) {
                    let mut acc = BigInt::zero();
                    for ch in digits.chars() {
                        let d = ch.to_digit(10).unwrap_or(99);
                        if d >= base {
                            return unparseable("digit not valid in its base");
                        }
                        acc = acc * base + d;
                    }
                    return Ok(Node::num(BigRational::from_integer(acc), None));
                }
            }
            self.pos = save;
        }
        let Some(whole) = small_int(&node) else {
            return Ok(node);
        };
        // `4\frac{4}{9}`: a mixed number, when the fraction is proper.
        if self.peek() == Some(&T::Cmd("frac")) {
            let save = self.pos;
            self.bump();
            let num = self.group()?;
            let den = self.group()?;
            if let (Some(n), Some(d)) = (small_int(&num), small_int(&den)) {
                if !d.is_zero() && n < d && !n.is_negative() {
                    let v = BigRational::from_integer(whole) + BigRational::new(n, d);
                    return Ok(Node::num(v, None));
                }
            }
            self.pos = save;
            return Ok(node);
        }
        // `4 4/9` in plain text (a space, not a newline, between the parts).
        if let (Some(a), Some(slash), Some(b)) = (self.peek_at(0), self.peek_at(1), self.peek_at(2))
        {
            if let (T::Num(n, None, _), T::P('/'), T::Num(d, None, _)) = (&a.t, &slash.t, &b.t) {
                let after_ok = !matches!(
                    self.peek_at(3).map(|t| &t.t),
                    Some(T::P('^')) | Some(T::Letter(_)) | Some(T::P('(')) | Some(T::Cmd(_))
                );
                if a.space && !a.newline && n.is_integer() && d.is_integer() && after_ok {
                    self.pos += 3;
                    let (n, d) = (n.to_integer(), d.to_integer());
                    if d.is_zero() {
                        return Ok(add(
                            node,
                            Node::Div(
                                Box::new(Node::num(BigRational::from_integer(n), None)),
                                Box::new(Node::num(BigRational::zero(), None)),
                            ),
                        ));
                    }
                    if n >= d {
                        return Err(Rejection::Unparseable(
                            "an improper fraction in a mixed number".into(),
                        ));
                    }
                    let v = BigRational::from_integer(whole) + BigRational::new(n, d);
                    return Ok(Node::num(v, None));
                }
            }
        }
        Ok(node)
    }

    fn letter(&mut self, name: &str) -> R<Node> {
        let mut node = Node::Sym(name.to_string());
        if self.peek() == Some(&T::P('_')) {
            self.bump();
            let sub = if self.peek() == Some(&T::P('{')) {
                self.group()?
            } else {
                match self.bump() {
                    Some(T::Num(v, _, d)) => {
                        let _ = v;
                        Node::Sym(d.clone())
                    }
                    Some(T::Letter(l)) => Node::Sym(l.clone()),
                    _ => return unparseable("bad subscript"),
                }
            };
            node = match &sub {
                Node::Num(v, _) => Node::Sym(format!("{name}_{v}")),
                Node::Sym(s) if s.chars().all(|c| c.is_ascii_digit()) => {
                    Node::Sym(format!("{name}_{s}"))
                }
                _ => Node::Indexed(name.to_string(), Box::new(sub)),
            };
        }
        if FUNCTION_LETTERS.contains(&name)
            && self.peek() == Some(&T::P('('))
            && self.peek_at(0).is_some_and(|t| !t.space)
        {
            self.bump();
            let saved = self.abs_depth;
            self.abs_depth = 0;
            let inner = self.expr(0)?;
            self.abs_depth = saved;
            if !self.eat(&T::P(')')) {
                return unparseable("unclosed function call");
            }
            let args = match inner {
                Node::List(v) => v,
                other => vec![other],
            };
            let fname = match &node {
                Node::Sym(s) => s.clone(),
                _ => name.to_string(),
            };
            return Ok(Node::Apply(fname, args));
        }
        Ok(node)
    }

    fn command(&mut self, c: &'static str) -> R<Node> {
        match c {
            "frac" => {
                let a = self.group()?;
                let b = self.group()?;
                Ok(Node::Div(Box::new(a), Box::new(b)))
            }
            "binom" => {
                let a = self.group()?;
                let b = self.group()?;
                Ok(Node::Binom(Box::new(a), Box::new(b)))
            }
            "sqrt" => {
                let index = if self.eat(&T::P('[')) {
                    let i = self.expr(0)?;
                    self.expect(&T::P(']'))?;
                    i
                } else {
                    Node::num(BigRational::from_integer(2.into()), None)
                };
                let x = self.group()?;
                Ok(Node::Root(Box::new(index), Box::new(x)))
            }
            "pi" => Ok(Node::Pi),
            "infty" => Ok(Node::Inf),
            "emptyset" => Ok(Node::Set(vec![])),
            "sum" | "prod" => self.big_op(c == "sum"),
            "lim" => self.limit(),
            "lfloor" | "lceil" => {
                let saved = self.abs_depth;
                self.abs_depth = 0;
                let inner = self.expr(0)?;
                self.abs_depth = saved;
                let (close, f) = if c == "lfloor" {
                    ("rfloor", Func::Floor)
                } else {
                    ("rceil", Func::Ceil)
                };
                self.expect(&T::Cmd(close))?;
                Ok(Node::Func(f, Box::new(inner)))
            }
            "cup" | "cap" | "choose" | "rfloor" | "rceil" => unparseable(c),
            f => self.function(f),
        }
    }

    fn function(&mut self, f: &'static str) -> R<Node> {
        let mut power = None;
        let mut base = None;
        for _ in 0..2 {
            if self.eat(&T::P('^')) {
                power = Some(self.expr(12)?);
            } else if self.eat(&T::P('_')) {
                base = Some(self.expr(14)?);
            }
        }
        let inverse = matches!(&power, Some(Node::Neg(x)) if matches!(&**x, Node::Num(v, None) if v.is_one()));
        if inverse {
            power = None;
        }
        let trig = matches!(f, "sin" | "cos" | "tan" | "sec" | "csc" | "cot") && !inverse;
        self.trig += usize::from(trig);
        let arg = self.function_arg();
        self.trig -= usize::from(trig);
        let arg = arg?;
        let func = match (f, inverse) {
            ("sin", false) => Func::Sin,
            ("cos", false) => Func::Cos,
            ("tan", false) => Func::Tan,
            ("sin", true) | ("arcsin", _) => Func::Asin,
            ("cos", true) | ("arccos", _) => Func::Acos,
            ("tan", true) | ("arctan", _) => Func::Atan,
            ("sec", _) => Func::Sec,
            ("csc", _) => Func::Csc,
            ("cot", _) => Func::Cot,
            ("sinh", _) => Func::Sinh,
            ("cosh", _) => Func::Cosh,
            ("tanh", _) => Func::Tanh,
            ("exp", _) => Func::Exp,
            ("lg", _) => {
                base = Some(Node::num(BigRational::from_integer(10.into()), None));
                Func::Ln
            }
            _ => Func::Ln,
        };
        let mut node = match (func, base) {
            (Func::Ln, Some(b)) => Node::Log(Box::new(b), Box::new(arg)),
            (func, _) => Node::Func(func, Box::new(arg)),
        };
        if let Some(p) = power {
            node = Node::Pow(Box::new(node), Box::new(p));
        }
        Ok(node)
    }

    /// A function's argument: parenthesised, or a product up to the next
    /// function (`\sin 2x \cos x`).
    fn function_arg(&mut self) -> R<Node> {
        if self.peek() == Some(&T::P('(')) {
            self.bump();
            let saved = (self.fn_arg, self.abs_depth);
            self.fn_arg = false;
            self.abs_depth = 0;
            let a = self.expr(0);
            (self.fn_arg, self.abs_depth) = saved;
            let a = a?;
            if !self.eat(&T::P(')')) {
                self.expect(&T::P(']'))?;
            }
            Ok(a)
        } else {
            let saved = (self.fn_arg, self.angle_closed);
            self.fn_arg = true;
            self.angle_closed = false;
            let a = self.expr(8);
            (self.fn_arg, self.angle_closed) = saved;
            a
        }
    }

    /// `\lim_{x \to a} body`.
    fn limit(&mut self) -> R<Node> {
        self.expect(&T::P('_'))?;
        self.expect(&T::P('{'))?;
        let Some(T::Letter(var)) = self.bump() else {
            return unparseable("a limit without its variable");
        };
        self.expect(&T::Cmd("to"))?;
        let saved = (self.fn_arg, self.abs_depth);
        self.fn_arg = false;
        self.abs_depth = 0;
        let to = self.expr(0);
        (self.fn_arg, self.abs_depth) = saved;
        let to = to?;
        self.expect(&T::P('}'))?;
        let body = self.expr(8)?;
        Ok(Node::Limit(var.clone(), Box::new(to), Box::new(body)))
    }

    fn big_op(&mut self, sum: bool) -> R<Node> {
        let mut var = None;
        let mut lo = None;
        let mut hi = None;
        for _ in 0..2 {
            if self.eat(&T::P('_')) {
                let g = if self.peek() == Some(&T::P('{')) {
                    self.group()?
                } else {
                    self.expr(14)?
                };
                if let Node::Rel(items, ops) = g {
                    if let (Some(Node::Sym(v)), [RelOp::Eq]) = (items.first(), ops.as_slice()) {
                        var = Some(v.clone());
                        lo = items.into_iter().nth(1);
                    }
                }
            } else if self.eat(&T::P('^')) {
                hi = Some(self.expr(12)?);
            }
        }
        let (Some(var), Some(lo), Some(hi)) = (var, lo, hi) else {
            return unparseable("a sum or product without bounds");
        };
        let body = self.expr(8)?;
        Ok(Node::BigOp(
            sum,
            var,
            Box::new(lo),
            Box::new(hi),
            Box::new(body),
        ))
    }

    fn paren(&mut self, square: bool) -> R<Node> {
        if self.eat(&T::P(')')) || self.eat(&T::P(']')) {
            return Ok(Node::Tuple(vec![]));
        }
        let saved = (self.fn_arg, self.abs_depth);
        self.fn_arg = false;
        self.abs_depth = 0;
        let inner = self.expr(0)?;
        (self.fn_arg, self.abs_depth) = saved;
        let close_square = if self.eat(&T::P(']')) {
            true
        } else if self.eat(&T::P(')')) {
            false
        } else {
            return unparseable("unclosed parenthesis");
        };
        Ok(match inner {
            Node::List(items) => {
                if items.len() == 2 && (square || close_square) {
                    let mut it = items.into_iter();
                    let a = it.next().unwrap_or(Node::Inf);
                    let b = it.next().unwrap_or(Node::Inf);
                    Node::Interval(Box::new(a), Box::new(b), square, close_square)
                } else {
                    Node::Tuple(items)
                }
            }
            other => {
                if square != close_square {
                    return unparseable("mismatched brackets");
                }
                other
            }
        })
    }

    /// The rows of a matrix (or `cases`) environment, up to its `\end`.
    fn matrix_rows(&mut self) -> R<Vec<Vec<Node>>> {
        let mut rows: Vec<Vec<Node>> = Vec::new();
        let mut row = Vec::new();
        loop {
            match self.peek() {
                None => return unparseable("unclosed matrix"),
                Some(T::End(_)) => {
                    self.bump();
                    break;
                }
                Some(T::P('&')) => {
                    self.bump();
                }
                Some(T::RowSep) => {
                    self.bump();
                    rows.push(std::mem::take(&mut row));
                }
                Some(_) => {
                    let saved = self.abs_depth;
                    self.abs_depth = 0;
                    let cell = self.expr(0)?;
                    self.abs_depth = saved;
                    row.push(cell);
                }
            }
        }
        rows.push(row);
        rows.retain(|r| !r.is_empty());
        if rows.is_empty() {
            return Err(Rejection::Empty);
        }
        Ok(rows)
    }
}

fn add(a: Node, b: Node) -> Node {
    match a {
        Node::Add(mut v) => {
            v.push(b);
            Node::Add(v)
        }
        a => Node::Add(vec![a, b]),
    }
}

fn mul(a: Node, b: Node) -> Node {
    match a {
        Node::Mul(mut v) => {
            v.push(b);
            Node::Mul(v)
        }
        a => Node::Mul(vec![a, b]),
    }
}

/// Words compare case-insensitively, with one space between two words and
/// none elsewhere, without the parentheses of a choice letter (`(C)`).
pub(crate) fn normalize_text(s: &str) -> String {
    let mut t = String::with_capacity(s.len());
    let mut gap = false;
    for c in s.chars() {
        if c.is_whitespace() {
            gap = true;
            continue;
        }
        let word = |x: char| x.is_alphanumeric() || x == '\'';
        if gap && t.chars().next_back().is_some_and(word) && word(c) {
            t.push(' ');
        }
        gap = false;
        t.extend(c.to_lowercase());
    }
    let t = t.trim_matches(|c| c == '.' || c == ',' || c == ':');
    let stripped = t
        .strip_prefix('(')
        .and_then(|x| x.strip_suffix(')'))
        .unwrap_or(t);
    stripped.to_string()
}

/// Words that name mathematics rather than say something: functions,
/// constants, Greek letters, and the separators "and"/"or".
const MATH_WORDS: &[&str] = &[
    "and",
    "or",
    "und",
    "sin",
    "cos",
    "tan",
    "sec",
    "csc",
    "cot",
    "arcsin",
    "arccos",
    "arctan",
    "sinh",
    "cosh",
    "tanh",
    "ln",
    "log",
    "exp",
    "lg",
    "sqrt",
    "pi",
    "inf",
    "infinity",
    "infty",
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "rho",
    "sigma",
    "tau",
    "upsilon",
    "phi",
    "chi",
    "psi",
    "omega",
    "mod",
    "bmod",
    "degree",
    "degrees",
    "deg",
    "percent",
    "percentage",
    "pct",
];

/// Two-letter answers that are words, not products of two names.
const SHORT_WORDS: &[&str] = &["no", "ok"];

/// An answer written in words only (`all odd positive integers`, `New
/// York`, `\text{no solution}`, `No.`) as its normalised text: the words in
/// lower case, one space apart. `None` when the answer is not prose: it has
/// anything but words, or no word that is one (`x y`, `\sin x`, `x and y`
/// are mathematics). A single word of three or more letters is left to the
/// lexer, which reads it as a word too.
pub(crate) fn prose(s: &str) -> Option<String> {
    if !s.bytes().any(|b| b.is_ascii_alphabetic()) {
        return None; // no word at all (`42`, `(3, 7)`)
    }
    let mut t = s.trim();
    loop {
        let before = t.len();
        for (open, close) in [("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"), ("**", "**")] {
            if let Some(inner) = t.strip_prefix(open).and_then(|x| x.strip_suffix(close)) {
                t = inner.trim();
            }
        }
        for cmd in [
            "\\text{",
            "\\textbf{",
            "\\textit{",
            "\\textrm{",
            "\\mathrm{",
            "\\mbox{",
            "\\emph{",
            "\\textnormal{",
        ] {
            if let Some(inner) = t.strip_prefix(cmd).and_then(|x| x.strip_suffix('}')) {
                if !inner.contains(['{', '}']) {
                    t = inner.trim();
                }
            }
        }
        t = t.trim_end_matches(['.', '!', ',', ';', ':']).trim_end();
        if t.len() == before {
            break;
        }
    }
    let words: Vec<&str> = t.split_whitespace().collect();
    let wordlike = |w: &&str| {
        let b = w.as_bytes();
        b.first().is_some_and(u8::is_ascii_alphabetic)
            && b.last().is_some_and(u8::is_ascii_alphabetic)
            && b.iter()
                .all(|c| c.is_ascii_alphabetic() || matches!(c, b'\'' | b'-'))
    };
    if words.is_empty() || !words.iter().all(wordlike) {
        return None;
    }
    let lower: Vec<String> = words.iter().map(|w| w.to_ascii_lowercase()).collect();
    let content = |w: &String| w.len() >= 3 && !MATH_WORDS.contains(&w.as_str());
    let is_prose = if lower.len() == 1 {
        SHORT_WORDS.contains(&lower[0].as_str())
    } else {
        lower.iter().any(content)
    };
    is_prose.then(|| lower.join(" "))
}

/// A braced group operand of `\cup` as the finite set it lists; a group
/// holding a structure (an interval, a set) is that structure.
fn braced_set(n: Node) -> Node {
    match n {
        Node::List(v) => Node::Set(v),
        other if other.is_structure() => other,
        other => Node::Set(vec![other]),
    }
}
