"""``metrics.jsonl``: moved to :mod:`grpo_fast.train.tracking`; these names stay importable."""

from grpo_fast.train.tracking import MetricsWriter, read_metrics

__all__ = ["MetricsWriter", "read_metrics"]
