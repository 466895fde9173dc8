"""Synthetic records for the report and compare tests."""

from harness import results


def job(
    case,
    backend,
    mode,
    latencies,
    cached,
    compiles,
    status="pass",
    run_id="r",
    stages=None,
    prepare_s=None,
    startup_s=None,
    reasons=None,
):
    """Records of one job: novel calls with ``latencies`` and cumulative
    ``compiles`` (each record's ``compile_delta`` the step from the one
    before), then cached calls with medians ``cached``."""
    out = []
    prev = 0
    for i, (lat, c) in enumerate(zip(latencies, compiles, strict=False)):
        out.append(
            results.record(
                run_id=run_id,
                case=case,
                backend=backend,
                mode=mode,
                shape_index=i,
                novel=True,
                latency_s=lat,
                compiles=c,
                compile_stages=stages or {"x": c},
                compile_delta={"x": c - prev},
                prepare_s=prepare_s,
                startup_s=startup_s,
                compile_reasons=(reasons or {}).get(i),
                status=status,
                ok=status == "pass",
                max_abs_err=1e-7 * (i + 1),
                max_rel_err=1e-8,
            )
        )
        prev = c
    for i, med in enumerate(cached):
        out.append(
            results.record(
                run_id=run_id,
                case=case,
                backend=backend,
                mode=mode,
                shape_index=i,
                novel=False,
                latency_s=med,
                cached_latency_s=med,
                cached_iqr_s=med / 10,
                compiles=compiles[-1],
                compile_delta={"x": 0},
                prepare_s=prepare_s,
                startup_s=startup_s,
                status="pass",
                ok=True,
            )
        )
    return out


def frame(*jobs):
    import pandas as pd

    return pd.DataFrame.from_records([r for j in jobs for r in j], columns=list(results.FIELDS))
