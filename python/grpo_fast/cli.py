"""The ``grpo-fast`` command line: ``train``, ``score``, ``eval`` and ``export``.

``grpo-fast train`` with no arguments runs GRPO on the embedded tiny model and
2-digit addition task on the CPU (about a minute). Every
:class:`~grpo_fast.train.config.TrainerConfig` field is a flag, generated from its
type (``--learning-rate 3e-5``, ``--curriculum`` / ``--no-curriculum``,
``--loss-type {grpo,...}``, ``--reward math --reward format:0.5``), and may
also come from ``--config run.toml`` / ``run.json``; flags override the file.
A file's values are checked against the same types, with the same messages.

Input the user can fix (a value of the wrong type, missing columns, an empty
file, an unreadable model directory, a group size of 1, ...) ends the command
at start-up with a message and exit status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import math
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from grpo_fast.errors import InvalidInputError
from grpo_fast.flags import (
    NEGATIVE_NUMBER,
    Repeat,
    add_dataclass_flags,
    check_value,
    config_from_file,
    parse_text,
)

__all__ = [
    "build_parser",
    "check_value",
    "config_from_file",
    "main",
    "parse_text",
    "pass_at_k",
]


# ---------------------------------------------------------------------- commands
def _train(args: argparse.Namespace) -> int:
    from grpo_fast.errors import CheckpointError, TrainingInterrupted
    from grpo_fast.train.data import task_options
    from grpo_fast.train.tracking import read_metrics
    from grpo_fast.train.trainer import Trainer, TrainerConfig

    values = config_from_file(args.config, TrainerConfig) if args.config else {}
    skip = ("command", "config", "func", "task")
    flags = {k: v for k, v in vars(args).items() if k not in skip}
    task = task_options(args.task, model="model" not in {**values, **flags}) if args.task else {}
    given = {**task, **values, **flags}
    cfg = TrainerConfig.from_dict(given)
    if args.task and cfg.train_file == task["train_file"]:
        _check_task_rewards(args.task, task, cfg.reward, cfg.max_new_tokens)
    if not {"output_dir", "resume", "overwrite"} & {**values, **flags}.keys():
        from grpo_fast.train.run_dir import default_output_dir

        cfg, said = default_output_dir(cfg)
        if said:
            print(f"grpo-fast train: {said}", file=sys.stderr)
    trainer = Trainer(cfg)
    if trainer.is_main:
        print(
            f"grpo-fast train: {len(trainer.train_rows)} prompts x {cfg.num_generations} samples, "
            f"{cfg.max_steps} steps, rewards {', '.join(trainer.rewards.names)}"
            + (f" + process {cfg.process_reward}" if cfg.process_reward else "")
            + f", writing {cfg.output_dir}/",
            flush=True,
        )
    try:
        trainer.train()
    except TrainingInterrupted as e:
        if trainer.is_main and (e.checkpoint is not None or e.step == 0):
            print(f"interrupted at step {e.step}; resume with --resume auto", file=sys.stderr)
        elif trainer.is_main:
            newest = sorted((trainer.out / "checkpoints").glob("step-*"))
            start = f"from {newest[-1].name}" if newest else "it starts over: no checkpoint yet"
            print(
                f"stopped at once at step {e.step}; resume with --resume auto ({start})",
                file=sys.stderr,
            )
        return 128 + e.signal
    except CheckpointError as e:
        print(f"grpo-fast train: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        print(
            f"grpo-fast train: error: no space left on device writing {e.filename or 'a file'}; "
            "free some space, then resume with --resume auto",
            file=sys.stderr,
        )
        return 1
    if trainer.is_main:
        # From the file, not this process's history: a resumed run still starts at step 0.
        evals = [
            (r["step"], r["eval_accuracy"])
            for r in read_metrics(trainer.out / "metrics.jsonl")
            if r.get("eval_accuracy") is not None and math.isfinite(r["eval_accuracy"])
        ]
        if evals:
            (s0, a0), (s1, a1) = evals[0], evals[-1]
            print(f"held-out accuracy: {a0:.1%} at step {s0} -> {a1:.1%} at step {s1}")
        calls = [
            (r["step"], r["tools/episodes_with_call"])
            for r in read_metrics(trainer.out / "metrics.jsonl")
            if r.get("tools/episodes_with_call") is not None
        ]
        if calls:
            (s0, c0), (s1, c1) = calls[0], calls[-1]
            print(f"rollouts that call a tool: {c0:.0%} at step {s0} -> {c1:.0%} at step {s1}")
        curves = f", curves: {cfg.output_dir}/curves.png" if cfg.plot else ""
        print(f"metrics: {cfg.output_dir}/metrics.jsonl{curves}")
    return 0


#: What a task's answer column holds, by what a reward reads there (RunRewards.golds).
_GOLDS = {"answer": "final answers", "tests": "each prompt's tests (docs/code.md)"}


def _check_task_rewards(task: str, options: dict[str, Any], reward: Any, tokens: int) -> None:
    """Refuse a reward that reads the answer column of ``task``'s own data as something it
    does not hold (``--task code --reward math``: the column holds tests, so math would
    score every completion NaN; ``--task addition --reward code``: sums are no tests).
    Rewards that read no answer (format, overlong, repetition, functions) may be added."""
    from grpo_fast.run_rewards import RunRewards

    own = RunRewards.build(list(options.get("reward", _field_default("reward"))))
    holds = {g for g in own.golds.values() if g is not None}
    if not holds:  # the task's own rewards read no answer: nothing to hold to
        return
    given = RunRewards.build(list(reward), max_new_tokens=tokens).golds
    for name, gold in given.items():
        if gold is not None and gold not in holds:
            raise InvalidInputError(
                f"--task {task}: reward {name!r} reads the answer column as {_GOLDS[gold]}, but "
                f"this task's holds {' and '.join(_GOLDS[g] for g in sorted(holds))}: use its "
                f"reward (--reward {' --reward '.join(own.names)}); rewards that read no answer "
                "(format, overlong, repetition, your own function) may be added"
            )


def _score(args: argparse.Namespace) -> int:
    import grpo_fast
    from grpo_fast.run_rewards import RunRewards
    from grpo_fast.train.data import read_rows
    from grpo_fast.train.run_dir import check_writable_file

    comp_col, ans_col, group_col = args.completion_column, args.answer_column, args.group_column
    to_file = args.output not in (None, "-")
    if to_file:  # before any work: a path that cannot be written is said at once
        check_writable_file(args.output, "--output")
    rewards = RunRewards.build(args.reward)
    rows = read_rows(
        args.input, [group_col], "input", text_columns=[comp_col], answer_columns=[ans_col]
    )
    # A conversational prompt (a list of messages) groups by its JSON text.
    ids = [
        r[group_col] if isinstance(r[group_col], str) else json.dumps(r[group_col]) for r in rows
    ]
    groups = grpo_fast.group(ids)
    if groups.num_groups == len(rows):
        raise InvalidInputError(
            f"every group has one row ({len(rows)} rows, {len(rows)} distinct {group_col!r} "
            "values): group-relative advantages need several completions per prompt; "
            "--group-column names the column that groups them"
        )
    scores = rewards.score([r[comp_col] for r in rows], [{**r, "answer": r[ans_col]} for r in rows])
    adv = grpo_fast.compute_advantages(
        scores.total, groups.index, estimator=args.estimator, scale=args.scale
    )
    several = len(scores.columns) > 1
    try:
        out = open(args.output, "w") if to_file else sys.stdout  # noqa: SIM115
    except OSError as e:
        raise InvalidInputError(f"cannot write --output {args.output!r}: {e.strerror}") from None
    try:
        for i, (row, r, a) in enumerate(
            zip(rows, scores.total.tolist(), adv.advantages.tolist(), strict=True)
        ):
            extra = (
                {f"reward/{k}": _finite(v[i]) for k, v in scores.columns.items()} if several else {}
            )
            out.write(json.dumps({**row, "reward": _finite(r), **extra, "advantage": a}) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()
    print(
        f"{len(rows)} completions in {adv.num_groups} groups: {_mean_reward(scores)}, groups "
        f"without signal {adv.frac_zero_std:.1%}",
        file=sys.stderr,
    )
    return 0


def _mean_reward(scores: Any) -> str:
    """``mean reward X``, and how many completions had no reward (NaN: a reward could not
    score them), by reward, instead of a ``nan`` mean."""
    total = np.asarray(scores.total, np.float64)
    unscored = int(np.isnan(total).sum())
    if unscored == len(total):
        text = "no completion was scored (every total reward is NaN)"
    else:
        text = f"mean reward {float(np.nanmean(total)):.4f}"
    if unscored:
        which = ", ".join(
            f"{name}: {int(np.isnan(col).sum())}"
            for name, col in scores.columns.items()
            if np.isnan(col).any()
        )
        text += f" ({unscored} of {len(total)} without a reward (NaN; written as null): {which})"
    return text


def _finite(v: float) -> float | None:
    return float(v) if math.isfinite(v) else None


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``c`` correct of ``n`` samples (Chen et al., 2021).

    Examples
    --------
    >>> pass_at_k(4, 1, 2)
    0.5
    """
    if n - c < k:
        return 1.0
    return 1.0 - math.prod((n - c - i) / (n - i) for i in range(k))


def _answer_key(text: str, code: bool = False) -> str:
    """What majority vote counts: the extracted final answer (``code``: the code block),
    else the stripped text."""
    import grpo_fast
    from grpo_fast.code import extract_code

    if code:
        return (extract_code(text) or text).strip()
    found = grpo_fast.extract_answer(text)
    return found.answer if found is not None else text.strip()


def _model_default(name: str, model: str) -> Any:
    """A ``TrainerConfig`` field's default for ``model`` (the demo's, or a real run's)."""
    from grpo_fast.train.config import TrainerConfig
    from grpo_fast.train.defaults import is_demo_model, resolve

    field = TrainerConfig.__dataclass_fields__[name]
    return resolve(field.default, demo=is_demo_model(model))


def _eval(args: argparse.Namespace) -> int:
    import torch

    from grpo_fast.run_rewards import RunRewards
    from grpo_fast.sampling import HFSampler, SamplingParams
    from grpo_fast.steps import check_steps, verified_pick
    from grpo_fast.train.data import plain_prompt_warning, read_tasks, render_prompts, task_options
    from grpo_fast.train.devices import check_device, set_seed
    from grpo_fast.train.modeling import (
        DTYPES,
        MixedPrecision,
        check_model_name,
        load_model,
        load_tokenizer,
    )
    from grpo_fast.train.run_dir import verify_checkpoint

    task_name = getattr(args, "task", None)
    task = task_options(task_name or "addition", model=not hasattr(args, "model"))
    args.model = getattr(args, "model", None) or task["model"]
    args.data = getattr(args, "data", task["eval_file"])
    if args.k > args.n:
        raise InvalidInputError(
            f"-k must be <= -n (pass@k of n samples), got k={args.k}, n={args.n}"
        )
    check_model_name(args.model, adapters=True)
    verify_checkpoint(Path(args.model))
    check_device(args.device)
    max_new_tokens = getattr(args, "max_new_tokens", None)
    if max_new_tokens is None:
        # --task gives its lengths as it does to train; else the model's default.
        max_new_tokens = (
            task["max_new_tokens"] if task_name else _model_default("max_new_tokens", args.model)
        )
    dtype = getattr(args, "dtype", None) or _model_default("dtype", args.model)
    reward = getattr(args, "reward", None) or list(task.get("reward", _field_default("reward")))
    if args.data == task["eval_file"]:
        _check_task_rewards(task_name or "addition", task, reward, max_new_tokens)
    rewards = RunRewards.build(reward, max_new_tokens=max_new_tokens)
    rows = read_tasks(
        args.data, "data", prompt_column=args.prompt_column, answer_column=args.answer_column
    )[: args.limit or None]
    set_seed(args.seed)
    tok = load_tokenizer(args.model)
    template = {
        "system_prompt": getattr(args, "system_prompt", None),
        "chat_template": args.chat_template,
    }
    warning = plain_prompt_warning(rows, tok, **template, what="evaluation")
    if warning:
        print(f"grpo-fast eval: {warning}", file=sys.stderr)
    prompts = render_prompts(rows, tok, **template, what="data")
    device = (
        args.device if args.device != "auto" else "cuda" if torch.cuda.is_available() else "cpu"
    )
    # Sampling needs no master weights: the model is loaded in the dtype itself.
    model = load_model(args.model, device, dtype=DTYPES[dtype]).eval()
    sampler = HFSampler(model, tok, batch_size=args.batch_size)
    # --task samples as it trains (--task code: 0.7); else 1.0.
    temperature = getattr(args, "temperature", None)
    if temperature is None:
        temperature = task.get("temperature", 1.0) if task_name else 1.0
    params = SamplingParams(max_new_tokens=max_new_tokens, temperature=temperature)
    with MixedPrecision(dtype, device).autocast():
        comp = sampler.sample(prompts, args.n, params)
    scores = rewards.score(
        comp.texts, [r for r in rows for _ in range(args.n)], completion_ids=comp.completion_ids
    )
    shape = (len(rows), args.n)
    # Correct: the first reward is >= 1 (the default, math: the answer is right).
    correct = (scores.columns[rewards.names[0]] >= 1.0).reshape(shape)
    total = np.nan_to_num(scores.total, nan=-np.inf).reshape(shape)
    code = rewards.golds[rewards.names[0]] == "tests"
    answers = np.array([_answer_key(t, code) for t in comp.texts], dtype=object).reshape(shape)
    wrong_step = check_steps(comp.texts).has_wrong.reshape(shape)
    majority, verified = [], []
    for i in range(len(rows)):
        top, _ = Counter(answers[i].tolist()).most_common(1)[0]
        majority.append(bool(correct[i][answers[i] == top].any()))
        verified.append(bool(correct[i][verified_pick(answers[i].tolist(), wrong_step[i])]))
    report = {
        "prompts": len(rows),
        "n": args.n,
        "temperature": temperature,
        "pass@1": float(np.mean([pass_at_k(args.n, int(c), 1) for c in correct.sum(1)])),
        f"pass@{args.k}": float(
            np.mean([pass_at_k(args.n, int(c), args.k) for c in correct.sum(1)])
        ),
        f"maj@{args.n}": float(np.mean(majority)),
        # Best-of-n: is the sample with the highest total reward correct?
        f"best_of_{args.n}": float(np.mean(correct[np.arange(len(rows)), total.argmax(1)])),
        # Verified best-of-n: majority among the samples without a wrong step (no gold used).
        f"verified_best_of_{args.n}": float(np.mean(verified)),
        "frac_wrong_step": float(wrong_step.mean()),
    }
    print(json.dumps(report))
    return 0


def _export(args: argparse.Namespace) -> int:
    from grpo_fast.train.export import export_model
    from grpo_fast.train.run_dir import check_writable_dir, verify_checkpoint

    verify_checkpoint(Path(args.checkpoint))
    check_writable_dir(args.out, "OUT")
    try:
        out = export_model(
            args.checkpoint,
            args.out,
            base=getattr(args, "base_model", None),
            dtype=getattr(args, "dtype", None),
        )
    except OSError as e:  # a read-only file system, a full disk, ...
        if isinstance(e, InvalidInputError):
            raise
        raise InvalidInputError(
            f"cannot write the model to {args.out!r}: {e.strerror or e}"
            + ("" if e.filename is None else f" ({e.filename})")
        ) from None
    print(f"wrote {out}/ (load it with from_pretrained, or: grpo-fast eval --model {out})")
    return 0


# ---------------------------------------------------------------------- the parser
def _at_least(low: float, *, number: type = int) -> Any:
    """An argparse type: a ``number`` (int or float) >= ``low``; argparse names the flag
    in its message (``argument --limit: must be >= 0, got -1``)."""

    def convert(text: str) -> Any:
        try:
            value = number(text)
        except ValueError:
            kind = "an int" if number is int else "a number"
            raise argparse.ArgumentTypeError(f"must be {kind}, got {text!r}") from None
        if not value >= low:  # NaN too
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {text}")
        return value

    convert.__name__ = "int" if number is int else "number"
    return convert


def _field_default(name: str) -> Any:
    from grpo_fast.train.config import TrainerConfig

    return TrainerConfig.__dataclass_fields__[name].default


def _parser(*args: Any, **kwargs: Any) -> argparse.ArgumentParser:
    kwargs.setdefault("formatter_class", argparse.ArgumentDefaultsHelpFormatter)
    p = argparse.ArgumentParser(*args, **kwargs)
    p._negative_number_matcher = NEGATIVE_NUMBER  # type: ignore[attr-defined]
    return p


_REWARD_HELP = (
    "reward NAME[:WEIGHT], repeatable: math, exact, choice, format, overlong, cosine, "
    "repetition, code (the answer column holds tests, docs/code.md), or a dotted "
    "import path"
)


class _Commands(argparse._SubParsersAction):
    """The subcommands, each listed with its help and its parser built when it is the
    command run: a command imports only what its own flags need (``--version`` and
    ``score`` nothing of the trainer's options)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._builders: dict[str, Any] = {}

    def add_command(self, name: str, help: str, build: Any) -> None:
        self._choices_actions.append(self._ChoicesPseudoAction(name, (), help))
        self._name_parser_map[name] = None  # a valid choice; built by __call__
        self._builders[name] = build

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        if self._name_parser_map.get(name, ...) is None:  # the listed command, built now
            del self._name_parser_map[name]
        return super().add_parser(name, **kwargs)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        build = self._builders.pop(values[0], None)
        if build is not None:
            build(self)
        super().__call__(parser, namespace, values, option_string)


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command; nothing it imports needs torch, and a command's
    own flags are built only when it runs (``--version``, ``score`` and every
    ``--help`` stay cheap: the commands import what they use)."""
    from grpo_fast import __version__

    parser = _parser(prog="grpo-fast", description="GRPO training, scoring and evaluation.")
    parser.add_argument("--version", action="version", version=f"grpo-fast {__version__}")
    sub = parser.add_subparsers(
        dest="command", metavar="{train,score,eval,export}", action=_Commands
    )
    for name, (help, build) in _COMMANDS.items():
        sub.add_command(name, help, build)
    return parser


def _train_flags(sub: Any) -> None:
    from grpo_fast.train.config import TrainerConfig
    from grpo_fast.train.data import TASKS

    # The train flags print their own defaults (they are left unset so a config file can
    # give them).
    train = sub.add_parser(
        "train",
        description="GRPO training. A default shown as 'X; embedded demo: Y' is Y for the "
        "embedded demo model (the default --model) and X for any other model; a value given "
        "as a flag or in --config always stands.",
        formatter_class=argparse.HelpFormatter,
    )
    train._negative_number_matcher = NEGATIVE_NUMBER
    train.add_argument("--config", help="TOML or JSON file of trainer options (flags override it)")
    train.add_argument(
        "--task",
        choices=sorted(TASKS),
        default=None,
        help="embedded task whose model, data, lengths and reward are the defaults (the config "
        "file and flags override them; default: none, the embedded demo: addition)",
    )
    add_dataclass_flags(train, TrainerConfig)
    train.set_defaults(func=_train)


def _score_flags(sub: Any) -> None:
    from grpo_fast.advantages import ESTIMATORS, SCALES

    sc = sub.add_parser(
        "score",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    sc._negative_number_matcher = NEGATIVE_NUMBER
    sc.add_argument("input", help="JSONL with completion, answer and group columns ('-': stdin)")
    sc.add_argument("--output", "-o", default="-", help="output JSONL ('-': stdout)")
    sc.add_argument(
        "--reward", action=Repeat, default=["math"], metavar="NAME[:WEIGHT]", help=_REWARD_HELP
    )
    sc.add_argument("--completion-column", default="completion", help="the completions (strings)")
    sc.add_argument("--answer-column", default="answer", help="the gold answers")
    sc.add_argument("--group-column", default="prompt", help="rows with equal values form a group")
    sc.add_argument("--estimator", default="grpo", choices=ESTIMATORS, help="advantage estimator")
    sc.add_argument("--scale", default="group", choices=SCALES, help="advantage std scaling")
    sc.set_defaults(func=_score)


def _eval_flags(sub: Any) -> None:
    from grpo_fast.train.config import DTYPE_NAMES
    from grpo_fast.train.data import TASKS

    ev = sub.add_parser(
        "eval",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    ev._negative_number_matcher = NEGATIVE_NUMBER
    ev.add_argument(
        "--task",
        choices=sorted(TASKS),
        default=argparse.SUPPRESS,
        help="embedded task whose model, data, lengths and reward are the defaults (default: none, "
        "the embedded demo: addition)",
    )
    ev.add_argument(
        "--model",
        default=argparse.SUPPRESS,
        help="model directory (a checkpoint's LoRA adapters too), .gguf file or Hugging Face "
        "Hub id (default: the task's)",
    )
    ev.add_argument(
        "--data",
        default=argparse.SUPPRESS,
        help="rows with a prompt and an answer: JSONL, JSON, Parquet, CSV, TSV, Arrow "
        "(default: the task's held-out prompts)",
    )
    ev.add_argument("--prompt-column", default="prompt", help="column of the prompts")
    ev.add_argument("--answer-column", default="answer", help="column of the gold answers")
    ev.add_argument(
        "--system-prompt",
        default=argparse.SUPPRESS,
        help="system message put before every prompt that has none (default: none)",
    )
    ev.add_argument(
        "--chat-template",
        choices=("auto", "always", "never"),
        default="auto",
        help="auto: conversations through the tokenizer's chat template, plain text as it is "
        "(a warning when the tokenizer has one); always: plain prompts too; never: plain only",
    )
    ev.add_argument(
        "--reward",
        action=Repeat,
        default=argparse.SUPPRESS,
        metavar="NAME[:WEIGHT]",
        help=_REWARD_HELP + " (default: math; with --task, the task's: code for --task code)",
    )
    ev.add_argument("-n", type=_at_least(1), default=8, help="samples per prompt")
    ev.add_argument("-k", type=_at_least(1), default=1, help="k of pass@k")
    ev.add_argument(
        "--temperature",
        type=_at_least(0.0, number=float),
        default=argparse.SUPPRESS,
        help="sampling temperature (default: 1.0; with --task, the task's: 0.7 for --task code)",
    )
    # Defaults that depend on the model: unset here, resolved in _eval (help states them).
    ev.add_argument(
        "--max-new-tokens",
        type=_at_least(1),
        default=argparse.SUPPRESS,
        help=f"longest completion (default: {_field_default('max_new_tokens')}); with "
        "--task, the task's",
    )
    ev.add_argument(
        "--dtype",
        choices=DTYPE_NAMES,
        default=argparse.SUPPRESS,
        help=f"weights and autocast dtype (default: {_field_default('dtype')})",
    )
    ev.add_argument("--device", default="auto", help="'auto', 'cpu', 'cuda', 'cuda:1', ...")
    ev.add_argument("--limit", type=_at_least(0), default=0, help="first N prompts only (0 = all)")
    ev.add_argument("--batch-size", type=_at_least(1), default=None, help="rows per generate call")
    ev.add_argument("--seed", type=int, default=0, help="sampling seed")
    ev.set_defaults(func=_eval)


def _export_flags(sub: Any) -> None:
    from grpo_fast.train.config import DTYPE_NAMES

    ex = sub.add_parser(
        "export",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    ex.add_argument(
        "checkpoint",
        help="checkpoint directory (checkpoints/step-N of a run), or a .gguf file (de-quantised)",
    )
    ex.add_argument("out", help="new directory for the model (must not hold files)")
    ex.add_argument(
        "--base-model",
        default=argparse.SUPPRESS,
        help="base model of LoRA adapters (default: the one their adapter_config.json names)",
    )
    ex.add_argument(
        "--dtype",
        choices=DTYPE_NAMES,
        default=argparse.SUPPRESS,
        help="dtype of the written weights (default: the base model's)",
    )
    ex.set_defaults(func=_export)


_COMMANDS = {
    "train": ("GRPO training (default: the embedded demo)", _train_flags),
    "score": ("rewards and advantages of a JSONL of completions", _score_flags),
    "eval": ("pass@k, majority vote, best-of-n and verified best-of-n accuracy", _eval_flags),
    "export": (
        "a checkpoint as a plain transformers model directory (LoRA adapters merged)",
        _export_flags,
    ),
}


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return its exit status.

    2: input the user can fix (one line on stderr, no traceback); 130: Ctrl-C
    (during start-up imports too); 141 (128 + SIGPIPE, as ``cat`` ends): the
    reader of standard output went away (``grpo-fast score ... | head``).
    """
    command = "grpo-fast"
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return 0
        command = f"grpo-fast {args.command}"
        from grpo_fast.train.tracking import quiet_libraries

        with quiet_libraries(transformers=args.command in ("train", "eval", "export")):
            status = int(args.func(args))
        sys.stdout.flush()  # a closed pipe is found here, not at exit
        return status
    except InvalidInputError as e:
        print(f"{command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C outside training (imports, loading, scoring, ...)
        print(f"{command}: stopped (Ctrl-C)", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Python would report the pipe again when it flushes stdout at exit: point the
        # descriptor at /dev/null first.
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 128 + 13


if __name__ == "__main__":
    sys.exit(main())
