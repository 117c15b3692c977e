"""Which answer counts, issue 31 (round 4): answers taken back, hidden text, cases.

Written here by hand, as models write them, to check docs/verify_semantics.md
rules 4 (an answer taken back after it is given), 11 (hidden text is not
text) and 12 (a table or list of cases is no answer). The reference is the
reading a careful human grader gives each completion, from its rendered
form; every case goes through every entry point a trainer calls
(tests/entry_points.py).
"""

from __future__ import annotations

import pytest
from entry_points import assert_not_paid, assert_paid, cases, each_entry_point

import grpo_fast

# Rule 4: the answer, then a statement that it is wrong, not the answer, or a
# mistake, in the answer's sentence or after it; boxes, markers and prose.
TAKEN_BACK = [
    ("16", r"The total is \boxed{16}. But wait, so 16 is not the answer after all."),
    ("16", "The answer is 16, although this is incorrect."),
    ("16", "So the answer is 16. Actually no, it isn't."),
    ("16", r"\boxed{16} no wait, I made an error."),
    ("16", "The answer is 16. But that's wrong."),
    ("16", "Answer: 16. Hmm, this is not correct."),
    ("16", "x = 16. That answer is incorrect, I made a mistake somewhere."),
    ("16", "So we get 16. Oops, I made a mistake."),
    ("16", r"\boxed{16}. Hmm, that doesn't seem right."),
    ("16", r"\boxed{16}. Sorry, 16 is incorrect."),
    ("16", r"$\boxed{16}$. Actually, that's not the answer."),
    ("16", "**Answer:** 16\n\nWait, I think I made an error in step 2."),
    ("16", "Final answer: 16. But this is wrong."),
    ("16", "Therefore 16. Hmm, no, that's not right."),
    ("16", "#### 16\nNo wait, I miscalculated."),
    ("16", "<answer>16</answer> Actually no, that isn't it."),
    ("16", "The answer is sixteen. My answer is not correct though."),
    # Withdrawn without a verdict: the phrase takes back what was just said.
    ("12", "Final answer: 12. Just kidding!"),
    ("12", r"\boxed{12}. Scratch that."),
    ("12", "The answer is 12. Never mind."),
    ("12", "So the answer is 12. Hmm, ignore that."),
    ("12", "Answer: 12\n\nPlease disregard my answer above."),
    ("12", "The answer is 12. I take that back."),
    ("12", "The answer is 12, or not."),
    ("12", "#### 12\nForget it."),
]

# Rule 11: hidden text pays nothing; it is read as if it were not there.
HIDDEN = [
    ("5", "The answer is ~~5~~ 6."),
    ("6", r"The answer is \boxed{5}<!-- or 6 -->"),
    ("5", 'The answer is <span style="display:none">5</span> 6.'),
    ("5", '<span style="visibility: hidden">\\boxed{5}</span> \\boxed{6}'),
    ("5", "The answer is <span hidden>5</span>6."),
    ("5", 'Answer: <span style="font-size:0">5</span> 6'),
    ("5", 'Answer: <span style="color: #ffffff">5</span> 6'),
    ("5", r"<s>\boxed{5}</s> \boxed{6}"),
    ("5", r"\boxed{6} <del>5</del>"),
    ("5", "The answer is <strike>5</strike> 6."),
    ("5", r"\boxed{\color{white}{5}}"),
    ("5", r"\boxed{6 \textcolor{white}{5}}"),
    ("5", r"The answer is ${\color{white} 5}6$."),
    ("5", r"\boxed{6\phantom{5}}"),
    ("5", r"\boxed{\hphantom{5}6}"),
    ("5", r"\boxed{\rlap{5}6}"),
    ("5", "The answer is 6.[^1]\n\n[^1]: Actually it is 5."),
    ("5", 'Answer: <font color="white">5</font> 6'),
    ("5", "Answer: 6 <!-- the answer is 5"),
]

# Visible decoration is transparent, and a hedge that is hidden hedges nothing.
SHOWN = [
    ("5", r"\boxed{5}<!-- or 6 -->"),
    ("5", "The answer is 5 ~~or 6~~."),
    ("5", '\\boxed{5} <span style="display:none">or maybe 6</span>'),
    ("5", r"\boxed{5\phantom{ or 6}}"),
    ("6", "The answer is ~~5~~ 6."),
    ("6", 'The answer is <span style="display:none">5</span> 6.'),
    ("6", r"<s>\boxed{5}</s> \boxed{6}"),
    ("6", "The answer is 6.[^1]\n\n[^1]: Actually it is 5."),
    ("36", r"\boxed{\color{blue}{36}}"),
    ("36", r"\boxed{\textcolor{red}{36}}"),
    ("36", r"The answer is $\mathbf{36}$."),
    ("36", "The answer is <b>36</b>."),
    ("36", "The answer is <u>36</u>."),
    ("36", "**Answer:** <strong>36</strong>"),
    ("36", r"The answer is $\color{blue}{36}$."),
    ("36", r"The answer is ${\color{blue} 36}$."),
    ("36", r"\boxed{\color[HTML]{FF0000}{36}}"),
    ("36", '<span style="color: red">The answer is 36.</span>'),
    ("36", '<span style="background-color: white">The answer is 36.</span>'),
    # LaTeX spacing is no strikethrough.
    ("5", "$x~~=~~5$"),
]

# Rule 4 takes back only the answer: a confirmation, or another value
# eliminated, leaves it paid.
CONFIRMED = [
    ("16", r"The answer is \boxed{16}. My answer is correct."),
    ("16", "The answer is 16. I checked: 16 is right."),
    ("16", r"\boxed{16}. Verify: 4*4 = 16, which is correct."),
    ("16", "So the answer is 16. No mistakes."),
    ("16", r"\boxed{16}. 15 is not the answer."),
    ("16", "The answer is 16. This is correct; I made no mistakes."),
    ("16", r"\boxed{16}. There is no error in this computation."),
    ("16", "The answer is 16, which is not prime."),
    ("16", r"\boxed{16}. It isn't 15."),
    ("16", r"\boxed{16}. I hope this is correct."),
    ("16", "We get 16. It is not negative, so it works."),
    ("16", "Since 15 is wrong, the answer is 16."),
    ("5", r"\boxed{5}. Note that $x=-5$ is not valid since $x > 0$."),
    # Words of a withdrawal that withdraw nothing.
    ("12", "The answer is 12. We ignore that root because x > 0."),
    ("12", "The answer is 12. We disregard the negative solution."),
    ("12", "The answer is 12 whether or not the box is full."),
    ("12", "The answer is 12. No kidding: I checked it twice."),
]

# Rule 12: rows or items that each give a value under a condition split the
# answer by case; the last case is not the answer.
CASES = [
    ("4", "| case | value |\n|---|---|\n| n odd | 3 |\n| n even | 4 |"),
    ("4", "- if n is odd: 3\n- if n is even: 4"),
    ("4", "The number of ways:\n- when n is odd, 3\n- when n is even, 4"),
    ("4", "1. For n = 1: 3\n2. For n = 2: 4"),
    ("4", "* Case 1: 3\n* Case 2: 4"),
    ("4", "So we get:\n\n| $n$ even | $4$ |\n| $n$ odd | $3$ |\n| otherwise | $4$ |"),
    # In prose: another case's value after the answer, in its sentence or after.
    ("5", "For even n the answer is 5, for odd n it is 6."),
    ("5", "The answer is 5, and for odd n it is 6."),
    ("5", "The answer is 5. For odd n, it is 6."),
    ("5", r"\boxed{5}. When n is odd the formula gives 6."),
    # Answers stated case by case, the last paid before: each statement has
    # its condition (or an ordinal case, `otherwise`) and another value.
    ("6", "For even n the answer is 5. For odd n the answer is 6."),
    ("6", "For even n the answer is 5; for odd n the answer is 6."),
    ("6", "If n is even, the answer is 5. If n is odd, the answer is 6."),
    ("6", "When n is even the answer is 5.\nWhen n is odd the answer is 6."),
    ("6", "In the first case the answer is 5. In the second case the answer is 6."),
    ("6", "Case 1: the answer is 5. Case 2: the answer is 6."),
    ("6", "If x > 0 then the answer is 5, otherwise the answer is 6."),
    ("6", "For n = 1 the answer is 5 and for n = 2 the answer is 6."),
    ("6", "If the triangle is acute, the answer is 5. If it is obtuse, the answer is 6."),
    ("6", "If n is even: Answer: 5\nIf n is odd: Answer: 6"),
    ("6", "When x is negative the final answer is 5. When x is positive the final answer is 6."),
    ("6", "The answer is 5 when k is even. Otherwise, the answer is 6."),
    # A negation in the first case's clause takes nothing back.
    ("6", "For even n the answer is 5, not 7. For odd n the answer is 6."),
    ("6", "For even n the answer is 5, no doubt. For odd n the answer is 6."),
    # Without a marker: values given case by case in prose.
    ("6", "For n even: 5. For n odd: 6."),
    ("6", "If n is even we get 5, and if n is odd we get 6."),
    ("6", "For n even: 5 (not 7). For n odd: 6."),
    ("9", "When x is negative the result is 4. When x is positive the result is 9."),
]

# Items with a total, steps ending in a result, and cases that agree pay.
NOT_CASES = [
    ("12", "| item | cost |\n|---|---|\n| apples | 5 |\n| pears | 7 |\n| Total | 12 |"),
    ("12", "1. Add 5 and 7.\n2. The sum is 12."),
    ("14", "1. 3 + 4 = 7\n2. 7 \\times 2 = 14"),
    ("7", "- odd n: 3 ways\n- even n: 4 ways\n- Total: 7"),
    ("4", "- if n is odd: 4\n- if n is even: 4"),
    ("12", "| n | f(n) |\n|---|---|\n| 1 | 5 |\n| 2 | 12 |\n\nSo f(2) = 12."),
    # A condition that names no other value, or the same one.
    ("5", "The answer is 5 for odd n."),
    ("5", "The answer is 5. For odd n, it is also 5."),
    ("5", r"\boxed{5}. If x is negative, |x| = -x."),
    ("5", "The answer is 5 because if n is even then 10/2 = 5."),
    # One conditional answer, a condition that is a fact, an earlier answer
    # taken back or questioned, or the same value in each case.
    ("6", "For n = 3, the answer is 6."),
    ("6", "Since n is odd, the answer is 6."),
    ("6", "If we add 2 and 4, the answer is 6."),
    ("6", "We try n = 2: the answer is not 5. For n = 3 the answer is 6."),
    ("6", "The answer is 5? No wait. For the given n = 3, the answer is 6."),
    ("6", "At first I thought the answer is 5. Checking again with x = 2, the answer is 6."),
    ("6", "For even n the answer is 6. For odd n the answer is 6."),
    ("6", "Suppose the answer is 5. Then 5 + 1 = 6, contradiction. So the answer is 6."),
    ("10", "If we add 2 and 3 we get 5, and if we double it we get 10."),
    ("12", "For the first part we get 5. For the second part we get 12."),
    ("12", "We have 5 apples. For n = 3 we get 12."),
]

NOT_PAID = TAKEN_BACK + HIDDEN + CASES
PAID = SHOWN + CONFIRMED + NOT_CASES


@each_entry_point
@cases(NOT_PAID)
def test_not_paid(entry, gold, completion):
    assert_not_paid(entry, gold, completion)


@each_entry_point
@cases(PAID)
def test_paid(entry, gold, completion, request):
    assert_paid(entry, gold, completion, request)


@pytest.mark.parametrize(("gold", "completion"), TAKEN_BACK, ids=[p for _, p in TAKEN_BACK])
def test_the_verdict_says_the_answer_was_taken_back(gold, completion):
    v = grpo_fast.verify_detailed(gold, completion)
    assert not v.matched
    assert v.reason.startswith("hedge: "), v


def test_hidden_text_in_a_huge_or_unclosed_input_ends_in_bounded_time():
    import time

    for text in [
        "<s>" * 50_000 + "5",
        "~~a " * 50_000 + "5",
        "<!--" * 50_000 + "5",
        "\\color{" * 30_000 + "5",
        "\\phantom{" * 30_000 + "5",
        '<span style="display:none">' * 5_000 + "5",
        "[^1" * 50_000 + "5",
        "<del>" * 20_000 + "</del>" * 20_000 + "5",
    ]:
        start = time.perf_counter()
        grpo_fast.verify_detailed("5", text[: 1 << 18])
        assert time.perf_counter() - start < 0.5, text[:20]
