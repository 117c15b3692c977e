"""Tracking: TensorBoard and W&B get metrics.jsonl's values, read back with their own
readers; the curves get a smoothed line; transformers' bars stay out of the
training bar."""

from __future__ import annotations

import importlib.util
import json
import math
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import SMALL_RUN

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from grpo_fast.cli import main  # noqa: E402
from grpo_fast.errors import InvalidInputError  # noqa: E402
from grpo_fast.train.plot import plot_curves, smooth  # noqa: E402
from grpo_fast.train.tracking import parse_report_to, read_metrics  # noqa: E402
from grpo_fast.train.trainer import Trainer, TrainerConfig  # noqa: E402

QUICK = dict(SMALL_RUN, prompts_per_step=2, num_generations=2, eval_size=4, eval_every=2)


def _numbers(record):
    return {
        k: v
        for k, v in record.items()
        if k != "step" and isinstance(v, int | float) and math.isfinite(v)
    }


def _tensorboard_scalars(log_dir: Path) -> dict[str, dict[int, float]]:
    """Every scalar in the event files, read by TensorBoard's own loader (which applies
    the purges a resumed run asks for)."""
    from tensorboard.backend.event_processing import event_accumulator

    acc = event_accumulator.EventAccumulator(str(log_dir), size_guidance={"scalars": 0})
    acc.Reload()
    out = {}
    for tag in acc.Tags()["scalars"]:
        events = acc.Scalars(tag)
        out[tag] = {e.step: e.value for e in events}
        assert len(out[tag]) == len(events), f"{tag}: a step logged twice"
    return out


def test_tensorboard_gets_the_jsonl_values_under_the_same_names(tmp_path):
    pytest.importorskip("tensorboard")
    out = tmp_path / "run"
    cfg = dict(QUICK, max_steps=3, save_every=1, keep_checkpoints=3)
    Trainer(TrainerConfig(output_dir=str(out), report_to="tensorboard", **cfg)).train()
    records = read_metrics(out / "metrics.jsonl")
    scalars = _tensorboard_scalars(out / "tensorboard")
    expected: dict[str, dict[int, float]] = {}
    for r in records:
        for k, v in _numbers(r).items():
            expected.setdefault(k, {})[r["step"]] = v
    assert {"reward_mean", "reward/math", "eval_accuracy", "loss"} <= set(expected)
    assert set(scalars) == set(expected)
    for tag, values in expected.items():
        assert scalars[tag].keys() == values.keys(), tag
        np.testing.assert_allclose(
            [scalars[tag][s] for s in values], list(values.values()), rtol=1e-6, err_msg=tag
        )

    # Rewound to step 1 and trained again: TensorBoard shows the new steps 2 and 3,
    # not both attempts.
    step1 = str(out / "checkpoints" / "step-0000001")
    resumed = TrainerConfig(output_dir=str(out), report_to="tensorboard", resume=step1, **cfg)
    Trainer(resumed).train()
    records = {r["step"]: r for r in read_metrics(out / "metrics.jsonl")}
    scalars = _tensorboard_scalars(out / "tensorboard")
    assert sorted(scalars["reward_mean"]) == [1, 2, 3]
    for step in (2, 3):
        assert scalars["loss"][step] == pytest.approx(records[step]["loss"], rel=1e-6)


def _wandb_records(run_file: Path) -> list:
    """The records of an offline W&B run file: a LevelDB-style log (32 KiB blocks,
    7-byte record headers) of wandb's own protobuf ``Record`` messages."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = run_file.read_bytes()
    assert data[:4] == b":W&B"
    pos, pending, records = 7, b"", []
    while pos + 7 <= len(data):
        if 32768 - pos % 32768 < 7:  # block trailer
            pos += 32768 - pos % 32768
            continue
        length, kind = int.from_bytes(data[pos + 4 : pos + 6], "little"), data[pos + 6]
        pending += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # a full record, or the last piece of one
            record = pb.Record()
            record.ParseFromString(pending)
            pending = b""
            records.append(record)
    return records


def _wandb_history(run_file: Path) -> list[dict]:
    """The history rows, once W&B's own process has written the whole run (its ``exit``
    record; ``finish()`` may return before)."""
    deadline = time.monotonic() + 120
    while True:
        records = _wandb_records(run_file)
        if records and records[-1].WhichOneof("record_type") == "exit":
            break
        assert time.monotonic() < deadline, "W&B did not finish writing the run"
        time.sleep(0.2)
    return [
        {i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in r.history.item}
        for r in records
        if r.WhichOneof("record_type") == "history"
    ]


@pytest.fixture
def fresh_wandb():
    """W&B reads its settings (WANDB_MODE, the login) once per process: start it anew."""
    wandb = pytest.importorskip("wandb")
    wandb.teardown()
    yield
    wandb.teardown()


def test_wandb_offline_gets_the_jsonl_values(tmp_path, monkeypatch, fresh_wandb):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    out = tmp_path / "run"
    cfg = TrainerConfig(output_dir=str(out), report_to=("wandb",), **dict(QUICK, max_steps=2))
    Trainer(cfg).train()
    (run_file,) = out.glob("wandb/offline-run-*/run-*.wandb")
    rows = {row["_step"]: row for row in _wandb_history(run_file)}
    records = read_metrics(out / "metrics.jsonl")
    assert sorted(rows) == [r["step"] for r in records] == [0, 1, 2]
    for r in records:
        want = _numbers(r)
        got = {k: rows[r["step"]][k] for k in want}
        assert got == pytest.approx(want, rel=1e-6), r["step"]


def test_report_to_names_are_checked_and_a_missing_package_names_the_extra(
    tmp_path, capsys, monkeypatch
):
    assert parse_report_to(("none",)) == ()
    assert parse_report_to(["tensorboard, wandb"]) == ("tensorboard", "wandb")
    rc = main(["train", "-o", str(tmp_path / "r"), "--report-to", "tensorbored"])
    assert rc == 2
    assert "unknown tracker 'tensorbored'; choose from none, tensorboard, wandb" in (
        capsys.readouterr().err
    )
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name, *a)
    )
    with pytest.raises(
        InvalidInputError, match=r"needs the 'wandb' package: .*grpo-fast\[tracking\]"
    ):
        TrainerConfig(report_to="tensorboard,wandb").validate()
    rc = main(
        ["train", "-o", str(tmp_path / "r"), "--report-to", "tensorboard", "--report-to", "wandb"]
    )
    assert rc == 2 and "pip install 'grpo-fast[tracking]'" in capsys.readouterr().err


def test_smooth_is_the_debiased_exponential_average():
    pd = pytest.importorskip("pandas")
    x = np.random.default_rng(0).normal(size=200)
    for span in (2, 5, 37.5):
        want = pd.Series(x).ewm(span=span, adjust=True).mean().to_numpy()
        np.testing.assert_allclose(smooth(x, span), want, rtol=1e-12)
    np.testing.assert_allclose(smooth(x), pd.Series(x).ewm(span=20).mean().to_numpy())


def test_curves_draw_a_smoothed_line_over_the_raw_one(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    pd = pytest.importorskip("pandas")
    import matplotlib.pyplot as plt

    figures = []
    monkeypatch.setattr(plt, "close", figures.append)
    rng = np.random.default_rng(1)
    records = [{"step": 0, "eval_accuracy": 0.3}]
    records += [{"step": s, "reward_mean": float(rng.random())} for s in range(1, 61)]
    records += [{"step": 60, "eval_accuracy": 0.5}]
    plot_curves(records, tmp_path / "curves.png")
    assert (tmp_path / "curves.png").read_bytes()[:4] == b"\x89PNG"
    axes = {ax.get_title(): ax for ax in figures[0].axes}
    raw, smoothed = axes["train reward (mean)"].get_lines()
    values = [r["reward_mean"] for r in records[1:-1]]
    np.testing.assert_allclose(raw.get_ydata(), values)
    want = pd.Series(values).ewm(span=6).mean().to_numpy()  # span: 60 points / 10
    np.testing.assert_allclose(smoothed.get_ydata(), want)
    assert raw.get_alpha() < 1 and smoothed.get_alpha() in (None, 1)
    # Two evaluations: points, nothing to smooth.
    assert len(axes["held-out accuracy"].get_lines()) == 1


def test_transformers_bars_stay_out_of_the_training_bar(tmp_path, capsys):
    from transformers.utils import logging as hf_logging

    assert hf_logging.is_progress_bar_enabled()
    cfg = dict(QUICK, max_steps=2, save_every=1, progress=True)
    Trainer(TrainerConfig(output_dir=str(tmp_path / "run"), **cfg)).train()
    err = capsys.readouterr().err
    assert "grpo: 100%" in err  # the training bar was drawn
    assert "Writing model shards" not in err  # the checkpoints' bars were not
    assert hf_logging.is_progress_bar_enabled()  # and they are back afterwards


def test_wandb_without_a_login_is_a_message(tmp_path, capsys, monkeypatch, fresh_wandb):
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "cfg"))  # no stored login
    monkeypatch.setenv("NETRC", str(tmp_path / "netrc"))
    argv = ["train", "-o", str(tmp_path / "run"), "--report-to", "wandb", "--max-steps", "1"]
    assert main([*argv, "--eval-size", "2", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "report_to wandb: W&B did not start" in err and "WANDB_MODE=offline" in err


def test_the_old_metrics_module_still_reads_what_the_writer_wrote(tmp_path):
    # grpo_fast.metrics was the public home of these names before tracking.py
    from grpo_fast.train import metrics

    w = metrics.MetricsWriter(tmp_path / "m.jsonl")
    w.write({"step": 1, "loss": 0.5})
    assert metrics.read_metrics(tmp_path / "m.jsonl") == [{"step": 1, "loss": 0.5}]
