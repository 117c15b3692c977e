"""Write the seed corpus of the ``verify`` fuzz target (``make fuzz`` runs it).

libFuzzer left alone starts from nothing and grows inputs a few bytes at a
time: in ten minutes it never got past ~205 bytes, far from the shapes that
cost (a 256 KiB completion, 10^5 nested braces, a power tower). These seeds
start it there. One input is ``gold NUL completion`` (the target's format):

- every (gold, pred) pair of the conformance suites in ``tests/data/conformance/``;
- hostile shapes: deep nesting, exponent towers, huge numbers, many markers,
  boxes and reasoning tags, special tokens, long prose, non-ASCII and invalid
  UTF-8, and completions of just under, at and just over the 256 KiB limit;
- the hedge reader's shapes: long chains of alternatives, qualifiers and
  restatements, candidates after a box, headings, blank boxes, oddly
  written reasoning tags, words as answers.

Deterministic (the same files every run), standard library only::

    python3 scripts/fuzz_seeds.py [OUT_DIR]     # default rust/fuzz/seeds/verify
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITES = ROOT / "tests" / "data" / "conformance"
LIMIT = 1 << 18  # ExtractOptions::default().max_len, in bytes


def pair(gold: str | bytes, pred: str | bytes) -> bytes:
    g = gold.encode() if isinstance(gold, str) else gold
    p = pred.encode() if isinstance(pred, str) else pred
    return g + b"\0" + p


def conformance() -> list[bytes]:
    out = []
    for path in sorted(SUITES.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                out.append(pair(row["gold"], row["pred"]))
    return out


def prose(rng: random.Random, size: int) -> str:
    words = "we note that the sum of both terms equals their product so dividing gives".split()
    parts, n = [], 0
    while n < size:
        r = rng.random()
        if r < 0.08:
            w = f"${rng.randint(1, 99)} \\cdot {rng.randint(1, 99)} = {rng.randint(1, 9999)}$"
        elif r < 0.15:
            w = str(rng.randint(0, 10**6))
        else:
            w = rng.choice(words)
        parts.append(w)
        n += len(w) + 1
    return " ".join(parts)[:size]


def nesting() -> list[bytes]:
    out = []
    for n in (50, 500, 5_000):
        out.append(pair("1", "\\frac{" * n + "1" + "}{2}" * n))
        out.append(pair("1", "\\boxed{" + "\\sqrt{" * n + "4" + "}" * n + "}"))
        out.append(pair("(" * n + "1" + ")" * n, "(" * n + "1" + ")" * n))
        out.append(pair("0", "\\sin(" * n + "0" + ")" * n))
        out.append(pair("1", "\\left(" * n + "1" + "\\right)" * n))
    for n in (10_000, 100_000):
        out.append(pair("1", "{" * n))
        out.append(pair("{" * n, "}" * n))
        out.append(pair("1", "\\boxed{" * (n // 8)))
        out.append(pair("1", "(" * n + "1"))
        out.append(pair("1", "$" * n))
    return out


def towers() -> list[bytes]:
    shapes = [
        "2^{2^{2^{2^{2^{2}}}}}",
        "9^9^9^9^9",
        "10^{10^{10^{10}}}",
        "e^{e^{e^{e^{100}}}}",
        "(1+\\sqrt2)^{900}",
        "2^{-99999999}",
        "x^{x^{x^{x}}}",
        "\\pi^{700}",
        "e^{710}",
        "10^{400}\\pi",
        "(x+y+z)^{60}",
        "x^{999999999} - x^{999999998}",
        "\\sqrt2" * 26,
        "\\sqrt[999999]{2}",
        "i^{10^{18}}",
        "0^0",
        "(-8)^{1/3}",
        "2^{3^{4^{5}}}",
        "{" + "2^" * 2_000 + "2" + "}",
        # A zero scaled by a huge factor inside a function (a series of its
        # enclosure never ended; found by fuzzing).
        "\\arctan(0 \\cdot 10^{300})",
        "\\sin(0 \\cdot 10^{300}) + \\ln(1 + 0 \\cdot 10^{300})",
    ]
    return [pair(s, s) for s in shapes] + [pair(s, f"\\boxed{{{s}}}") for s in shapes]


def huge_numbers(rng: random.Random) -> list[bytes]:
    big = "".join(rng.choice("0123456789") for _ in range(100_000))
    return [
        pair(big, big),
        pair("1" + big, f"\\boxed{{{big}}}"),
        pair("0." + big, "0." + big[:-1]),
        pair("1e999999999", "10^{999999999}"),
        pair("1", "1e-999999999"),
        pair("10000000!", "10000000!"),
        pair("\\binom{1000000}{500000}", "\\binom{1000000}{500000}"),
        pair("12345678901234567890^{123456}", "12345678901234567890^{123456}"),
        pair("0.\\overline{" + big[:5_000] + "}", "0." + big[:5_000] * 2),
        pair("1,000" * 20_000, "1,000" * 20_000),
        pair("3.14159", "\\boxed{" + "3." + "1" * 50_000 + "}"),
        pair("\\frac{1}{2^{99}}", "\\frac{1}{2^{98}}"),
    ]


def many_markers(rng: random.Random) -> list[bytes]:
    long_text = prose(rng, 200_000)
    boxes = " ".join(f"\\boxed{{{k}}}" for k in range(18_000))
    return [
        pair("3", long_text + " so \\boxed{3}"),
        pair("3", boxes),
        pair("3", "<think>" + long_text + "</think> \\boxed{3}"),
        pair("3", "</think>" * 20_000 + "3"),
        pair("3", "<think>" * 20_000 + "\\boxed{3}"),
        pair("3", "<think>a</think>" * 10_000 + "#### 3"),
        pair("3", "#### 3\n" * 20_000),
        pair("3", "Answer: 3 " * 20_000),
        pair("3", "the answer is 3, or 4. " * 10_000),
        pair("3", "The final answer is $3$. " * 10_000),
        pair("3", "<answer>3</answer>" * 10_000),
        pair("3", "<answer>" * 20_000),
        pair("3", "**3** " * 30_000),
        pair("C", "(A) (B) (C) " * 15_000),
        pair("3", "3<|im_end|>" * 10_000 + "<|endoftext|>" * 5_000),
        pair("3", "$" + "3 $ $" * 30_000),
        pair("3", "\\(" * 20_000 + "3"),
        pair("3", "\\boxed" * 30_000 + "{3}"),
        pair("1, 2", "\\boxed{1} and \\boxed{2} " * 10_000),
        pair("3", long_text + "\n" * 50_000),
    ]


def structures() -> list[bytes]:
    row = " & ".join(str(k) for k in range(100))
    matrix = "\\begin{pmatrix}" + " \\\\ ".join([row] * 100) + "\\end{pmatrix}"
    return [
        pair(matrix, matrix),
        pair("\\{" + "1," * 20_000 + "1\\}", "1, " * 20_000 + "1"),
        pair("x<1 \\text{ or } x>3", " \\text{ or } ".join(["x < 1"] * 5_000)),
        pair("[2, 5]", "2 \\le x \\le " * 5_000 + "5"),
        pair("(1,2)", "(" + ",".join(["1"] * 50_000) + ")"),
        pair("\\begin{cases} a=1 \\\\ b=2 \\end{cases}", "\\begin{cases}" + "a=1\\\\" * 5_000),
        pair("x = 1", "x = " * 20_000 + "1"),
        pair("2:3", ":".join(["2"] * 20_000)),
        pair("10\\%", "10" + "\\%" * 20_000),
        pair("10 \\text{ cm}", "10" + "\\text{ cm}" * 10_000),
        pair("\\lim_{x\\to0} \\frac{\\sin x}{x}", "\\sum_{k=1}^{10^{9}} k"),
        pair("\\int_0^1 x dx", "\\prod_{k=1}^{100000} k"),
    ]


def text_encodings() -> list[bytes]:
    return [
        pair("12", "é" * 100_000 + " \\boxed{١٢}"),
        pair("12", "🙂" * 50_000 + " \\boxed{12}"),
        pair("12", "答案是" * 28_000 + "１２"),
        pair(b"\xff\xfe\xfd", b"\xed\xa0\xbd \\boxed{3}"),
        pair("3", b"\\boxed{3\xc3}" * 10_000),
        pair("3", b"\x00" * 1_000 + b"\\boxed{3}"),
    ]


def hedges(rng: random.Random) -> list[bytes]:
    """The hedge reader's shapes (issue 22): long chains of alternatives,
    qualifiers and restatements, candidates after a box, headings, blank
    boxes, reasoning tags written oddly, words as answers."""
    long_text = prose(rng, 100_000)
    or_chain = " or ".join(str(k) for k in range(20_000))
    qualifiers = " ".join(["maybe", "not", "at", "least", "or", "more", "than"] * 5_000)
    return [
        pair("3", "The answer is " + or_chain),
        pair("3", "\\boxed{3}" + " or maybe 4" * 10_000),
        pair("3", "\\boxed{3}" + " Or 3." * 10_000),
        pair("3", "the answer is 3 " + qualifiers),
        pair("3", "three or " * 20_000 + "3"),
        pair("3", "The answer is 3, " + "i.e. three, " * 5_000),
        pair("B", "The answer is " + "(B) and " * 10_000 + "(B)"),
        pair("B", "B/" * 50_000 + "B"),
        pair("3", "IV or " * 20_000 + "3"),
        pair("3", "３ or " * 20_000 + "3"),
        pair("3", "3 … " * 20_000),
        pair("3", "3 ... " * 20_000),
        pair("3", "the other root is 5, " * 10_000),
        pair("3", "So 3 is wrong. " * 10_000 + "It can't be 3."),
        pair("3", "Perhaps " * 30_000 + "the answer is 3."),
        pair("3", "my answer is correct. " * 10_000 + "The answer is 3."),
        pair("3", "answer answer answer\n" * 10_000 + "# Answer\n3"),
        pair("3", "**Final Answer**:\n" * 10_000 + "3"),
        pair("3", "\\boxed{\\phantom{" * 5_000 + "}" * 5_000 + "\\boxed{3}"),
        pair("3", "\\boxed{}" * 30_000 + "\\boxed{3}"),
        pair("3", "< think >" * 10_000 + "</think>\\boxed{3}"),
        pair("3", "<THINKING>" * 20_000 + "\\boxed{3}"),
        pair("3", "1+" * 50_000 + "3"),
        pair("3", "\\frac{" * 20_000 + "3"),
        pair("3", long_text + " so it is \\frac{3}{1}"),
        pair("3", long_text + " it is 3 or"),
        pair("New York", "New " * 40_000),
        pair("New York", "\\boxed{" + "New Jersey " * 20_000 + "}"),
        pair(" ".join(["word"] * 20_000), "\\boxed{word}"),
        pair("C", "DDDDD " * 20_000 + "C"),
        pair("42", "Answer: (C) " + "42 " * 30_000),
    ]


def at_the_limit(rng: random.Random) -> list[bytes]:
    out = []
    for size in (LIMIT - 1, LIMIT, LIMIT + 1):
        tail = " so \\boxed{3}"
        body = prose(rng, size - len(tail))
        out.append(pair("3", body + tail))
        out.append(pair("3" + " " * (size - 1), "3"))
    multibyte = "é" * ((LIMIT - 12) // 2)
    out.append(pair("3", multibyte + " \\boxed{3}"))
    return out


def exact_constants() -> list[bytes]:
    """Issue 22: exact constants, certified enclosures, Unicode signs."""
    shapes = [
        "\\pi + 10^{-125}",
        "3 + 10^{-9}\\sin 1",
        "e^{\\pi\\sqrt{163}}",
        "\\sqrt{3+2\\sqrt2}",
        "\\sin 80^\\circ (1 + \\sqrt3)",
        "\\lfloor 10^{400}\\pi \\rfloor",
        "\\arctan(10^{400}) + \\ln(\\ln(10^{300}))",
        "\\sqrt[1000]{2}^{999}",
        "|x - 500| + \\sqrt{x^2 - 1000x + 250000}",
        "\\sum_{k=1}^{1000} \\sin k",
        "(x+y+z+\\sqrt2)^{30}",
        "0.84147098480789650665250232163029899962256306079837",
        "\u2212\u2012\u2014\ufe63\uff0d3 \u2265 \u00b1 \u2260 \\not= 3\u0338 3\u20d2",
        "\uff13\u00bd\u00be 10\u00b9\u00b2 x\u207b\u00b9 \u03b8 \u2225 \u22a5",
    ]
    return [pair(s, f"\\boxed{{{s}}}") for s in shapes] + [pair("1", s) for s in shapes]


def round4() -> list[bytes]:
    """Issue 31 (round 4): hidden text, answers taken back, cases, other
    languages, ranges, compound quantities, quoted values, choice letters
    repeated and constants renamed, each as models write it and repeated to
    the limit."""
    shapes = [
        ("5", "The answer is ~~5~~ 6. <!-- or 7 --> <span style='display:none'>8</span>"),
        ("5", "\\boxed{6\\phantom{5}} \\color{white}{5} \\textcolor[HTML]{FFFFFF}{5}"),
        ("5", "\\mathllap{5} \\rlap{5} \\hphantom{5} \\smash{5} 6"),
        ("5", "The answer is 5.[^1]\n\n[^1]: Actually it is 6.\n    more note"),
        ("16", "\\boxed{16}. Actually no, it isn't. I made an error. 15 is not the answer."),
        ("4", "| n odd | 3 |\n| n even | 4 |\n- if n is odd: 3\n- if n is even: 4"),
        ("5", "Die Antwort ist 5 oder 6. vielleicht 5, не 5, ou 6, talvez 7"),
        ("5", "The answer is between 3 and 7, 3-7, from 3 to 7, 3 to 5 cm"),
        ("7.5", "It took 7 hours and 30 minutes, 2 feet 6 inches, $5 and 25 cents."),
        ("5", "The answer is \"5\". It is 'five', \u201c5\u201d, `5`."),
        ("C", "Therefore, the string would be CCCCC. The best answer is C: 42 apples."),
        ("K", "KKKKK kkkkk (K) the answer is K: option text or L: other"),
        ("C_1 e^x + C_2 e^{-x}", "\\boxed{A e^x + B e^{-x}}"),
        ("x^2/2 + C", "\\boxed{\\frac{x^2}{2} + c_1 + c_2 + k + K_{12}}"),
        (
            "7",
            "A common wrong answer is 9. Student A answered 12. Answer: 7 (a common mistake is 8)",
        ),
        ("6", '\u201cThe answer is 6,\u201d he said. "The answer is 5", said John. **Example:** 4'),
        (
            "7",
            "Par exemple, la r\u00e9ponse est 7. z.B. 3 + 4 = 7. Write your answer as \\boxed{42}.",
        ),
        (
            "5",
            "\u7b54\uff1a5\u3002La risposta non \u00e8 5, non 6. "
            "La respuesta no es 5. Ans: 5 plans: 6",
        ),
    ]
    out = [pair(g, p) for g, p in shapes]
    for g, p in shapes:
        out.append(pair(g, (p + " ") * max(1, (LIMIT // 2) // (len(p) + 1))))
    out += [
        pair("5", "<span style='color:white'>" * 20_000 + "5"),
        pair("5", "~~" * 60_000 + "5"),
        pair("5", "<!--" * 30_000 + "5"),
        pair("5", "[^1]" * 30_000 + "5"),
        pair("7", "7 hours " * 30_000),
        pair("7", "7 hours 30 minutes 15 seconds " * 8_000),
        pair("C", "C" * 200_000),
        pair("6", "\u201c" * 60_000 + "The answer is 6,\u201d he said."),
        pair("6", '"The answer is 6 ' * 15_000 + '", said John.'),
        pair("8", "Answer: 7" + " (a common mistake is 8)" * 10_000),
        pair("C", "the string would be " + "CD" * 50_000),
        pair("x + C", "\\boxed{x + " + " + ".join(f"c_{k}" for k in range(5_000)) + "}"),
    ]
    return out


def prompts_and_rewards() -> list[bytes]:
    """The target scores every reward kind with the gold as the prompt too: a
    question whose arithmetic an answer may copy (words before wide
    characters: `multiplied 中` panicked), and completions in the formats the
    format and choice rewards read."""
    shapes = [
        ("What is 12 multiplied \u4e2d 13?", "\\boxed{12 \\cdot 13}"),
        ("What is 7 divided by 7? \u00e9 12 times 13 \U0001f600", "\\boxed{12 \\times 13}"),
        (
            "Compute $79 + 85$ \u2212 1 \u00d7 2 \u00f7 3.",
            "We compute 79 + 85 = 164. \\boxed{79+85}",
        ),
        ("C", "<think>so (A) or (C)?</think>\n<answer>C</answer>"),
        ("42", "<think>\u7b54\uff1a42</think> <answer>\\boxed{42}</answer> the the the the"),
    ]
    out = [pair(g, p) for g, p in shapes]
    out.append(pair("What is 2 multiplied " * 5_000 + "3?", "\\boxed{2 \\cdot 3}"))
    return out


def seeds() -> list[bytes]:
    rng = random.Random(9)
    return (
        conformance()
        + nesting()
        + towers()
        + huge_numbers(rng)
        + many_markers(rng)
        + structures()
        + text_encodings()
        + hedges(rng)
        + at_the_limit(rng)
        + exact_constants()
        + round4()
        + prompts_and_rewards()
    )


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "rust" / "fuzz" / "seeds" / "verify"
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        old.unlink()
    data = seeds()
    for blob in data:
        (out / hashlib.sha1(blob).hexdigest()).write_bytes(blob)
    longest = max(len(b) for b in data)
    print(f"{len(data)} seeds in {out} (longest {longest:,} bytes)")


if __name__ == "__main__":
    main()
