"""APIs of other verifiers on grpo-fast's core, for code written against them.

- :mod:`grpo_fast.compat.math_verify`: math-verify's ``parse`` / ``verify``.
"""
