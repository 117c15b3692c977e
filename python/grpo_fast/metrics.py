"""``metrics.jsonl``: moved to :mod:`grpo_fast.tracking`; these names stay importable."""

from grpo_fast.tracking import MetricsWriter, read_metrics

__all__ = ["MetricsWriter", "read_metrics"]
