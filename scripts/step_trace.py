"""Which files and functions of the package one training step runs through.

    python scripts/step_trace.py [--steps N]

Builds the embedded demo's trainer (no LoRA, the HF sampler, CPU), runs one step
outside the trace (first-call costs), then traces ``Trainer.step()`` with
``sys.setprofile`` and prints each grpo_fast file it entered with the functions
called there (Python functions only; Rust calls show as their Python wrapper), and
how often the step came back into ``trainer.py`` from a call below it.
docs/design.md records the figures.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import defaultdict
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=1, help="steps traced")
    args = p.parse_args(argv)
    import grpo_fast

    try:
        from grpo_fast.train.trainer import Trainer, TrainerConfig
    except ImportError:  # the layout before the train/ package
        from grpo_fast.trainer import Trainer, TrainerConfig  # type: ignore[no-redef]
    package = Path(grpo_fast.__file__).parent
    out = tempfile.mkdtemp(prefix="step_trace_")
    cfg = TrainerConfig(
        output_dir=out,
        max_steps=args.steps + 1,
        prompts_per_step=4,
        num_generations=4,
        eval_every=0,
        progress=False,
        plot=False,
    )
    trainer = Trainer(cfg)
    trainer.step()
    calls: dict[str, set[str]] = defaultdict(set)
    order: list[str] = []

    def profile(frame, event, arg):  # noqa: ANN001, ANN202
        if event != "call":
            return
        path = Path(frame.f_code.co_filename)
        if not path.is_relative_to(package):
            return
        rel = str(path.relative_to(package))
        calls[rel].add(frame.f_code.co_qualname)
        if not order or order[-1] != rel:
            order.append(rel)

    for _ in range(args.steps):
        sys.setprofile(profile)
        try:
            trainer.step()
        finally:
            sys.setprofile(None)
    trainer_file = next(f for f in calls if f.endswith("trainer.py"))
    back = sum(1 for f in order[1:] if f == trainer_file)
    n_functions = sum(len(v) for v in calls.values())
    print(f"one step: {len(calls)} files, {n_functions} functions")
    for rel in sorted(calls, key=order.index):
        print(f"  {rel}: {len(calls[rel])}  {', '.join(sorted(calls[rel]))}")
    print(f"back into {trainer_file} from below: {back} times")
    print(f"files in call order (consecutive repeats folded): {' > '.join(order)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
