"""The ``grpo-fast`` command line: ``train``, ``score`` and ``eval``.

``grpo-fast train`` with no arguments runs GRPO on the embedded tiny model and
2-digit addition task on the CPU (a few minutes). Every
:class:`~grpo_fast.trainer.TrainerConfig` field is a flag
(``--learning-rate 3e-5``, ``--curriculum`` / ``--no-curriculum``) and may also
come from ``--config run.toml`` / ``run.json``; flags override the file.

Input the user can fix (missing columns, an empty file, an unreadable model
directory, a group size of 1, ...) ends the command at start-up with a message
and exit status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from grpo_fast.errors import InvalidInputError

__all__ = ["main"]


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _add_trainer_flags(parser: argparse.ArgumentParser) -> None:
    from grpo_fast.trainer import TrainerConfig

    hints = {"int": int, "float": float, "str": str, "bool": bool}
    for f in dataclasses.fields(TrainerConfig):
        kind = hints[str(f.type)]
        help_text = f"{f.metadata.get('help', '')} (default: {f.default})"
        if kind is bool:
            parser.add_argument(
                _flag(f.name),
                action=argparse.BooleanOptionalAction,
                default=argparse.SUPPRESS,
                help=help_text,
            )
        else:
            parser.add_argument(_flag(f.name), type=kind, default=argparse.SUPPRESS, help=help_text)


def _read_config_file(path: str) -> dict[str, Any]:
    p = Path(path)
    if not p.is_file():
        raise InvalidInputError(f"config file {path!r} does not exist")
    try:
        if p.suffix == ".toml":
            import tomllib

            values = tomllib.loads(p.read_text())
        else:
            values = json.loads(p.read_text())
    except ValueError as e:
        raise InvalidInputError(f"config file {path!r} is not valid {p.suffix[1:]}: {e}") from None
    if not isinstance(values, dict):
        raise InvalidInputError(f"config file {path!r} must hold a table/object of options")
    return {k.replace("-", "_"): v for k, v in values.items()}


def _train(args: argparse.Namespace) -> int:
    from grpo_fast.trainer import Trainer, TrainerConfig

    values = _read_config_file(args.config) if args.config else {}
    values.update({k: v for k, v in vars(args).items() if k not in ("command", "config", "func")})
    cfg = TrainerConfig.from_dict(values)
    trainer = Trainer(cfg)
    if trainer.is_main:
        print(
            f"grpo-fast train: {len(trainer.train_rows)} prompts x {cfg.num_generations} samples, "
            f"{cfg.max_steps} steps, writing {cfg.output_dir}/",
            flush=True,
        )
    history = trainer.train()
    if trainer.is_main:
        evals = [(r["step"], r["eval_accuracy"]) for r in history if "eval_accuracy" in r]
        if evals:
            (s0, a0), (s1, a1) = evals[0], evals[-1]
            print(f"held-out accuracy: {a0:.1%} at step {s0} -> {a1:.1%} at step {s1}")
        print(f"metrics: {cfg.output_dir}/metrics.jsonl, curves: {cfg.output_dir}/curves.png")
    return 0


def _score(args: argparse.Namespace) -> int:
    import grpo_fast
    from grpo_fast.trainer import read_jsonl, score

    group_col = args.group_column
    rows = read_jsonl(args.input, [args.completion_column, args.answer_column, group_col], "input")
    rewards = score(
        args.verifier,
        [str(r[args.answer_column]) for r in rows],
        [str(r[args.completion_column]) for r in rows],
    )
    ids = [str(r[group_col]) for r in rows]
    adv = grpo_fast.compute_advantages(rewards, ids, estimator=args.estimator, scale=args.scale)
    out = sys.stdout if args.output in (None, "-") else open(args.output, "w")
    try:
        for row, r, a in zip(rows, rewards.tolist(), adv.advantages.tolist(), strict=True):
            out.write(json.dumps({**row, "reward": r, "advantage": a}) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()
    print(
        f"{len(rows)} completions in {adv.num_groups} groups: mean reward "
        f"{float(np.mean(rewards)):.4f}, groups without signal {adv.frac_zero_std:.1%}",
        file=sys.stderr,
    )
    return 0


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``c`` correct of ``n`` samples (Chen et al., 2021)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.prod((n - c - i) / (n - i) for i in range(k))


def _eval(args: argparse.Namespace) -> int:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from grpo_fast.sampling import HFSampler, SamplingParams
    from grpo_fast.trainer import load_tasks, score

    if args.n < 1 or not 1 <= args.k <= args.n:
        raise InvalidInputError(f"need 1 <= k <= n, got k={args.k}, n={args.n}")
    if not (Path(args.model) / "config.json").is_file():
        raise InvalidInputError(
            f"model directory {args.model!r} is not readable: expected config.json in it"
        )
    rows = load_tasks(args.data, "data")[: args.limit or None]
    torch.manual_seed(args.seed)
    tok = AutoTokenizer.from_pretrained(args.model)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    sampler = HFSampler(model, tok, batch_size=args.batch_size)
    params = SamplingParams(max_new_tokens=args.max_new_tokens, temperature=args.temperature)
    comp = sampler.sample([r["prompt"] for r in rows], args.n, params)
    golds = [r["answer"] for r in rows for _ in range(args.n)]
    rewards = score(args.verifier, golds, comp.texts).reshape(len(rows), args.n)
    answers = np.array([t.strip() for t in comp.texts], dtype=object).reshape(len(rows), args.n)
    correct = rewards >= 1.0
    majority = []
    for i in range(len(rows)):
        top, _ = Counter(answers[i].tolist()).most_common(1)[0]
        majority.append(bool(correct[i][answers[i] == top].any()))
    report = {
        "prompts": len(rows),
        "n": args.n,
        "pass@1": float(np.mean([pass_at_k(args.n, int(c), 1) for c in correct.sum(1)])),
        f"pass@{args.k}": float(
            np.mean([pass_at_k(args.n, int(c), args.k) for c in correct.sum(1)])
        ),
        f"maj@{args.n}": float(np.mean(majority)),
        # Best-of-n picks the sample the verifier scores highest; with the gold
        # verifier that is "any of n correct".
        f"best_of_{args.n}": float(np.mean(rewards.max(1) >= 1.0)),
    }
    print(json.dumps(report))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grpo-fast", description="GRPO training, scoring and evaluation."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    train = sub.add_parser("train", help="GRPO training (default: the embedded demo)")
    train.add_argument("--config", help="JSON or TOML file of trainer options")
    _add_trainer_flags(train)
    train.set_defaults(func=_train)

    sc = sub.add_parser("score", help="rewards and advantages of a JSONL of completions")
    sc.add_argument("input", help="JSONL with completion, answer and group columns")
    sc.add_argument("--output", "-o", help="output JSONL (default: stdout)")
    sc.add_argument("--verifier", default="math", help="math or exact (default: math)")
    sc.add_argument("--completion-column", default="completion")
    sc.add_argument("--answer-column", default="answer")
    sc.add_argument("--group-column", default="prompt", help="rows with equal values form a group")
    sc.add_argument("--estimator", default="grpo")
    sc.add_argument("--scale", default="group")
    sc.set_defaults(func=_score)

    ev = sub.add_parser("eval", help="pass@k, majority vote and best-of-n accuracy")
    from grpo_fast.trainer import DATA_DIR

    ev.add_argument("--model", default=str(DATA_DIR / "tiny_adder"))
    ev.add_argument("--data", default=str(DATA_DIR / "addition_eval.jsonl"))
    ev.add_argument("--verifier", default="math")
    ev.add_argument("-n", type=int, default=8, help="samples per prompt")
    ev.add_argument("-k", type=int, default=1, help="k of pass@k")
    ev.add_argument("--temperature", type=float, default=1.0)
    ev.add_argument("--max-new-tokens", type=int, default=4)
    ev.add_argument("--limit", type=int, default=0, help="first N prompts only (0 = all)")
    ev.add_argument("--batch-size", type=int, default=None)
    ev.add_argument("--seed", type=int, default=0)
    ev.set_defaults(func=_eval)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except InvalidInputError as e:
        print(f"grpo-fast {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
