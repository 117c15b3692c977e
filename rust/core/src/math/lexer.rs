//! Tokens of plain and LaTeX answers.
//!
//! The lexer drops decoration (`$`, `\left`, spacing, `^\circ`, currency) and
//! reads numbers whole: thousands separators (`1,080`, `1\,080`, `1,\!000`,
//! `1 000`), decimals, scientific notation and repeating decimals
//! (`0.\overline{3}`) become one exact rational. Brace-less arguments of
//! `\frac34`, `\sqrt3` and `\binom52` are given braces here, so the parser sees
//! one shape.

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Zero};

use super::{Limits, Rejection};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RelOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Approx,
    In,
    /// `\perp`, `⊥`.
    Perp,
    /// `\parallel`, `∥`.
    Parallel,
    /// `\sim`, `∼` (similar figures).
    Sim,
    /// `\cong`, `≅` (congruent figures).
    Cong,
}

impl RelOp {
    /// Relations that hold or fail whichever way round they are written
    /// (`AB \perp CD` is `CD \perp AB`).
    pub(crate) fn symmetric(self) -> bool {
        matches!(
            self,
            RelOp::Eq | RelOp::Ne | RelOp::Perp | RelOp::Parallel | RelOp::Sim | RelOp::Cong
        )
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum T {
    /// A number literal: its value, for a decimal (written with a decimal
    /// point or exponent, an approximation) the power of ten of its last
    /// digit, and its digits (for `204_5`).
    Num(BigRational, Option<i32>, String),
    /// A one-letter (or Greek, or unknown-command) symbol.
    Letter(String),
    /// Words: `\text{...}` contents and plain runs of letters.
    Text(String),
    /// A command that the parser knows (`frac`, `sqrt`, `sin`, `pi`, ...).
    Cmd(&'static str),
    /// `+ - * / ^ _ ! ( ) [ ] { } | , ; : &`
    P(char),
    Rel(RelOp),
    PlusMinus,
    MinusPlus,
    Percent,
    RowSep,
    SetOpen,
    SetClose,
    Ellipsis,
    Begin(String),
    End(String),
    Degree,
}

#[derive(Debug, Clone)]
pub(crate) struct Token {
    pub t: T,
    /// Whitespace (not a newline) right before the token.
    pub space: bool,
    /// A newline right before the token.
    pub newline: bool,
}

const FUNCS: &[&str] = &[
    "sin", "cos", "tan", "sec", "csc", "cot", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
    "ln", "log", "exp", "lg",
];
const UNITS: &[&str] = &[
    "cm", "mm", "km", "kg", "mg", "ml", "hr", "hrs", "ft", "in", "lb", "lbs", "oz", "mi", "yd",
    "sq", "mph", "kmh", "s", "m", "g", "h", "l",
];
const SPACING: &[&str] = &[
    ",",
    "!",
    ";",
    ":",
    " ",
    "quad",
    "qquad",
    "left",
    "right",
    "big",
    "Big",
    "bigg",
    "Bigg",
    "bigl",
    "bigr",
    "Bigl",
    "Bigr",
    "biggl",
    "biggr",
    "displaystyle",
    "textstyle",
    "limits",
    "nolimits",
    "$",
    "(",
    ")",
    "[",
    "]",
    "boxed",
    "fbox",
    "mathrm",
    "mathbf",
    "mathit",
    "mathsf",
    "mathcal",
    "bm",
    "boldsymbol",
    "vec",
    "hat",
    "bar",
    "overrightarrow",
    "overline",
    "underline",
    "widehat",
    "tilde",
    "operatorname",
    "rm",
    "bf",
    "it",
    "hspace",
    "vspace",
    "newline",
    "degree",
    "circ",
    "euro",
    "pounds",
    "notag",
    "nonumber",
    "cr",
    "mathrel",
    "phantom",
    "hline",
    "cline",
    "dollar",
    "noindent",
    "tag",
];

fn is_func(name: &str) -> Option<&'static str> {
    FUNCS.iter().copied().find(|f| *f == name)
}

pub(crate) struct Lexer<'a> {
    s: &'a [u8],
    src: &'a str,
    pos: usize,
    out: Vec<Token>,
    limits: &'a Limits,
    space: bool,
    newline: bool,
    depth: usize,
    /// Unclosed `(`, `[` and `\{`: inside them a comma separates elements
    /// (`(12,102)` is a pair, not 12102).
    brackets: i64,
}

type R<T> = Result<T, Rejection>;

pub(crate) fn lex(src: &str, limits: &Limits) -> R<Vec<Token>> {
    let mut lx = Lexer {
        s: src.as_bytes(),
        src,
        pos: 0,
        // An answer's tokens, usually: growing from empty cost three or four
        // reallocations per answer parsed (perf, `verify` one call each).
        out: Vec::with_capacity(src.len().clamp(8, 64)),
        limits,
        space: false,
        newline: false,
        depth: 0,
        brackets: 0,
    };
    lx.run(src.len())?;
    Ok(lx.out)
}

impl<'a> Lexer<'a> {
    fn peek(&self) -> u8 {
        self.s.get(self.pos).copied().unwrap_or(0)
    }
    fn at(&self, i: usize) -> u8 {
        self.s.get(i).copied().unwrap_or(0)
    }

    fn push(&mut self, t: T) -> R<()> {
        if self.out.len() >= self.limits.max_tokens {
            return Err(Rejection::OverBudget(format!(
                "more than {} tokens",
                self.limits.max_tokens
            )));
        }
        match t {
            T::P('(') | T::P('[') | T::SetOpen => self.brackets += 1,
            T::P(')') | T::P(']') | T::SetClose => self.brackets -= 1,
            _ => {}
        }
        self.out.push(Token {
            t,
            space: self.space,
            newline: self.newline,
        });
        self.space = false;
        self.newline = false;
        Ok(())
    }

    fn starts(&self, pat: &str) -> bool {
        self.s[self.pos.min(self.s.len())..].starts_with(pat.as_bytes())
    }

    /// Index just past the `}` that closes the `{` at `open`.
    fn matching_brace(&self, open: usize, end: usize) -> R<usize> {
        let mut depth = 0usize;
        let mut i = open;
        while i < end {
            match self.s[i] {
                b'\\' => i += 1,
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(i + 1);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        Err(Rejection::Unparseable("unbalanced braces".into()))
    }

    fn run(&mut self, end: usize) -> R<()> {
        self.depth += 1;
        if self.depth > self.limits.max_depth {
            return Err(Rejection::OverBudget(format!(
                "nesting deeper than {}",
                self.limits.max_depth
            )));
        }
        while self.pos < end {
            let c = self.peek();
            match c {
                b' ' | b'\t' | b'~' => {
                    self.space = true;
                    self.pos += 1;
                }
                b'\n' | b'\r' => {
                    self.newline = true;
                    self.pos += 1;
                }
                b'$' => self.pos += 1,
                b'0'..=b'9' => self.number(end)?,
                b'.' if self.at(self.pos + 1).is_ascii_digit() => self.number(end)?,
                b'.' if self.starts("...") => {
                    self.pos += 3;
                    self.push(T::Ellipsis)?;
                }
                b'.' => self.pos += 1,
                b'\\' => self.command(end)?,
                b'a'..=b'z' | b'A'..=b'Z' => self.letters(end)?,
                b'<' | b'>' | b'=' | b'!' => {
                    let two = self.at(self.pos + 1) == b'=';
                    let op = match (c, two) {
                        (b'<', true) => Some(RelOp::Le),
                        (b'>', true) => Some(RelOp::Ge),
                        (b'!', true) => Some(RelOp::Ne),
                        (b'=', _) => Some(RelOp::Eq),
                        (b'<', false) => Some(RelOp::Lt),
                        (b'>', false) => Some(RelOp::Gt),
                        _ => None,
                    };
                    self.pos += if two { 2 } else { 1 };
                    match op {
                        Some(op) => self.push(T::Rel(op))?,
                        None => self.push(T::P('!'))?,
                    }
                }
                b'%' => {
                    self.pos += 1;
                    self.push(T::Percent)?;
                }
                b'^' => {
                    // `^\circ`, `^{\circ}`: degrees (decoration, except inside
                    // a trigonometric function).
                    let rest = &self.src[self.pos + 1..end];
                    let rest_t = rest.trim_start();
                    let skip = rest.len() - rest_t.len();
                    if let Some(n) = ["\\circ", "{\\circ}", "{ \\circ }", "{\\circ }", "{ \\circ}"]
                        .iter()
                        .find(|p| rest_t.starts_with(**p))
                        .map(|p| p.len())
                    {
                        self.pos += 1 + skip + n;
                        self.degree(end)?;
                    } else if let Some(n) = self.ordinal_superscript(end) {
                        // `3^{\text{rd}}`, `2^{nd}`: an ordinal, not a power.
                        self.pos += n;
                    } else {
                        self.pos += 1;
                        self.push(T::P('^'))?;
                    }
                }
                b'+' | b'-' | b'*' | b'/' | b'_' | b'(' | b')' | b'[' | b']' | b'{' | b'}'
                | b'|' | b',' | b';' | b':' | b'&' => {
                    self.pos += 1;
                    self.push(T::P(c as char))?;
                }
                0x0c => self.escape(end, 'f')?,
                0x07 => self.escape(end, 'a')?,
                0x08 => self.escape(end, 'b')?,
                0x0b => self.escape(end, 'v')?,
                b'\'' => self.prime()?,
                b'?' => {
                    return Err(Rejection::Unparseable(
                        "a question mark in the answer".into(),
                    ))
                }
                b'"' | b'`' | b'#' | b'@' => self.pos += 1,
                _ if c >= 0x80 => self.unicode(end)?,
                _ => {
                    return Err(Rejection::Unparseable(format!(
                        "a control character (U+{c:04X}) in the answer"
                    )))
                }
            }
        }
        self.depth -= 1;
        Ok(())
    }

    fn unicode(&mut self, end: usize) -> R<()> {
        let ch = self.src[self.pos..end].chars().next().unwrap_or(' ');
        self.pos += ch.len_utf8();
        let t = match ch {
            'π' => T::Cmd("pi"),
            '∞' => T::Cmd("infty"),
            '≤' | '⩽' => T::Rel(RelOp::Le),
            '≥' | '⩾' => T::Rel(RelOp::Ge),
            '≠' => T::Rel(RelOp::Ne),
            '≈' => T::Rel(RelOp::Approx),
            '∈' => T::Rel(RelOp::In),
            '±' => T::PlusMinus,
            '∓' => T::MinusPlus,
            '√' => T::Cmd("sqrt"),
            '∪' => T::Cmd("cup"),
            '∩' => T::Cmd("cap"),
            '…' => T::Ellipsis,
            '⌊' => T::Cmd("lfloor"),
            '⌋' => T::Cmd("rfloor"),
            '⌈' => T::Cmd("lceil"),
            '⌉' => T::Cmd("rceil"),
            c if c.is_alphabetic() => T::Letter(c.to_string()),
            '°' => return self.degree(end),
            // Currency signs are decoration; every other symbol was read by
            // `unicode::normalize` or voids the answer (none vanishes).
            c if is_currency(c) => return Ok(()),
            c => {
                return Err(Rejection::Unparseable(format!(
                    "an unknown symbol (U+{:04X}) in the answer",
                    u32::from(c)
                )))
            }
        };
        if matches!(t, T::Cmd("sqrt")) {
            self.push(t)?;
            return self.braced_args(end, 1);
        }
        self.push(t)
    }

    fn letters(&mut self, end: usize) -> R<()> {
        let start = self.pos;
        while self.pos < end && self.peek().is_ascii_alphabetic() {
            self.pos += 1;
        }
        let run = &self.src[start..self.pos];
        // `4th`, `21st`: an ordinal suffix on a number is decoration.
        if is_ordinal(run)
            && !self.space
            && matches!(self.out.last().map(|t| &t.t), Some(T::Num(..)))
        {
            return Ok(());
        }
        // A one-letter name carrying digits (`x1`, `y12`) is the subscripted
        // name (`x_1`), as written in answers like `(x1, y1)`.
        if run.len() == 1 && self.peek().is_ascii_digit() {
            let d0 = self.pos;
            while self.pos < end && self.pos - d0 < 3 && self.peek().is_ascii_digit() {
                self.pos += 1;
            }
            if !self.peek().is_ascii_digit() && self.peek() != b'.' {
                let digits = self.src[d0..self.pos].trim_start_matches('0');
                let digits = if digits.is_empty() { "0" } else { digits };
                return self.push(T::Letter(format!("{run}_{digits}")));
            }
            self.pos = d0;
        }
        // A compound unit written bare: `km/h`, `cm/s`.
        if run.len() >= 2 && UNITS.contains(&run) && self.peek() == b'/' {
            let mut j = self.pos + 1;
            while j < end && self.s[j].is_ascii_alphabetic() {
                j += 1;
            }
            if UNITS.contains(&&self.src[self.pos + 1..j]) {
                let unit = self.src[start..j].to_string();
                self.pos = j;
                return self.push(T::Text(unit));
            }
        }
        // Split where a lower-case letter meets an upper-case one (`orW`).
        let mut pieces = Vec::new();
        let mut from = 0;
        let b = run.as_bytes();
        for i in 1..b.len() {
            if b[i - 1].is_ascii_lowercase() && b[i].is_ascii_uppercase() {
                pieces.push(&run[from..i]);
                from = i;
            }
        }
        pieces.push(&run[from..]);
        for piece in pieces {
            let lower = piece.to_ascii_lowercase();
            if piece.len() == 1 {
                self.push(T::Letter(piece.to_string()))?;
            } else if let Some(f) = is_func(&lower) {
                self.push(T::Cmd(f))?;
            } else if lower == "pi" {
                self.push(T::Cmd("pi"))?;
            } else if lower == "sqrt" {
                self.push(T::Cmd("sqrt"))?;
                self.braced_args(end, 1)?;
            } else if matches!(lower.as_str(), "degree" | "degrees" | "deg") {
                self.push(T::Degree)?;
            } else if matches!(lower.as_str(), "percent" | "percentage" | "pct") {
                self.push(T::Percent)?;
            } else if lower == "inf" || lower == "infinity" || lower == "oo" {
                self.push(T::Cmd("infty"))?;
            } else if piece.len() >= 3 || UNITS.contains(&lower.as_str()) || lower == "or" {
                self.push(T::Text(piece.to_string()))?;
            } else {
                for ch in piece.chars() {
                    self.push(T::Letter(ch.to_string()))?;
                }
            }
        }
        Ok(())
    }

    fn command(&mut self, end: usize) -> R<()> {
        let next = self.at(self.pos + 1);
        if matches!(next, 0x07 | 0x08 | 0x0b | 0x0c) {
            // `\f`, `\b`, `\v`, `\a` read by a non-raw Python string as a
            // control character after a backslash.
            self.pos += 1;
            let letter = match next {
                0x07 => 'a',
                0x08 => 'b',
                0x0b => 'v',
                _ => 'f',
            };
            return self.escape(end, letter);
        }
        if next == b'\\' {
            // `\\le` (a doubled backslash, as in escaped sources) is `\le`;
            // `\\` alone separates matrix rows.
            if self.at(self.pos + 2).is_ascii_alphabetic() {
                self.pos += 1;
                return self.command(end);
            }
            self.pos += 2;
            return self.push(T::RowSep);
        }
        if !next.is_ascii_alphabetic() {
            let width = self.src[self.pos + 1..]
                .chars()
                .next()
                .map_or(1, char::len_utf8);
            self.pos += 1 + width;
            return match next {
                b'{' => self.push(T::SetOpen),
                b'}' => self.push(T::SetClose),
                b'%' => self.push(T::Percent),
                b'|' => self.push(T::P('|')),
                b',' | b'!' | b';' | b':' | b' ' | b'>' => {
                    self.space = true;
                    Ok(())
                }
                // Accents change the character they sit on (`\=3`, `\~x`).
                b'\'' | b'"' | b'^' | b'~' | b'=' | b'.' | b'`' => Err(Rejection::Unparseable(
                    "an accent on a character of the answer".into(),
                )),
                _ => Ok(()),
            };
        }
        let start = self.pos + 1;
        let mut i = start;
        while i < end && self.s[i].is_ascii_alphabetic() {
            i += 1;
        }
        let src = self.src;
        self.pos = i;
        self.named(&src[start..i], Some(start), end)
    }

    /// The command `\name` (the cursor just after it). `start` is where the
    /// name begins in the source, `None` when it was rebuilt from a control
    /// character.
    fn named(&mut self, name: &str, start: Option<usize>, end: usize) -> R<()> {
        let t = match name {
            "frac" | "dfrac" | "tfrac" | "cfrac" => {
                self.push(T::Cmd("frac"))?;
                return self.braced_args(end, 2);
            }
            "binom" | "dbinom" | "tbinom" => {
                self.push(T::Cmd("binom"))?;
                return self.braced_args(end, 2);
            }
            "sqrt" => {
                self.push(T::Cmd("sqrt"))?;
                return self.braced_args(end, 1);
            }
            "mathbb" => {
                let save = self.pos;
                if self.group_text(end)?.trim() == "R" {
                    // The real line.
                    for t in [
                        T::P('('),
                        T::P('-'),
                        T::Cmd("infty"),
                        T::P(','),
                        T::Cmd("infty"),
                    ] {
                        self.push(t)?;
                    }
                    return self.push(T::P(')'));
                }
                self.pos = save;
                self.space = true;
                return Ok(());
            }
            "mathrm" | "rm" | "mathit" | "operatorname" if self.unit_group(end) => {
                return self.text(end);
            }
            "text" | "textbf" | "textit" | "textrm" | "textnormal" | "mbox" | "textsf"
            | "texttt" | "emph" | "mathtt" => return self.text(end),
            "begin" | "end" => {
                let env = self.group_text(end)?;
                let env = env.trim_end_matches('*').to_string();
                if env == "array" {
                    self.group_text(end)?; // the column spec
                }
                return if is_matrix_env(&env) || is_system_env(&env) {
                    self.push(if name == "begin" {
                        T::Begin(env)
                    } else {
                        T::End(env)
                    })
                } else {
                    Ok(())
                };
            }
            "le" | "leq" | "leqslant" | "leqq" => T::Rel(RelOp::Le),
            "ge" | "geq" | "geqslant" | "geqq" => T::Rel(RelOp::Ge),
            "ne" | "neq" => T::Rel(RelOp::Ne),
            "lt" => T::Rel(RelOp::Lt),
            "gt" => T::Rel(RelOp::Gt),
            "approx" | "simeq" | "thickapprox" => T::Rel(RelOp::Approx),
            "in" => T::Rel(RelOp::In),
            "perp" | "bot" => T::Rel(RelOp::Perp),
            "parallel" => T::Rel(RelOp::Parallel),
            "sim" | "thicksim" => T::Rel(RelOp::Sim),
            "cong" => T::Rel(RelOp::Cong),
            // `\not=` is `\ne`; every other negated relation (`\not\in`,
            // `\not<`, `\notin`, `\nleq`) voids the answer: it is no value.
            "not" => {
                let rest = self.src[self.pos..end].trim_start();
                if let Some(after) = rest.strip_prefix('=') {
                    self.pos = end - after.len();
                    T::Rel(RelOp::Ne)
                } else {
                    return Err(Rejection::Unparseable("a negated relation".into()));
                }
            }
            "notin" | "nleq" | "ngeq" | "nless" | "ngtr" | "nleqslant" | "ngeqslant" | "nleqq"
            | "ngeqq" | "lneq" | "gneq" | "lneqq" | "gneqq" | "nparallel" | "nmid" | "nsubset"
            | "nsubseteq" | "nsupseteq" | "ncong" | "nsim" | "nequiv" | "nexists" => {
                return Err(Rejection::Unparseable("a negated relation".into()))
            }
            "equiv" | "coloneqq" => T::Rel(RelOp::Eq),
            "pm" => T::PlusMinus,
            "mp" => T::MinusPlus,
            "cdot" | "times" | "ast" | "cross" => T::P('*'),
            "div" => T::P('/'),
            "lvert" | "rvert" | "vert" | "lVert" | "rVert" | "Vert" => T::P('|'),
            "lbrace" => T::SetOpen,
            "rbrace" => T::SetClose,
            "langle" => T::P('('),
            "rangle" => T::P(')'),
            "lfloor" => T::Cmd("lfloor"),
            "rfloor" => T::Cmd("rfloor"),
            "lceil" => T::Cmd("lceil"),
            "rceil" => T::Cmd("rceil"),
            "dots" | "ldots" | "cdots" | "dotsc" | "dotsb" | "cdot s" => T::Ellipsis,
            "infty" | "infinity" => T::Cmd("infty"),
            "pi" => T::Cmd("pi"),
            "cup" => T::Cmd("cup"),
            "cap" => T::Cmd("cap"),
            "sum" => T::Cmd("sum"),
            "prod" => T::Cmd("prod"),
            "emptyset" | "varnothing" => T::Cmd("emptyset"),
            "choose" => T::Cmd("choose"),
            "colon" => T::P(':'),
            "lim" => T::Cmd("lim"),
            "to" | "rightarrow" | "longrightarrow" => T::Cmd("to"),
            "bmod" | "mod" => T::Cmd("bmod"),
            "degree" => return self.degree(end),
            "and" => T::Text("and".into()),
            "percent" => T::Percent,
            _ if is_func(name).is_some() => T::Cmd(is_func(name).unwrap_or("sin")),
            _ if name == "arcsec" || name == "arccsc" || name == "arccot" => {
                T::Letter(name.to_string())
            }
            _ if SPACING.contains(&name) => {
                if name == "left" || name == "right" {
                    if self.peek() == b'.' {
                        self.pos += 1;
                    }
                } else if matches!(name, "hspace" | "vspace" | "phantom" | "tag") {
                    self.group_text(end)?;
                }
                self.space = true;
                return Ok(());
            }
            _ => {
                // `\quadx`: a spacing command run into a letter.
                for p in ["qquad", "quad"] {
                    if let Some(rest) = name.strip_prefix(p) {
                        self.space = true;
                        return self.push(T::Letter(rest.to_string()));
                    }
                }
                // `\lex`, `\pir`: a relation, operator or `\pi` run into a
                // one-letter name (`\le x`, `\pi r`), not a name `lex`.
                if let (Some(k), Some(start)) = (run_into_letter(name), start) {
                    self.pos = start - 1;
                    return self.command(start + k);
                }
                T::Letter(name.to_string())
            }
        };
        self.push(t)
    }

    /// A form feed followed by letters (`\x0crac`) was `\f...` (`\frac`).
    /// A control character at the cursor that a non-raw Python string made
    /// of `\f`, `\b`, `\v` or `\a` (`letter`): followed by letters, it was
    /// the command they spell with `letter` (`\x0crac` is `\frac`, `\x08inom`
    /// is `\binom`); alone, a form feed or vertical tab is a space and the
    /// others void the answer.
    fn escape(&mut self, end: usize, letter: char) -> R<()> {
        let from = self.pos + 1;
        let mut i = from;
        while i < end && self.s[i].is_ascii_alphabetic() {
            i += 1;
        }
        self.pos = i;
        if i == from {
            if matches!(letter, 'f' | 'v') {
                self.space = true;
                return Ok(());
            }
            return Err(Rejection::Unparseable(
                "a control character in the answer".into(),
            ));
        }
        let name = format!("{letter}{}", &self.src[from..i]);
        self.named(&name, None, end)
    }

    /// `'` (a prime): after a one-letter name it makes a new name (`f'`,
    /// `x''`); inside a word it is an apostrophe; anywhere else (`5'`, feet or
    /// minutes) it voids the answer.
    fn prime(&mut self) -> R<()> {
        self.pos += 1;
        let glued = !self.space && !self.newline;
        match self.out.last_mut() {
            Some(Token {
                t: T::Letter(name), ..
            }) if glued => {
                name.push('\'');
                Ok(())
            }
            Some(Token { t: T::Text(_), .. }) if glued => Ok(()),
            _ => Err(Rejection::Unparseable(
                "a prime or apostrophe after a value".into(),
            )),
        }
    }

    /// `°` at the cursor's left: push it, with a temperature scale glued to
    /// it (`25°C`, `25^\circ\mathrm{C}`, `25^{\circ} \text{F}`) taken as part
    /// of the unit.
    fn degree(&mut self, end: usize) -> R<()> {
        self.push(T::Degree)?;
        let rest = &self.src[self.pos..end];
        let mut t = rest.trim_start_matches([' ', '~']);
        if let Some(u) = t.strip_prefix("\\,") {
            t = u.trim_start();
        }
        for wrap in ["\\text", "\\mathrm", "\\textrm", "\\rm", ""] {
            let Some(u) = t.strip_prefix(wrap) else {
                continue;
            };
            let u = u.trim_start();
            let (inner, after) = if let Some(b) = u.strip_prefix('{') {
                let Some(k) = b.find('}') else {
                    return Ok(());
                };
                (b[..k].trim(), &b[k + 1..])
            } else if matches!(wrap, "" | "\\rm") {
                let w = u.chars().next().map_or(0, char::len_utf8);
                (&u[..w], &u[w..])
            } else {
                return Ok(());
            };
            if matches!(inner, "C" | "F") && !after.starts_with(|c: char| c.is_ascii_alphabetic()) {
                self.pos = end - after.len();
            }
            return Ok(());
        }
        Ok(())
    }

    /// The length of an ordinal superscript at the cursor (on `^`) right
    /// after a number: `^{\text{th}}`, `^{nd}`, `^\text{rd}`, `^{\mathrm{st}}`.
    fn ordinal_superscript(&self, end: usize) -> Option<usize> {
        if !matches!(self.out.last().map(|t| &t.t), Some(T::Num(..))) {
            return None;
        }
        let rest = &self.src[self.pos + 1..end];
        let mut t = rest.trim_start();
        let braced = t.starts_with('{');
        if braced {
            t = t[1..].trim_start();
        }
        let mut inner_braced = false;
        for wrap in [
            "\\text", "\\mathrm", "\\textrm", "\\rm", "\\textit", "\\mathit",
        ] {
            if let Some(u) = t.strip_prefix(wrap) {
                t = u.trim_start();
                if let Some(u) = t.strip_prefix('{') {
                    t = u.trim_start();
                    inner_braced = true;
                }
                break;
            }
        }
        let word_len = t.bytes().take_while(u8::is_ascii_alphabetic).count();
        if !is_ordinal(&t[..word_len]) {
            return None;
        }
        t = t[word_len..].trim_start();
        for close in [inner_braced, braced] {
            if close {
                t = t.strip_prefix('}')?.trim_start();
            }
        }
        if !braced && !inner_braced && word_len != 2 {
            return None;
        }
        Some(1 + rest.len() - t.len())
    }

    /// Whether the `{...}` group at the cursor holds a unit (`\mathrm{cm}`,
    /// `\mathrm{m/s}`, `\mathrm{km/h}`, `\mathrm{meters}`): lower-case words
    /// that are known units or longer than two letters, joined by `/` or
    /// spaces. A single letter that is no unit (`\mathrm{e}`) is not one.
    fn unit_group(&self, end: usize) -> bool {
        let mut i = self.pos;
        while i < end && self.s[i] == b' ' {
            i += 1;
        }
        if self.at(i) != b'{' {
            return false;
        }
        let Some(close) = self.src[i..end].find('}').map(|k| i + k) else {
            return false;
        };
        let inner = self.src[i + 1..close].trim();
        !inner.is_empty()
            && inner.split(['/', ' ']).filter(|w| !w.is_empty()).all(|w| {
                w.bytes().all(|b| b.is_ascii_lowercase())
                    && (UNITS.contains(&w) || w.len() >= 3)
                    && !matches!(w, "sin" | "cos" | "tan" | "log" | "exp")
            })
    }

    /// The raw contents of the `{...}` group at the cursor (after spaces).
    fn group_text(&mut self, end: usize) -> R<String> {
        while self.pos < end && self.peek() == b' ' {
            self.pos += 1;
        }
        if self.peek() != b'{' {
            return Ok(String::new());
        }
        let close = self.matching_brace(self.pos, end)?;
        let inner = self.src[self.pos + 1..close - 1].to_string();
        self.pos = close;
        Ok(inner)
    }

    fn text(&mut self, end: usize) -> R<()> {
        while self.pos < end && self.peek() == b' ' {
            self.pos += 1;
        }
        if self.peek() != b'{' {
            return Ok(());
        }
        let open = self.pos;
        let close = self.matching_brace(open, end)?;
        let inner = self.src[open + 1..close - 1].trim();
        if inner.is_empty() {
            self.pos = close;
            return Ok(());
        }
        let numeric_start = inner
            .trim_start_matches(['-', '+', '$'])
            .starts_with(|c: char| c.is_ascii_digit());
        if !inner.bytes().any(|b| b.is_ascii_alphabetic()) || inner.contains('\\') || numeric_start
        {
            // `\text{13}`, `\text{$x$}`, `\text{3 hours}`: mathematics
            // inside text.
            self.pos = open + 1;
            self.run(close - 1)?;
            self.pos = close;
            return Ok(());
        }
        self.pos = close;
        let t = inner.to_string();
        let lower = t.to_ascii_lowercase();
        if matches!(lower.as_str(), "percent" | "percentage" | "pct" | "%") {
            return self.push(T::Percent);
        }
        self.push(T::Text(t))
    }

    /// Emit `n` arguments, each as `{ tokens }`, whether or not the source
    /// braced them (`\frac34`, `\sqrt3`, `\frac\pi2`). `\sqrt[n]` keeps its
    /// optional index in brackets.
    fn braced_args(&mut self, end: usize, n: usize) -> R<()> {
        for k in 0..n {
            while self.pos < end && matches!(self.peek(), b' ' | b'\n' | b'\t') {
                self.pos += 1;
            }
            if k == 0 && n == 1 && self.peek() == b'[' {
                // index of an n-th root
                let close = self.src[self.pos..end]
                    .find(']')
                    .map(|i| self.pos + i)
                    .ok_or_else(|| Rejection::Unparseable("unclosed root index".into()))?;
                self.push(T::P('['))?;
                self.pos += 1;
                self.run(close)?;
                self.pos = close + 1;
                self.push(T::P(']'))?;
                while self.pos < end && self.peek() == b' ' {
                    self.pos += 1;
                }
            }
            if k == 0 && n == 1 && self.src[self.pos..end].starts_with("{}{") {
                // `\sqrt{}{3}`: an empty index written in braces; the
                // radicand is the group after it.
                self.pos += 2;
            }
            if self.pos >= end {
                return Err(Rejection::Unparseable("missing argument".into()));
            }
            self.push(T::P('{'))?;
            match self.peek() {
                b'{' => {
                    let close = self.matching_brace(self.pos, end)?;
                    self.pos += 1;
                    self.run(close - 1)?;
                    self.pos = close;
                }
                b'\\' => {
                    let mut i = self.pos + 1;
                    while i < end && self.s[i].is_ascii_alphabetic() {
                        i += 1;
                    }
                    if i == self.pos + 1 {
                        i += self.src[i..end].chars().next().map_or(1, char::len_utf8);
                    }
                    let stop = i.min(end);
                    self.run(stop)?;
                }
                _ => {
                    let ch = self.src[self.pos..end]
                        .chars()
                        .next()
                        .map_or(1, char::len_utf8);
                    let stop = self.pos + ch;
                    self.run(stop)?;
                }
            }
            self.push(T::P('}'))?;
        }
        Ok(())
    }

    fn digits(&mut self, end: usize) -> R<String> {
        let start = self.pos;
        while self.pos < end && self.peek().is_ascii_digit() {
            self.pos += 1;
        }
        let d = &self.src[start..self.pos];
        if d.len() > self.limits.max_digits {
            return Err(Rejection::OverBudget(format!(
                "a number with more than {} digits",
                self.limits.max_digits
            )));
        }
        Ok(d.to_string())
    }

    /// Whether every `,digits` group from the cursor on has three digits:
    /// `7,425,000` is a number, `99,100,1000` is a list.
    fn comma_groups_all_three(&self, end: usize) -> bool {
        let mut j = self.pos;
        while j < end && self.s[j] == b',' && self.at(j + 1).is_ascii_digit() {
            let mut k = j + 1;
            while k < end && self.s[k].is_ascii_digit() {
                k += 1;
            }
            if k - j - 1 != 3 {
                return false;
            }
            j = k;
        }
        true
    }

    /// `{,}` with any spaces around and inside (`14 {, }916`), followed by
    /// three digits: where those digits start.
    fn brace_comma(&self, end: usize) -> Option<usize> {
        let mut j = self.pos;
        let skip = |mut j: usize| {
            while j < end && self.s[j] == b' ' {
                j += 1;
            }
            j
        };
        j = skip(j);
        for want in [b'{', b',', b'}'] {
            if self.at(j) != want {
                return None;
            }
            j = skip(j + 1);
        }
        self.three_digits_at(j, end).then_some(j)
    }

    /// Three digits (and no fourth) at `i`?
    fn three_digits_at(&self, i: usize, end: usize) -> bool {
        i + 3 <= end
            && self.s[i..i + 3].iter().all(u8::is_ascii_digit)
            && !(i + 3 < end && self.s[i + 3].is_ascii_digit())
    }

    fn number(&mut self, end: usize) -> R<()> {
        let first_token = self
            .out
            .iter()
            .all(|t| matches!(t.t, T::P('-') | T::P('+')));
        let mut int = self.digits(end)?;
        // Thousands separators: a valid leading group, then groups of three.
        if !int.is_empty() && int.len() <= 3 && !(int.len() > 1 && int.starts_with('0')) {
            loop {
                let mut found = None;
                for (sep, spaces_after) in [
                    (",\\!", true),
                    ("{,}", false),
                    ("\\,", true),
                    ("\\!", true),
                    (",", false),
                    (" ", false),
                ] {
                    if sep == "," && (self.brackets > 0 || !self.comma_groups_all_three(end)) {
                        continue;
                    }
                    if self.starts(sep) {
                        let mut j = self.pos + sep.len();
                        if spaces_after {
                            while j < end && self.s[j] == b' ' {
                                j += 1;
                            }
                        }
                        if self.three_digits_at(j, end) {
                            found = Some(j);
                        }
                        break;
                    }
                }
                if found.is_none() {
                    found = self.brace_comma(end);
                }
                if int == "0" {
                    found = None;
                }
                match found {
                    Some(j) => {
                        int.push_str(&self.src[j..j + 3]);
                        self.pos = j + 3;
                        if int.len() > self.limits.max_digits {
                            return Err(Rejection::OverBudget("too many digits".into()));
                        }
                    }
                    None => break,
                }
            }
        }
        let mut frac = String::new();
        // The power of ten of the last digit written, for a decimal.
        let mut decimal: Option<i32> = None;
        let mut repeating = false;
        if self.peek() == b'.'
            && (self.at(self.pos + 1).is_ascii_digit() || self.starts(".\\overline"))
        {
            self.pos += 1;
            frac = self.digits(end)?;
            decimal = Some(-(frac.len() as i32));
        } else if first_token && self.peek() == b',' && !int.is_empty() {
            // A lone decimal comma: `1,22`, `1000,99`, `0,111` (not `-2,1`
            // or `1,000`, and only when it is the whole answer).
            let j = self.pos + 1;
            let mut k = j;
            while k < end && self.s[k].is_ascii_digit() {
                k += 1;
            }
            let n = k - j;
            let rest = &self.src[k..end];
            let rest_clean = !rest.bytes().any(|b| b.is_ascii_digit() || b == b',');
            if rest_clean && n >= 2 && (n != 3 || int == "0" || int.len() > 3) {
                self.pos = j;
                frac = self.digits(end)?;
                decimal = Some(-(frac.len() as i32));
            }
        }
        let mut repeat = String::new();
        if self.starts("\\overline") || self.starts("\\dot") {
            let save = self.pos;
            self.pos += if self.starts("\\overline") { 9 } else { 4 };
            let g = self.group_text(end)?;
            if !g.is_empty() && g.bytes().all(|b| b.is_ascii_digit()) && g.len() <= 50 {
                repeat = g;
                // A repeating decimal is exact.
                decimal = None;
                repeating = true;
            } else {
                self.pos = save;
            }
        }
        let digits = int.clone();
        let ten = BigInt::from(10u32);
        let int_v: BigInt = small_or_big(&int);
        let mut value = if frac.is_empty() {
            BigRational::from_integer(int_v)
        } else {
            // int + frac / 10^k as one fraction, reduced once.
            let scale = num_traits::pow(ten.clone(), frac.len());
            let f: BigInt = small_or_big(&frac);
            super::ratio::new(int_v * &scale + f, scale)
        };
        if !repeat.is_empty() {
            let r: BigInt = repeat.parse().unwrap_or_default();
            let den = (num_traits::pow(ten.clone(), repeat.len()) - BigInt::one())
                * num_traits::pow(ten.clone(), frac.len());
            value += BigRational::new(r, den);
        }
        // Scientific notation: 1e5, 2.5E-3 (not `2e` = 2 times e).
        if matches!(self.peek(), b'e' | b'E') {
            let mut j = self.pos + 1;
            let neg = self.at(j) == b'-';
            if matches!(self.at(j), b'+' | b'-') {
                j += 1;
            }
            let k0 = j;
            while j < end && self.s[j].is_ascii_digit() {
                j += 1;
            }
            if j > k0 && j - k0 <= 4 && !self.at(j).is_ascii_alphabetic() {
                let e: usize = self.src[k0..j].parse().unwrap_or(0);
                if e > self.limits.max_exponent as usize {
                    return Err(Rejection::OverBudget(format!("exponent {e} is too large")));
                }
                let p = BigRational::from_integer(num_traits::pow(ten, e));
                value = if neg { value / p } else { value * p };
                if !repeating {
                    let shift = if neg { -(e as i32) } else { e as i32 };
                    decimal = Some(decimal.unwrap_or(0) + shift);
                }
                self.pos = j;
            }
        }
        self.push(T::Num(value, decimal, digits))
    }
}

/// `st`, `nd`, `rd`, `th`: the suffix of an ordinal number.
fn is_ordinal(word: &str) -> bool {
    matches!(word, "st" | "nd" | "rd" | "th")
}

fn is_currency(c: char) -> bool {
    matches!(
        c,
        '¢' | '£'
            | '¤'
            | '¥'
            | '֏'
            | '؋'
            | '৲'
            | '৳'
            | '฿'
            | '៛'
            | '﷼'
            | '﹩'
            | '￠'
            | '￡'
            | '￥'
            | '￦'
    ) || ('\u{20A0}'..='\u{20C0}').contains(&c)
}

/// A digit string as an integer (u64 parsing when it fits: most do).
fn small_or_big(digits: &str) -> BigInt {
    if digits.is_empty() {
        return BigInt::zero();
    }
    if digits.len() <= 18 {
        if let Ok(v) = digits.parse::<u64>() {
            return BigInt::from(v);
        }
    }
    digits.parse().unwrap_or_default()
}

/// The length of the command in `name` when `name` is a relation, an
/// operator or `\pi` run into a one-letter name (`lex`, `pir`, `cdotx`); real
/// commands of that shape (`\int`, `\inf`, `\neg`, `\pmb`, `\cdotp`) are not split.
fn run_into_letter(name: &str) -> Option<usize> {
    const CMDS: [&str; 13] = [
        "leq", "geq", "neq", "le", "ge", "ne", "in", "pm", "mp", "cdot", "times", "div", "pi",
    ];
    if matches!(name, "int" | "inf" | "neg" | "pmb" | "cdotp") {
        return None;
    }
    CMDS.iter()
        .find(|c| name.len() == c.len() + 1 && name.starts_with(*c))
        .map(|c| c.len())
}

/// Environments that list equations (a system, `\begin{cases} x+y=1 \\
/// x-y=3 \end{cases}`) or the pieces of a function, one per row.
pub(crate) fn is_system_env(env: &str) -> bool {
    matches!(env, "cases" | "dcases" | "rcases")
}

fn is_matrix_env(env: &str) -> bool {
    matches!(
        env,
        "pmatrix"
            | "bmatrix"
            | "Bmatrix"
            | "vmatrix"
            | "Vmatrix"
            | "matrix"
            | "smallmatrix"
            | "array"
    )
}
