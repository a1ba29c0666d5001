"""Provisional (replaced by the verdicts work): QPS as the server counts it."""
from __future__ import annotations


def server_qps_from_delta(delta: dict, seconds: float) -> float | str:
    def n(k):
        try:
            return float(delta.get(k, 0) or 0)
        except (TypeError, ValueError):
            return 0.0
    if "Questions" not in delta or not seconds:
        return ""
    return round((n("Questions") - n("Com_begin") - n("Com_commit") - n("Com_rollback")) / seconds, 3)
