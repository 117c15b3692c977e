"""benches/ablations.py: its table from runs written here, and its command-line errors."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("ablations", ROOT / "benches" / "ablations.py")
ablations = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ablations)


def fake_run(out: Path, name: str, seed: int, accuracies, zero_std, time_step, cpu):
    path = out / name / f"seed-{seed}"
    path.mkdir(parents=True)
    records = [{"step": 0, "eval_accuracy": accuracies[0]}]
    for step in range(1, 5):
        record = {"step": step, "time_step": time_step, "frac_zero_std": zero_std}
        if step % 2 == 0:
            record["eval_accuracy"] = accuracies[step // 2]
        records.append(record)
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (path / "config.json").write_text(json.dumps({"max_steps": 4}))
    (path / "cpu.json").write_text(json.dumps({"cpu_s": 9.0, "wall_s": 10.0}))
    (path / "cpu_steps.json").write_text(json.dumps({"cpu_s": cpu * 4, "steps": 4}))


def test_report_from_finished_runs(tmp_path, capsys):
    out = tmp_path / "abl"
    fake_run(out, "default", 0, [0.3, 0.4, 0.5], 0.25, 0.2, 0.1)
    fake_run(out, "default", 1, [0.3, 0.5, 0.7], 0.25, 0.4, 0.1)
    fake_run(out, "rloo", 0, [0.3, 0.6, 0.6], 0.5, 0.1, 0.05)
    fake_run(out, "rloo", 1, [0.3, 0.7, 0.7], 0.5, 0.1, 0.05)
    (out / "load.jsonl").write_text(
        json.dumps(
            {"runs": 4, "load_mean": 3.0, "load_min": 2.0, "load_max": 4.0, "cpus": 2}
            | {"jobs": 2, "wall_s": 120.0}
        )
        + "\n"
    )
    figure = tmp_path / "fig.png"
    argv = ["--report", "--only", "rloo", "--seeds", "0", "1", "--out", str(out)]
    assert ablations.main([*argv, "--figure", str(figure)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 4 and summary["eval_steps"] == [0, 2, 4]
    rows = {r["name"]: r for r in summary["rows"]}
    # default: finals 0.5 and 0.7 -> 0.6 ± 0.1414; its mean curve 0.3, 0.45, 0.6.
    assert rows["default"]["final_mean"] == pytest.approx(0.6)
    assert rows["default"]["final_std"] == pytest.approx(0.1414, abs=1e-4)
    assert rows["default"]["steps_to_default_final"] == 4
    # rloo's mean curve 0.3, 0.65, 0.65 reaches the default's 0.6 at step 2.
    assert rows["rloo"]["steps_to_default_final"] == 2
    assert rows["rloo"]["signal"] == pytest.approx(0.5)
    assert rows["default"]["time_step_ms"] == pytest.approx(300)
    assert rows["rloo"]["cpu_step_ms"] == pytest.approx(50)
    table = (out / "table.md").read_text()
    assert "| rloo | `--estimator rloo` | 65.0% ± 7.1 | 2 | 50% | 100 | 50 |" in table
    assert "Load average 3.0 (min 2.0, max 4.0) on 2 CPUs" in table
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "65.0%" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--only", "nope"], "unknown configuration(s) ['nope']"),
        (["--steps", "0"], "--steps must be >= 1"),
        (["--seeds", "1", "1"], "--seeds must be distinct"),
        (["--report", "--steps", "3"], "has no finished run of 3 steps: train it first"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, argv, message):
    assert ablations.main([*argv, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
