"""The mathematics of the verifier, on completions as models write them.

Expected outcomes come from an independent reference: sympy decides whether
two scalar values are equal (``simplify(a - b) == 0``), Python's ``Fraction``
for the property tests, and docs/verify_semantics.md's rules (stated next to each
case) for structures, relations, hedges and budgets.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_fast.verify import verify, verify_detailed


def completion(answer: str) -> str:
    """A typical chain-of-thought completion ending in a boxed answer."""
    return (
        "Let me work through this carefully.\n\nFirst we set up the equation and "
        "simplify both sides. After collecting terms, we get the result below.\n\n"
        f"Therefore, the final answer is $\\boxed{{{answer}}}$."
    )


def sympy_equal(a: str, b: str) -> bool:
    return bool(sp.simplify(sp.sympify(a) - sp.sympify(b)) == 0)


# (gold, boxed prediction, the gold in sympy, the prediction in sympy)
SCALARS = [
    (r"\frac{3}{4}", "0.75", "Rational(3,4)", "Rational(75,100)"),
    (r"\frac34", r"\dfrac{3}{4}", "Rational(3,4)", "Rational(3,4)"),
    (r"\frac34", r"\tfrac{6}{8}", "Rational(3,4)", "Rational(6,8)"),
    (r"\frac{1}{3}", "0.33", "Rational(1,3)", "Rational(33,100)"),
    (r"\frac{1}{3}", r"0.\overline{3}", "Rational(1,3)", "Rational(1,3)"),
    (r"\frac{1}{6}", r"0.1\overline{6}", "Rational(1,6)", "Rational(1,10)+Rational(6,90)"),
    ("1080", "1,080", "1080", "1080"),
    ("1080", r"1\,080", "1080", "1080"),
    ("1000", r"1,\!000", "1000", "1000"),
    ("1500", r"1.5 \times 10^{3}", "1500", "Rational(15,10)*10**3"),
    ("0.004", r"4 \times 10^{-3}", "Rational(4,1000)", "4*Rational(1,1000)"),
    (r"2\sqrt{2}", r"\sqrt{8}", "2*sqrt(2)", "sqrt(8)"),
    (r"\frac{1}{\sqrt3}", r"\frac{\sqrt{3}}{3}", "1/sqrt(3)", "sqrt(3)/3"),
    (r"\sqrt[3]{16}", r"2\sqrt[3]{2}", "16**Rational(1,3)", "2*2**Rational(1,3)"),
    (r"\sqrt{2}", r"\sqrt{3}", "sqrt(2)", "sqrt(3)"),
    (r"2^{-99}", r"\frac{1}{2^{99}}", "2**-99", "1/2**99"),
    (r"\frac{1}{2^{99}}", r"\frac{1}{2^{98}}", "2**-99", "2**-98"),
    (r"10^{-20}", "0", "Rational(1,10**20)", "0"),
    (r"\pi", "3.14159265", "pi", "Rational(314159265,100000000)"),
    (r"\pi", r"\frac{355}{113}", "pi", "Rational(355,113)"),
    (r"\frac{9}{4}\pi", r"\frac94\pi", "Rational(9,4)*pi", "Rational(9,4)*pi"),
    (r"e^{-1}", r"\frac{1}{e}", "exp(-1)", "1/E"),
    (r"3+4i", r"4i+3", "3+4*I", "4*I+3"),
    (r"(1+i)^2", r"2i", "(1+I)**2", "2*I"),
    ("120", "5!", "120", "factorial(5)"),
    (r"\binom{10}{3}", "120", "binomial(10,3)", "120"),
    (r"4\frac{4}{9}", r"\frac{40}{9}", "4+Rational(4,9)", "Rational(40,9)"),
    (r"\frac{40}{9}", "4 4/9", "Rational(40,9)", "4+Rational(4,9)"),
    (r"\sqrt{2}", "1.41421356", "sqrt(2)", "Rational(141421356,100000000)"),
    (r"\sqrt{2}", "1.41", "sqrt(2)", "Rational(141,100)"),
    (r"90^\circ", "90", "90", "90"),
    (r"\$18.90", "18.9", "Rational(189,10)", "Rational(189,10)"),
    (r"125\text{ miles}", "125", "125", "125"),
    (r"\log_2 8", "3", "log(8,2)", "3"),
    (r"\sin^2 x + \cos^2 x", "1", "sin(x)**2+cos(x)**2", "1"),
    (r"x^2+2x+1", r"(x+1)^2", "x**2+2*x+1", "(x+1)**2"),
    (r"x^2-1", r"(x-1)(x+1)", "x**2-1", "(x-1)*(x+1)"),
    (r"x^2+1", r"(x+1)^2", "x**2+1", "(x+1)**2"),
    (r"\frac{x+2}{7}", r"\frac{x}{7}+\frac{2}{7}", "(x+2)/7", "x/7+Rational(2,7)"),
    (r"\frac{1}{x-1}-\frac{1}{x}", r"\frac{1}{x(x-1)}", "1/(x-1)-1/x", "1/(x*(x-1))"),
    (r"2 \sin b \cos a", r"2\cos a\sin b", "2*sin(b)*cos(a)", "2*cos(a)*sin(b)"),
    (r"\tan^2(y)+1", r"\sec^2(y)", "tan(y)**2+1", "sec(y)**2"),
]


@pytest.mark.parametrize(("gold", "pred", "a", "b"), SCALARS)
def test_scalar_values_match_iff_equal(gold: str, pred: str, a: str, b: str) -> None:
    ga, pb = sp.sympify(a), sp.sympify(b)
    # Equal values match. Otherwise only a decimal prediction may match, within
    # rel_tol, and only a gold it cannot write exactly (an irrational or
    # non-terminating value): 0.33 is not 1/3, 1.41421356 is sqrt(2).
    writes_decimal = "." in pred and r"\overline" not in pred
    inexpressible = not (ga.is_Rational and _terminates(ga))
    if sympy_equal(a, b):
        expected = True
    elif ga.free_symbols or pb.free_symbols:
        expected = False
    else:
        close = abs(complex(sp.N(ga - pb, 30))) <= 1e-6 * abs(complex(sp.N(ga, 30)))
        stated = _rounds_or_truncates(pred, ga)
        expected = writes_decimal and inexpressible and (close or stated)
    assert verify(gold, completion(pred)) is expected


def _rounds_or_truncates(decimal: str, exact: sp.Expr) -> bool:
    """docs/verify_semantics.md: a plain decimal matches a value it cannot write
    when it is that value rounded or truncated at its last digit and has at
    least 4 significant digits."""
    if not all(c.isdigit() or c in ".-" for c in decimal) or "." not in decimal:
        return False
    places = len(decimal.split(".")[1])
    d = Fraction(decimal)
    if len(str(abs(d.numerator * 10**places // d.denominator))) < 4:
        return False
    x = sp.N(exact, 60)
    unit = sp.Rational(1, 10**places)
    diff = abs(x - sp.Rational(d.numerator, d.denominator))
    truncated = sp.floor(abs(x) / unit) * unit == abs(sp.Rational(d.numerator, d.denominator))
    return bool(diff <= unit / 2) or bool(truncated and (x < 0) == (d < 0))


def _terminates(r: sp.Rational) -> bool:
    q = int(r.q)
    for p in (2, 5):
        while q % p == 0:
            q //= p
    return q == 1


# Structures: tuples are ordered, sets and bare lists are not, intervals keep
# their ends (docs/verify_semantics.md, "Structures").
STRUCTURES = [
    ("(1,2)", "(1, 2)", True),
    ("(1,2)", "(2,1)", False),
    (r"(1,\frac{9}{2})", "(1,4.5)", True),
    (r"\{1,2,3\}", r"\{3,1,2\}", True),
    (r"\{1,2,3\}", r"\{1,2\}", False),
    ("1, 2, 3", "3, 2, 1", True),
    ("[0,1)", "[0, 1)", True),
    ("[0,1)", "(0,1)", False),
    ("[0,1)", "[0,1]", False),
    (r"(-\infty, 2] \cup (3, \infty)", r"(3,\infty)\cup(-\infty,2]", True),
    (r"(-\infty, 2] \cup (3, \infty)", r"(-\infty, 2) \cup (3, \infty)", False),
    (r"\begin{pmatrix}1&2\\3&4\end{pmatrix}", r"\begin{bmatrix}1&2\\3&4\end{bmatrix}", True),
    (r"\begin{pmatrix}1&2\\3&4\end{pmatrix}", r"\begin{pmatrix}1&3\\2&4\end{pmatrix}", False),
    ("2:3", r"\frac{2}{3}", True),
    ("x = 3", "3", True),
    ("3", "x = 3", True),
    ("y = 2x+3", "y = 3+2x", True),
    ("y = 2x+3", "y = 2x-3", False),
    ("2x+4y-3=0", r"y=-\frac{1}{2}x+\frac{3}{4}", True),
    (r"x \ge 2", r"x \geq 2", True),
    (r"x \ge 2", "x > 2", False),
    ("x > 5", "5 < x", True),
    ("x < 1", "-x > -1", True),
    ("x < 1", "x > 1", False),
    (r"-2 \le x \le 7", r"x \in [-2,7]", True),
    (r"\text{Monday}", "monday", True),
    (r"\text{Yes}", "yes", True),
    (r"\text{(C)}", "C", True),
    ("C", "D", False),
]


@pytest.mark.parametrize(("gold", "pred", "expected"), STRUCTURES)
def test_structures_and_relations(gold: str, pred: str, expected: bool) -> None:
    assert verify(gold, completion(pred)) is expected


# Several boxes form one collection answer; hedges earn nothing.
COLLECTIONS = [
    ("(2,2), (6,2)", r"The pairs are $\boxed{(2,2)}$ and $\boxed{(6,2)}$.", True),
    ("(2,2), (6,2)", r"The pairs are $\boxed{(6,2)}$ and $\boxed{(2,2)}$.", True),
    ("391", r"It is $\boxed{381}$, $\boxed{391}$ or $\boxed{401}$.", False),
    ("391", r"So $\boxed{391}$. Double-checking: $\boxed{391}$.", True),
    ("391", r"The answer is $\boxed{381 \text{ or } 391}$.", False),
    ("391", r"The answer is $\boxed{381, 391}$.", False),
    ("5", r"The answer is $\boxed{}$.", False),
    ("5", r"We get $\boxed{\frac{0}{0}}$.", False),
    ("5", r"We get $\boxed{\frac{5}{0}}$.", False),
    ("5", r"We get $\boxed{\infty}$.", False),
    (r"\pm 2", r"$\boxed{-2, 2}$", True),
    (r"1 \pm \sqrt{2}", r"$\boxed{1-\sqrt2, 1+\sqrt2}$", True),
]


@pytest.mark.parametrize(("gold", "pred", "expected"), COLLECTIONS)
def test_collections_hedges_and_undefined(gold: str, pred: str, expected: bool) -> None:
    assert verify(gold, pred) is expected


PATHOLOGICAL = [
    r"2^{2^{2^{2^{2^{100}}}}}",
    r"10^{10^{10}}",
    "9999999!",
    "{" * 100_000 + "1" + "}" * 100_000,
    "9" * 1_000_000,
    "(" * 5_000 + ")" * 5_000,
    r"\sqrt{" * 3000 + "2" + "}" * 3000,
    r"\frac{1}{" * 3000 + "2" + "}" * 3000,
    "1+" * 20_000 + "1",
    r"\binom{10^{9}}{5 \cdot 10^{8}}",
    r"\sum_{k=1}^{10^{12}} k",
    "x^{99999999}",
]


@pytest.mark.parametrize("answer", PATHOLOGICAL, ids=range(len(PATHOLOGICAL)))
def test_pathological_answers_are_bounded_non_matches(answer: str) -> None:
    v = verify_detailed("1", completion(answer))
    assert v.matched is False
    assert v.reason != "match"


def test_reasons_say_why() -> None:
    assert verify_detailed("1", completion("10^{10^{10}}")).reason.startswith("over budget")
    assert verify_detailed("1", "I could not solve it.").matched is False
    assert verify_detailed("1", "$\\boxed{}$").matched is False


fractions = st.fractions(max_denominator=10_000).filter(lambda f: abs(f) < 10**9)


@settings(max_examples=200, deadline=None)
@given(fractions, fractions)
def test_fractions_match_iff_equal(a: Fraction, b: Fraction) -> None:
    gold = f"\\frac{{{a.numerator}}}{{{a.denominator}}}"
    pred = completion(f"\\frac{{{b.numerator}}}{{{b.denominator}}}")
    assert verify(gold, pred) is (a == b)


@settings(max_examples=200, deadline=None)
@given(st.integers(-(10**12), 10**12), st.integers(0, 6))
def test_terminating_decimals_are_exact(n: int, places: int) -> None:
    value = Fraction(n, 10**places)
    text = f"{n / 10**places:.{places}f}" if places else str(n)
    assert verify(f"\\frac{{{value.numerator}}}{{{value.denominator}}}", completion(text))
    # One unit in the last place away is a different exact value.
    other = Fraction(n + 1, 10**places)
    assert not verify(f"\\frac{{{other.numerator}}}{{{other.denominator}}}", completion(text))


@settings(max_examples=100, deadline=None)
@given(st.integers(-1000, 1000), st.integers(-1000, 1000))
def test_scalar_verification_is_symmetric(a: int, b: int) -> None:
    assert verify(str(a), f"$\\boxed{{{b}}}$") == verify(str(b), f"$\\boxed{{{a}}}$") == (a == b)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_no_input_crashes(text: str) -> None:
    v = verify_detailed(text, text)
    assert isinstance(v.matched, bool)


# Pairs where math-verify (the peer, parsed and verified the way its README
# shows) and we must agree: ordinary answers written in different ways.
PEER_PAIRS = [
    (r"\frac{\sqrt{3}}{2}", r"\frac{1}{2}\sqrt{3}"),
    (r"\frac{\sqrt{3}}{2}", "0.866"),
    (r"\frac{\sqrt{3}}{2}", "0.8660254"),
    (r"3\sqrt{2}", r"\sqrt{18}"),
    (r"\frac{5}{2}", "2.5"),
    (r"\$1,000", "1000"),
    (r"50\%", "0.5"),
    (r"50\%", "50"),
    ("x^2 - 4", "(x-2)(x+2)"),
    ("y = -2x + 4", "2x + y = 4"),
    (r"\{2, 3\}", "2, 3"),
    (r"\text{B}", "B"),
    ("12", "12.00001"),
    (r"\frac{\pi}{4}", r"45^\circ"),
    (r"\dbinom{6}{3}", "20"),
    (r"\ln 2", "0.693147"),
    (r"\log_{10} 1000", "3"),
    ("x=2 \\text{ or } x=3", "2, 3"),
    (r"\{-1, 1\}", r"\pm 1"),
    (r"\frac{1}{3}", "0.333333"),
    (r"x \in (0, 1]", "(0,1]"),
    (r"\cos 2x", r"\cos^2 x - \sin^2 x"),
    (r"x^{\frac{1}{2}}", r"\sqrt{x}"),
    ("(1,2,3)", "(3,2,1)"),
    (r"\dfrac{\sqrt{5}-1}{2}", r"\frac{-1+\sqrt5}{2}"),
    (r"\frac{7}{2}", r"3\tfrac{1}{2}"),
    (r"1.23 \times 10^{4}", "12300"),
    ("(x+1)^3", "x^3 + 3x^2 + 3x + 1"),
    (r"\binom{n}{2}", r"\frac{n(n-1)}{2}"),
    ("(-2, 2)", "-2 < x < 2"),
    (r"\frac{3}{8}", r"37.5\%"),
    ("a=1,b=2", "b=2,a=1"),
    (r"\sqrt{50}", r"5\sqrt2"),
    (r"\cos\frac{\pi}{3}", r"\frac12"),
    (r"\arctan 1", r"\frac{\pi}{4}"),
    (r"y \leq 2x", r"2x \geq y"),
    ("x^2+y^2=1", "x^2+y^2=2"),
    (r"\lfloor 3.7 \rfloor", "3"),
]


@pytest.mark.parametrize(("gold", "pred"), PEER_PAIRS)
def test_agrees_with_math_verify(gold: str, pred: str) -> None:
    math_verify = pytest.importorskip("math_verify")
    text = f"The answer is $\\boxed{{{pred}}}$."
    theirs = math_verify.verify(math_verify.parse(f"${gold}$"), math_verify.parse(text))
    assert verify(gold, text) is theirs


# Where docs/verify_semantics.md decides otherwise than math-verify (it rounds to 6
# places): a decimal of at least 4 significant digits that is the value rounded
# or truncated at its own last digit matches.
PEER_DIFFERENCES = [
    (r"\pi/2", "1.5708"),
    (r"\frac{2}{3}", "0.6667"),
]


@pytest.mark.parametrize(("gold", "pred"), PEER_DIFFERENCES)
def test_differs_from_math_verify_where_the_semantics_say(gold: str, pred: str) -> None:
    math_verify = pytest.importorskip("math_verify")
    text = f"The answer is $\\boxed{{{pred}}}$."
    theirs = math_verify.verify(math_verify.parse(f"${gold}$"), math_verify.parse(text))
    assert verify(gold, text) is True
    assert theirs is False


# Whole completions as models write them, with earlier values that are not
# the answer; the gold is what the problem's solution says.
COMPLETIONS = [
    (
        r"\frac{14}{3}",
        "We evaluate each term: $f(-2)=\\frac{-8}{-4}=2$, $f(-1)=\\frac{-5}{-3}=\\frac53$ and "
        "$f(0)=1$. Adding, $2+\\frac{5}{3}+1=\\boxed{\\frac{14}{3}}$.",
        True,
    ),
    (
        "3\\sqrt{13}",
        "By the distance formula, $\\sqrt{6^2+(-9)^2}=\\sqrt{117}$, and since $117 = 9 \\cdot 13$ "
        "the distance is $\\boxed{3\\sqrt{13}}$.",
        True,
    ),
    (
        "3\\sqrt{13}",
        "By the distance formula the distance is $\\sqrt{117}$. So the answer is "
        "$\\boxed{\\sqrt{117}}$.",
        True,
    ),
    (
        "3\\sqrt{13}",
        "The distance is about $10.8$, so the answer is $\\boxed{10.8}$.",
        False,
    ),
    (
        "18",
        "Janet's ducks lay 16 eggs per day. She eats 3 and bakes with 4, leaving 9 eggs, which "
        "she sells at $2 each: 9 * 2 = 18.\n#### 18",
        True,
    ),
    (
        r"(-\infty, -2) \cup (3, \infty)",
        "The quadratic $x^2 - x - 6 = (x-3)(x+2)$ is positive outside its roots, so the "
        "solution is $x \\in \\boxed{(-\\infty,-2)\\cup(3,\\infty)}$.",
        True,
    ),
    (
        r"(-\infty, -2) \cup (3, \infty)",
        "The roots are $-2$ and $3$, so the solution is $\\boxed{(-2, 3)}$.",
        False,
    ),
    (
        r"\text{(B)}",
        "Checking each option, only (B) satisfies both conditions.\n\nFinal Answer: The final "
        "answer is $\\text{(B)}$. I hope it is correct.",
        True,
    ),
    (
        "y = 2x + 1",
        "The slope is $m = \\frac{5-3}{2-1} = 2$ and the intercept is $1$, so the line is "
        "$\\boxed{y = 1 + 2x}$.",
        True,
    ),
    (
        "0.25",
        "The probability is $\\frac{1}{2}\\cdot\\frac{1}{2} = \\boxed{\\frac14}$.",
        True,
    ),
    (
        r"\frac{1}{2^{99}}",
        "Each step halves the value, 99 times in all, so the answer is $\\boxed{2^{-99}}$.",
        True,
    ),
    (
        r"\frac{1}{2^{99}}",
        "Each step halves the value, 98 times in all, so the answer is $\\boxed{2^{-98}}$.",
        False,
    ),
]


@pytest.mark.parametrize(("gold", "text", "expected"), COMPLETIONS)
def test_whole_completions(gold: str, text: str, expected: bool) -> None:
    assert verify(gold, text) is expected


# Expressions built to vanish exactly where a fixed-point sampler would look
# (docs/verify_semantics.md: the sample points must not be guessable); sympy decides
# whether the two sides are equal.
TARGETED = [
    ("x", r"x + \sin(42\pi x)", "x", "x + sin(42*pi*x)"),
    ("x", r"x + \sin(2520\pi x)", "x", "x + sin(2520*pi*x)"),
    ("x^2", "x^2+(x-7)(3x-52)(7x+206)", "x**2", "x**2+(x-7)*(3*x-52)*(7*x+206)"),
    ("x^2", "x^2+(x-7)(3x-52)(7x+206)(x+1)", "x**2", "x**2+(x-7)*(3*x-52)*(7*x+206)*(x+1)"),
    ("a+b", "a+b+(a-7)(b-11)", "a+b", "a+b+(a-7)*(b-11)"),
    ("(x+1)^{20}", r"(x+1)^{20} + 10^{-30}x", "(x+1)**20", "(x+1)**20 + x/10**30"),
    (
        "(a+b)^5",
        "a^5+5a^4b+10a^3b^2+10a^2b^3+5ab^4+b^5",
        "(a+b)**5",
        "a**5+5*a**4*b+10*a**3*b**2+10*a**2*b**3+5*a*b**4+b**5",
    ),
    (r"\frac{x^2-1}{x-1}", "x+1", "(x**2-1)/(x-1)", "x+1"),
    (r"\sqrt{x^2}", "x", "sqrt(x**2)", "x"),
    (r"e^{x}e^{y}", "e^{x+y}", "exp(x)*exp(y)", "exp(x+y)"),
]


@pytest.mark.parametrize(("gold", "pred", "a", "b"), TARGETED)
def test_expressions_built_for_fixed_points_do_not_fool_it(
    gold: str, pred: str, a: str, b: str
) -> None:
    expected = sympy_equal(a, b)
    assert verify(gold, completion(pred)) is expected
    # The same pair always gets the same answer.
    assert verify(gold, completion(pred)) is expected


def test_a_relation_built_for_fixed_points_does_not_match() -> None:
    assert verify("y = x^2", completion("y = x^2+(x-7)(3x-52)(7x+206)")) is False
    assert verify("y = x^2+2x+1", completion("y = (x+1)^2")) is True


SELF = [
    "e^{710}",
    r"\pi^{700}",
    r"10^{400}\pi",
    r"(1+\sqrt2)^{900}",
    r"\sqrt2" * 26,
    r"\sin(" * 40 + "1" + ")" * 40,
    "e^{x^3}",
    "x1",
    "(x1, y1)",
    "x2+1",
    "x_1",
    r"\frac{x_1 + x_2}{2}",
]


@pytest.mark.parametrize("answer", SELF, ids=range(len(SELF)))
def test_every_answer_equals_itself(answer: str) -> None:
    # docs/verify_semantics.md: verify(s, s) holds for any answer that parses, or the
    # reason says it was over budget.
    v = verify_detailed(answer, completion(answer))
    assert v.matched or v.reason.startswith("over budget"), v.reason


def test_large_values_are_still_compared() -> None:
    assert verify("e^{710}", completion("e^{709}e")) is True
    assert verify("e^{710}", completion("e^{709}")) is False
    assert verify(r"10^{400}\pi", completion(r"\pi \cdot 10^{400}")) is True
    assert verify(r"10^{400}\pi", completion(r"10^{399}\pi")) is False
    assert verify(r"\sqrt2" * 26, completion("8192")) is True
    assert verify("x1 + 1", completion("1 + x_1")) is True
    assert verify("x1", completion("x2")) is False
    assert verify("(x1, y1)", completion("(x_1, y_1)")) is True


# docs/verify_semantics.md: "a percentage matches its number with or without the
# sign, and its fraction: 10\% = 10 = 0.1, whichever side carries the sign".
PERCENT = [
    ("25", "The answer is 25%.", True),
    ("40", r"\boxed{40\%}", True),
    ("0.4", r"\boxed{40\%}", True),
    (r"10\%", r"\boxed{10}", True),
    (r"10\%", r"\boxed{0.1}", True),
    ("10", r"\boxed{10\%}", True),
    ("0.1", r"\boxed{10\%}", True),
    (r"\frac{1}{10}", r"\boxed{10\%}", True),
    ("25", "The answer is 26%.", False),
    ("10", r"\boxed{1\%}", False),
    (r"10\%", r"\boxed{20\%}", False),
]


@pytest.mark.parametrize(("gold", "pred", "expected"), PERCENT)
def test_percent_whichever_side_carries_the_sign(gold: str, pred: str, expected: bool) -> None:
    assert verify(gold, pred) is expected


# docs/verify_semantics.md: trailing units are decoration on the gold's side as on
# the answer's, after a value or a constant expression.
UNITS = [
    (r"10\text{ cm}^{2}", "10", True),
    (r"10\text{ cm}^{2}", "100", False),
    (r"2\pi \text{ cm}", r"2\pi", True),
    (r"2\pi", r"2\pi \text{ cm}", True),
    (r"2\pi \text{ cm}", "2", False),
    (r"5\mathrm{m/s}", "5", True),
    ("5", r"5\mathrm{m/s}", True),
    ("60", "60 km/h", True),
    ("60 km/h", "60", True),
    ("3", r"3 \text{ meters}", True),
    ("20", r"20 \text{ dollars}", True),
    ("12", "12 cm", True),
]


@pytest.mark.parametrize(("gold", "pred", "expected"), UNITS)
def test_units_on_either_side(gold: str, pred: str, expected: bool) -> None:
    assert verify(gold, completion(pred)) is expected


# docs/verify_semantics.md, "Relations": when both sides are relations the left
# sides must agree; a function's name on the left names the same thing as y;
# against a gold value an equation chain ending in a constant answers with it.
RELATIONS = [
    (r"\sin(x)=\frac{42}{59}", r"\cos(x)=\frac{42}{59}", False),
    (r"\tan\theta = \frac34", r"\cot\theta = \frac34", False),
    (r"\tan\theta = \frac34", r"\tan\theta = \frac{6}{8}", True),
    ("x = 5", "y = 5", False),
    ("f(x) = 2x+3", "y = 2x+3", True),
    ("y = 2x+3", "f(x) = 2x+3", True),
    ("f(x) = 2x+3", "y = 2x+4", False),
    ("1", r"\lim_{x\to 0}\frac{\sin x}{x} = 1", True),
    ("0", r"\lim_{x\to 0}\frac{\sin x}{x} = 1", False),
    ("2", r"17 \bmod 5 = 2", True),
    ("3", r"17 \bmod 5 = 2", False),
    ("4", r"\sqrt{16}=4", True),
    ("8", "3^2 = 8", True),
    ("9", "3^2 = 8", False),
]


@pytest.mark.parametrize(("gold", "pred", "expected"), RELATIONS)
def test_relations(gold: str, pred: str, expected: bool) -> None:
    assert verify(gold, completion(pred)) is expected


# docs/verify_semantics.md: "A decimal answers to the precision it states" (each
# example of that paragraph; the reference values are the exact ones).
DECIMALS = [
    (r"\sqrt3", "1.732", True),
    (r"\sqrt3", "1.7321", True),
    (r"16.\overline{6}", "16.67", True),
    (r"100\pi", "314.16", True),
    ("0.142857142", "0.1428571", True),
    (r"\sqrt3", "1.73", False),
    (r"\frac13", "0.33", False),
    (r"\frac73", "2.3", False),
    (r"100\pi", "314.17", False),
    ("2.5", "2.4999", False),
    (r"40\pi", "125.663", True),
    (r"\frac{2}{3}", "0.6667", True),
    (r"\frac{2}{3}", "0.6668", False),
    (r"\frac13, \sqrt3, \pi", "1/3, 1.732, 3.1416", True),
]


@pytest.mark.parametrize(("gold", "pred", "expected"), DECIMALS)
def test_decimals_answer_to_the_precision_they_state(gold: str, pred: str, expected: bool) -> None:
    # rel_tol=0: only the stated precision admits an approximate decimal.
    assert verify(gold, completion(pred), rel_tol=0.0) is expected


# docs/verify_semantics.md: "Inequality chains and intervals are the same set", and
# "or" between relations is their union (between values it is a hedge).
INTERVALS = [
    (r"2 \le x \le 5", "[2, 5]", True),
    ("[2, 5]", r"2 \le x \le 5", True),
    (r"2 < x \le 5", "(2, 5]", True),
    ("(2, 5]", r"2 < x \le 5", True),
    ("(2, 5]", r"2 \le x \le 5", False),
    (r"(2, \infty)", "x > 2", True),
    (r"x < 1 \text{ or } x > 3", r"(-\infty, 1) \cup (3, \infty)", True),
    (r"(-\infty, 1) \cup (3, \infty)", r"x < 1 \text{ or } x > 3", True),
    (r"(-\infty, 1] \cup (3, \infty)", r"x < 1 \text{ or } x > 3", False),
    (r"(1, 3)", r"x > 1 \text{ or } x < 3", False),
    ("3", r"1 \text{ or } 3", False),
]


@pytest.mark.parametrize(("gold", "pred", "expected"), INTERVALS)
def test_inequality_chains_are_intervals(gold: str, pred: str, expected: bool) -> None:
    assert verify(gold, f"The solution set is $\\boxed{{{pred}}}$.") is expected
