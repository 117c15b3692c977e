"""open-r1's code rewards (``open_r1.rewards.code_reward`` and
``binary_code_reward``) for TRL's ``GRPOTrainer``, run in grpo-fast's local
sandbox instead of E2B / Morph / Piston.

The dataset column is open-r1's ``verification_info``: ``{"language":
"python", "test_cases": [{"input": ..., "output": ..., "type":
"stdin_stdout"}, ...]}`` (a dict or its JSON; the other formats of
:mod:`grpo_fast.code` work too). The code is the completion's last fenced
block of that language; none scores 0.0.

Examples
--------
>>> case = {"input": "2\\n", "output": "4\\n", "type": "stdin_stdout"}
>>> info = {"language": "python", "test_cases": [case]}
>>> completions = [[{"role": "assistant", "content": "```python\\nprint(int(input()) ** 2)\\n```"}]]
>>> code_reward(completions, verification_info=[info])
[1.0]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from grpo_fast.code import verify_code_batch
from grpo_fast.errors import InvalidInputError
from grpo_fast.integrations.trl.base import completion_texts

__all__ = ["binary_code_reward", "code_reward"]


def _language(info: Any) -> str:
    if isinstance(info, str):
        try:
            info = json.loads(info)
        except ValueError:
            return "python"
    lang = info.get("language", "python") if isinstance(info, dict) else "python"
    return {"python3": "python", "py": "python", "c++": "cpp"}.get(
        str(lang).lower(), str(lang).lower()
    )


def _rates(
    completions: Sequence[Any], verification_info: Sequence[Any] | None, **kwargs: Any
) -> list[float]:
    if verification_info is None:
        raise InvalidInputError("code_reward needs the dataset column verification_info")
    texts = completion_texts(completions)
    if len(texts) != len(verification_info):
        raise InvalidInputError(
            f"completions has {len(texts)} entries but verification_info has "
            f"{len(verification_info)}"
        )
    rates = [0.0] * len(texts)
    by_lang: dict[str, list[int]] = {}
    for i, info in enumerate(verification_info):
        by_lang.setdefault(_language(info), []).append(i)
    for lang, idx in by_lang.items():
        verdicts = verify_code_batch(
            [texts[i] for i in idx], [verification_info[i] for i in idx], language=lang
        )
        for i, v in zip(idx, verdicts, strict=True):
            rates[i] = v.fraction
    return rates


def code_reward(
    completions: Sequence[Any], verification_info: Sequence[Any] | None = None, **kwargs: Any
) -> list[float]:
    """The fraction of test cases each completion's code passes (open-r1's ``code_reward``)."""
    return _rates(completions, verification_info, **kwargs)


def binary_code_reward(
    completions: Sequence[Any], verification_info: Sequence[Any] | None = None, **kwargs: Any
) -> list[float]:
    """1.0 when every test case passes, else 0.0 (open-r1's ``binary_code_reward``: rate > 0.99)."""
    return [1.0 if r > 0.99 else 0.0 for r in _rates(completions, verification_info, **kwargs)]
