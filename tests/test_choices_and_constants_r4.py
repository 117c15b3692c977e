"""Must be paid, issue 31 (round 4): choice letters as models write them and
arbitrary constants named differently.

Written here by hand, as models write them, to check docs/verify_semantics.md
rule 10 (choice letters) and the equality rule for arbitrary constants. The
reference is what a careful human grader says of each completion; every case
goes through every entry point a trainer calls (tests/entry_points.py).
"""

from __future__ import annotations

import pytest
from entry_points import assert_not_paid, assert_paid, cases, each_entry_point

import grpo_fast

# Rule 10: the letter the completion names, however it is written.
LETTERS_PAID = [
    ("K", "KKKKK"),
    ("C", "CCCC"),
    ("C", "**C**"),
    ("C", r"\[ C \]"),
    ("C", r"\text{C}"),
    ("C", "Following the instructions, the string would be CCCC"),
    ("C", "Therefore, the string would be CCCCC."),
    ("C", "ccccc"),
    ("C", "The answer is ccccc"),
    ("C", "the best answer is C: 42 apples"),
    ("C", "The best answer is C: 42 apples."),
    ("C", "The correct option is (C) 42 apples"),
    ("C", "The answer is (C) 42 apples"),
    ("K", "The answer is KKKKK"),
    ("K", r"\boxed{K}"),
    ("K", "So the answer is (K)."),
    ("M", "So we pick M"),
    ("B", r"The answer is $\boxed{\text{B}}$"),
    ("D", "Answer: DDDD"),
]

# A run of different letters, two options, or a run too long to be a letter.
LETTERS_NOT_PAID = [
    ("C", "ABCD"),
    ("C", "The answer is ABCD"),
    ("C", "Therefore, the string would be ABCD"),
    ("C", "the string would be CCCCD"),
    ("C", "The answer is AAAA"),
    ("C", "the best answer is C: 42 apples or D: 43 pears"),
    ("43", "the best answer is C: 42 apples or D: 43 pears"),
    ("K", "The answer is L"),
    ("K", "KKKKKLLLLL"),
    ("C", "the string would be CCCCCCCCCCCCCCCC"),
]

# Arbitrary constants renamed consistently; the variable never.
CONSTANTS_PAID = [
    ("y = C e^{2x}", "y = c e^{2x}"),
    ("y = C e^{2x}", "The general solution is $y = k e^{2x}$."),
    ("C_1 e^x + C_2 e^{-x}", "c_1 e^x + c_2 e^{-x}"),
    ("C_1 e^x + C_2 e^{-x}", r"\boxed{A e^x + B e^{-x}}"),
    ("C_1 e^x + C_2 e^{-x}", r"\boxed{C_2 e^x + C_1 e^{-x}}"),
    ("x^2/2 + C", r"\boxed{\frac{x^2}{2} + c}"),
    ("x^2/2 + C", r"\boxed{x^2/2 + K}"),
    (r"\frac{x^2}{2} + C", r"\boxed{\frac{1}{2}x^2 + C_1}"),
    ("y = C_1 \\cos x + C_2 \\sin x", r"\boxed{y = A\cos x + B\sin x}"),
]

CONSTANTS_NOT_PAID = [
    # A wrong function, whatever the constant is called.
    ("y = C e^{2x}", "y = c e^{3x}"),
    # The constant dropped, or one constant for two.
    ("x^2/2 + C", r"\boxed{x^2/2}"),
    ("C_1 e^x + C_2 e^{-x}", r"\boxed{A e^x + A e^{-x}}"),
    # The variable is no constant: it is never renamed.
    ("x^2/2 + C", r"\boxed{t^2/2 + C}"),
    ("x + C", r"\boxed{x + y}"),
    ("x + C", r"\boxed{x + x}"),
    # Capital letters beside `C` name things (angles of a triangle), not constants.
    (r"\pi - A - C", r"\boxed{\pi - A - B}"),
    # `d` is a differential, not a constant's name.
    ("x + C", r"\boxed{x + d}"),
]

# Read as a letter only against a letter gold (rule 10: a run of one letter
# ending the prose, a capital after J). math-verify's `parse` sees no gold, so
# the compatible API cannot read them, as math-verify does not.
NEEDS_THE_GOLD = {
    "Following the instructions, the string would be CCCC",
    "Therefore, the string would be CCCCC.",
    "So we pick M",
}
# compat.math_verify.parse drops a letter with its option (COMPAT_PARSE in
# tests/entry_points.py); verify() pays it.
COMPAT_PARSE = {"The correct option is (C) 42 apples", "The answer is (C) 42 apples"}

PAID = LETTERS_PAID + CONSTANTS_PAID
NOT_PAID = LETTERS_NOT_PAID + CONSTANTS_NOT_PAID


@each_entry_point
@cases(PAID, ids="gold|completion")
def test_paid(entry, gold, completion, request):
    if entry == "compat.math_verify" and completion in NEEDS_THE_GOLD:
        pytest.skip("math-verify's parse sees no gold: a letter run is read against a letter gold")
    if entry == "compat.math_verify" and completion in COMPAT_PARSE:
        reason = "owner wt-compat: compat.math_verify.parse drops a letter with its option"
        request.applymarker(pytest.mark.xfail(strict=False, reason=reason))
    assert_paid(entry, gold, completion, request)


@each_entry_point
@cases(NOT_PAID, ids="gold|completion")
def test_not_paid(entry, gold, completion):
    assert_not_paid(entry, gold, completion)


def test_renaming_constants_is_symmetric_in_the_constants_only():
    # The gold's constants may be renamed; a completion may not rename x.
    assert grpo_fast.verify("y = C e^{2x}", "y = c e^{2x}")
    assert not grpo_fast.verify("y = C e^{2x}", "y = C e^{2t}")


def test_a_backslash_before_a_wide_character_is_no_crash():
    # Found by `make fuzz` (issue 31): `\` then a multi-byte character was
    # sliced inside the character when the value was read as arithmetic.
    pred = "$\\" + "\ufffd" * 100 + "boxed{4, 5}$"
    grpo_fast.extract_answer(pred)  # returns (a panic raises InternalError)
    assert grpo_fast.verify("$AB=4,CD=5$", pred) is False
