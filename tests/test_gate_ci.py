"""The gate in CI: markers per backend and environment, backend names in the
ids, and the records it keeps (``--dynshape-out``) for report and compare."""

import json
import os
import subprocess
import sys
from pathlib import Path

from harness import cli, results, runner

ROOT = Path(__file__).resolve().parent.parent


def _pytest(*args, timeout=300):
    env = {k: v for k, v in os.environ.items() if k != "DYNSHAPE_GATE_RUN"}  # its own run, not ours
    return subprocess.run(
        [sys.executable, "-m", "pytest", "cases/", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def _ids(*args) -> list[str]:
    out = _pytest("--collect-only", "-q", *args)
    return [line.split("::", 1)[1] for line in out.stdout.splitlines() if "::" in line]


def test_markers_select_by_backend_and_environment_and_ids_name_the_backend():
    from cases import test_conformance as gate

    marks = {c.id: {m.name for m in gate._marks(c.backend)} for c in gate.COMBOS}
    assert all(c.backend.name in c.id and c.backend.name in marks[c.id] for c in gate.COMBOS)
    # the StableHLO peers run in main but start an export server in the xla env: marked xla too
    assert marks["gnn_edge_divide[torch_xla_stablehlo-unbounded]"] == {"torch_xla_stablehlo", "main", "xla"}
    assert marks["gnn_edge_divide[einx-static]"] == {"einx", "main"}
    # pytest knows the markers and selects by them
    no_xla = _ids("-m", "not xla", "--strict-markers")
    want = [f"test_conformance[{i}]" for i, m in marks.items() if "xla" not in m]
    assert [i for i in no_xla if i.startswith("test_conformance")] == want and len(want) < len(marks)


def test_the_gate_keeps_its_records_for_report_and_compare(tmp_path):
    out = _pytest("-m", "torch_eager or torch_export", "-k", "gnn_edge_divide and unbounded", "--dynshape-out", str(tmp_path))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    files = list(tmp_path.glob("gate-*.jsonl"))
    assert len(files) == 1
    df = results.load(files)
    assert set(df["backend"]) == {"torch_eager", "torch_export"} and set(df["status"]) == {"pass"} and len(df) == 12
    assert df["run_id"].nunique() == 1 and df["run_id"].iloc[0] == files[0].stem
    # one zygote served the session: it preloads what every collected job's backend names
    # (torch_eager alone names nothing; a zygote per job's own preload would start two)
    starts = {json.dumps(r["machine"]["worker_start"]["zygote_steps"]) for r in results.read_records(files[0])}
    assert starts == {json.dumps(["torch._dynamo", "torch.export._trace"])}
    # its plan lists the jobs it ran, so `report --check` would see one that never ran
    plan = json.loads(runner.plan_path(files[0]).read_text())
    assert sorted(plan["jobs"]) == [["gnn_edge_divide", b, "unbounded"] for b in ("torch_eager", "torch_export")]
    assert plan["repeats"] == 2
    assert cli.main(["report", str(files[0]), "--check", "--csv", str(tmp_path / "r.csv")]) == 0
    assert cli.main(["compare", str(files[0]), str(files[0])]) == 0
