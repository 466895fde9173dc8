"""Synthetic records for the report and compare tests."""

from harness import results


def job(case, backend, mode, latencies, cached, compiles, status="pass", run_id="r", stages=None):
    """Records of one job: novel calls with ``latencies`` and cumulative
    ``compiles``, then cached calls with medians ``cached``."""
    out = []
    for i, (lat, c) in enumerate(zip(latencies, compiles)):
        out.append(results.record(run_id=run_id, case=case, backend=backend, mode=mode, shape_index=i, novel=True,
                                  latency_s=lat, compiles=c, compile_stages=stages or {"x": c}, status=status,
                                  ok=status == "pass", max_abs_err=1e-7 * (i + 1), max_rel_err=1e-8))
    for i, med in enumerate(cached):
        out.append(results.record(run_id=run_id, case=case, backend=backend, mode=mode, shape_index=i, novel=False,
                                  latency_s=med, cached_latency_s=med, cached_iqr_s=med / 10, compiles=compiles[-1],
                                  status="pass", ok=True))
    return out


def frame(*jobs):
    import pandas as pd

    return pd.DataFrame.from_records([r for j in jobs for r in j], columns=list(results.FIELDS))
