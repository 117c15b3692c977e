"""Which answer counts, issue 31 (round 4): ranges and sets of candidates.

Written here by hand, as models write them, to check docs/verify_semantics.md
rule 14: a range (`between 4 and 6`, `5 to 7`, `roughly 10-12`, `5–7 days`)
or a set of candidates (`one of 12, 13 and 14`) is no answer to a question
that asks for one value, whichever value of it the gold is (an end included).
A value stated beside a range, a change (`rose from 5 to 7`), a subtraction
(`10-6 = 4`, `\\boxed{10 – 3}`) and an interval written as math against an
interval gold still pay. The reference is the reading a careful human grader
gives each completion; every case goes through every entry point a trainer
calls (tests/entry_points.py).
"""

from __future__ import annotations

import time

import pytest
from entry_points import assert_not_paid, assert_paid, cases, each_entry_point

import grpo_fast

# A range in words or with a dash, or a set of candidates, against a value
# inside it or at one of its ends.
RANGES = [
    ("5", "The answer is between 4 and 6."),
    ("6", "The answer is between 4 and 6."),
    ("8", "The value lies in the range 7 to 9."),
    ("9", "The value lies in the range 7 to 9."),
    ("8", "The answer is from 7 to 9."),
    ("9", "Answer: from 7 to 9"),
    ("13", "The answer is one of 12, 13 and 14."),
    ("14", "The answer is one of 12, 13, or 14."),
    ("12", "The answer is either 12 or 13."),
    ("5", r"So $x \in [4, 6]$."),
    ("6", r"\boxed{x \in [4, 6]}"),
    ("5", "The answer is at least 5 and at most 8."),
    ("8", "The answer is at least 5 and at most 8."),
    ("6", "The answer is somewhere around 5-7."),
    ("7", "The answer is somewhere around 5-7."),
    ("7", "The answer is 5 to 7."),
    ("5", "The answer is 5 to 7."),
    ("7", "The answer is 5\u20137."),
    ("12", "The answer is roughly 10-12."),
    ("11", "The answer is roughly 10-12."),
    ("7", "So there are between 5 and 7 apples."),
    ("7", "So there are 5 to 7 apples."),
    ("7", "It takes 5-7 days."),
    ("7", "It takes 5 \u2013 7 days."),
    ("7", r"\boxed{5 \text{ to } 7}"),
    ("7", r"\boxed{\text{between 5 and 7}}"),
    ("7", "**Answer:** 5 through 7"),
    ("7", "#### 5-7 apples"),
    ("7", "<answer>between 5 and 7</answer>"),
    ("10", "The answer is anywhere from 8 to 10 cookies."),
    ("14", "The answer is any of 12, 13, 14."),
    ("6", "The answer is within [4, 6]."),
    ("6", "Answer: x in [4, 6]"),
    ("12", "The answer is roughly 10-12%."),
    ("7", "The answer is from 7 up to 9."),
    ("9", "After adding the numbers, we see it is from 7 to 9."),
    ("6", "It takes 4 - 6 days."),
    ("6", "The answer is 4--6."),
    ("6", "So there are 4~6 apples."),
    ("4", "The answer is $4$\u2013$6$."),
    # Candidates joined by `and` after a copula or a colon, with no marker.
    ("14", "The possible answers are 12, 13 and 14."),
    ("14", "The candidates are 12, 13, and 14."),
    ("5", "We have 5 cases: 1, 2, 3, 4 and 5."),
    ("5", "The solutions are x = 3 and x = 5."),
    ("5", "The solutions are $x = 3$ and $x = 5$."),
]

# No range: a value stated beside one, a change, a conversion, a subtraction,
# a lone `between`, an interval against an interval gold.
NOT_RANGES = [
    ("5", "x = 5, between the two roots"),
    ("5", "The answer is 5 (between 4 and 6 as expected)."),
    ("12", "We check that 12 lies between 10 and 15."),
    ("5", "So we round 4.6 to 5."),
    ("7", "The temperature rose from 5 to 7."),
    ("55", "The sum of the integers from 1 to 10 is 55."),
    ("4", "So we get 10-6 = 4"),
    ("4", "$10-6$"),
    ("4", r"\boxed{10-6}"),
    ("7", "\\boxed{10 \u2013 3}"),
    ("3", "Thus one of the roots is 3."),
    ("12", "Add 5 to 7 to get 12."),
    ("4", "So 10 - 6 is 4."),
    ("4", "The answer is 10 - 6."),
    ("[4, 6]", "The answer is $[4, 6]$."),
    ("[4, 6]", r"\boxed{x \in [4, 6]}"),
    (r"4 \le x \le 6", r"The answer is $4 \le x \le 6$."),
    (r"4 \le x \le 6", r"\boxed{[4, 6]}"),
    ("[4, 6]", "The answer is within [4, 6]."),
    ("[4, 6]", "x is in the interval [4, 6]."),
    ("[4, 6]", "The answer is the set [4, 6]."),
    # Values joined by `and` in reasoning, or one value twice.
    ("5", "The sum of 2 and 3 is 5."),
    ("5", "The primes are 2 and 3, so the answer is 5."),
    ("5", "The values are 2 and 3 and their sum is 5."),
    ("5", "The roots are 5 and 5."),
]


@each_entry_point
@cases(RANGES, ids="gold|completion")
def test_a_range_is_not_paid(entry, gold, completion):
    assert_not_paid(entry, gold, completion)


@each_entry_point
@cases(NOT_RANGES, ids="gold|completion")
def test_a_value_beside_a_range_still_pays(entry, gold, completion, request):
    assert_paid(entry, gold, completion, request)


@pytest.mark.parametrize(
    "completion",
    ["The answer is between 4 and 6.", "It takes 5-7 days.", "The answer is one of 12, 13 and 14."],
)
def test_the_verdict_names_the_range(completion):
    for gold in ["4", "5", "6", "7", "12", "13", "14"]:
        v = grpo_fast.verify_detailed(gold, completion)
        assert not v.matched
        assert v.reason == "hedge: a range or a set of candidates, not a value", v


def test_ranges_in_a_huge_input_end_in_bounded_time():
    for text in [
        "between 1 and " * 20_000 + "5",
        "one of 1, " * 20_000 + "5",
        "roughly 1-" * 20_000 + "5",
        "1 to " * 40_000 + "5",
        "from " * 40_000 + "5",
    ]:
        start = time.perf_counter()
        grpo_fast.verify_detailed("5", text[: 1 << 18])
        # A hang check, not a timing: the machine may be loaded.
        assert time.perf_counter() - start < 10, text[:20]
