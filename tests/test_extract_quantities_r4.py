"""Which answer counts, issue 31 (round 4): compound quantities.

Written here by hand, as models write them, to check docs/verify_semantics.md
rule 15: `7 hours 30 minutes`, `2 feet 6 inches`, `3 m 20 cm`, `1 h 15 min`,
`5 lb 3 oz`, `2 years and 3 months` are one quantity, never their last (or
first) number. The quantity answers a gold that is its value in its first
(largest) unit or in its last (smallest) unit (`7 hours 30 minutes` is 7.5
hours or 450 minutes), and nothing else. The reference is the reading a
careful human grader gives each completion; every case goes through every
entry point a trainer calls (tests/entry_points.py).
"""

from __future__ import annotations

import time

from entry_points import assert_not_paid, assert_paid, cases, each_entry_point

import grpo_fast

# One of the quantity's numbers alone is not the quantity.
NOT_PAID = [
    ("30", "The answer is 7 hours 30 minutes."),
    # Numbers in math or bold are parts of the quantity too.
    ("7", "The answer is $7$ hours 30 minutes."),
    ("30", "The answer is $7$ hours and $30$ minutes."),
    ("2", r"The answer is \(2\) feet \(6\) inches."),
    ("7", "The answer is **7** hours **30** minutes."),
    ("7", "The answer is 7 hours 30 minutes."),
    ("30", "It took 7 hours and 30 minutes."),
    ("30", r"\boxed{7 \text{ hours } 30 \text{ minutes}}"),
    ("30", "#### 7 hours 30 minutes"),
    ("6", "It is 2 feet 6 inches."),
    ("2", "It is 2 feet 6 inches."),
    ("20", r"\boxed{3 m 20 cm}"),
    ("20", "Answer: 3 m 20 cm"),
    ("15", "It takes 1 h 15 min."),
    ("3", "The weight is 5 lb 3 oz."),
    ("3", "So 2 years and 3 months."),
    ("2", "So 2 years and 3 months."),
    ("25", "He has 5 dollars and 25 cents."),
    ("6", "She is 5'6\" tall."),
    ("30", "The answer is 7h 30m."),
    # A quantity among alternatives is a hedge like any value (rule 3).
    ("450", "The answer is 7 hours 30 minutes or 8 hours."),
    # Another value of the quantity's unit is another value.
    ("8", "The answer is 7 hours 30 minutes."),
    ("7.3", "The answer is 7 hours 30 minutes."),
    ("2", "It is 3 gallons 2 quarts."),
    ("15", "The angle is 30 degrees 15 minutes."),
    ("15", "The angle is 30\u00b0 15'."),
    ("6", "It is 2 ft. 6 in."),
    ("3", "It is 1 lb. 3 oz."),
    ("25", "It costs $5 and 25 cents."),
    ("30", "It took seven hours and 30 minutes."),
    ("30", "The answer is seven hours and thirty minutes."),
    ("30", "The answer is 7 hours 30."),
    ("6", "She is 5 feet 6."),
    ("6", "She is 5'6."),
]

# The quantity in its first or its last unit; one unit alone; a compound
# that is not the answer.
PAID = [
    ("7.5", "The answer is 7 hours 30 minutes."),
    ("7.5", "The answer is $7$ hours and $30$ minutes."),
    ("30", r"The answer is \(2\) feet \(6\) inches."),
    ("450", "The answer is **7** hours **30** minutes."),
    ("7", "The answer is $7$. It took 3 hours 20 minutes."),
    ("450", "The answer is 7 hours 30 minutes."),
    ("450", "It took 7 hours and 30 minutes."),
    ("7.5", r"\boxed{7 \text{ hours } 30 \text{ minutes}}"),
    ("450", "#### 7 hours 30 minutes"),
    ("30", "It is 2 feet 6 inches."),
    ("2.5", "It is 2 feet 6 inches."),
    ("320", r"\boxed{3 m 20 cm}"),
    ("3.2", "Answer: 3 m 20 cm"),
    ("75", "It takes 1 h 15 min."),
    ("1.25", "It takes 1 h 15 min."),
    ("83", "The weight is 5 lb 3 oz."),
    ("27", "So 2 years and 3 months."),
    ("5.25", "He has 5 dollars and 25 cents."),
    ("66", "She is 5'6\" tall."),
    ("10", "He walked 2 hours and 30 minutes, so he covered 10 km."),
    ("30", "The answer is 30 minutes."),
    ("7", "The answer is 7 hours."),
    ("30", r"It takes 7 hours and \boxed{30} minutes."),
    ("14", "It is 3 gallons 2 quarts."),
    ("30.25", "The angle is 30 degrees 15 minutes."),
    ("30", "It is 2 ft. 6 in."),
    ("19", "It is 1 lb. 3 oz."),
    ("5.25", "It costs $5 and 25 cents."),
    ("450", r"The answer is $7 \text{ hours } 30 \text{ minutes}$."),
    ("450", "It took seven hours and 30 minutes."),
    ("7.5", "The answer is seven hours and thirty minutes."),
    ("66", "She is 5 feet 6."),
    # A number after a comma is no part of the quantity.
    ("5", "He worked 8 hours, 5."),
]


@each_entry_point
@cases(NOT_PAID, ids="gold|completion")
def test_a_number_of_a_compound_quantity_is_not_paid(entry, gold, completion):
    assert_not_paid(entry, gold, completion)


@each_entry_point
@cases(PAID, ids="gold|completion")
def test_the_quantity_in_its_first_or_last_unit_pays(entry, gold, completion, request):
    assert_paid(entry, gold, completion, request)


def test_the_verdict_says_why():
    v = grpo_fast.verify_detailed("30", "The answer is 7 hours 30 minutes.")
    assert not v.matched
    assert "compound quantity" in v.reason, v
    found = grpo_fast.extract_answer("The answer is 7 hours 30 minutes.")
    assert found is not None and found.answer == "7 hours 30 minutes"


def test_quantities_in_a_huge_input_end_in_bounded_time():
    for text in [
        "1 h " * 60_000 + "30 min",
        "1 h 30 min " * 20_000,
        "5'" * 100_000 + '6"',
        "The answer is " + "1 hours and " * 20_000 + "5",
    ]:
        start = time.perf_counter()
        grpo_fast.verify_detailed("5", text[: 1 << 18])
        # A hang check, not a timing: the machine may be loaded.
        assert time.perf_counter() - start < 10, text[:20]
