"""history: three commits of fixture runs and asv results, by commit and since a revision."""

import json
import subprocess

import pytest
from synthetic import job

from harness import cli, history, results


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def three_commits(tmp_path):
    """A repository with three commits, a harness run at each (einx/static
    compiles per shape until the third commit, which compiles once; eager
    never) and asv results of the same suite at each."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    commits = []
    for i in range(3):
        _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", f"c{i}")
        commits.append(_git(repo, "rev-parse", "HEAD"))
    res = repo / "results"
    for i, c in enumerate(commits):
        einx = [1, 1, 1] if i == 2 else [1, 2, 3]
        recs = job("gnn_edge_divide", "einx", "static", [0.1, 0.02, 0.02 * (i + 1)], [4e-5] * 3, einx, run_id=f"r{i}") + job(
            "gnn_edge_divide", "torch_eager", "static", [1e-3] * 3, [7e-6] * 3, [0, 0, 0], run_id=f"r{i}"
        )
        with results.Writer(res / f"r{i}.jsonl") as w:
            for r in recs:
                w.write(dict(r, commit=c, machine={"host": "vm"}, timestamp=f"2026-11-0{i + 1}T00:00:00.000+00:00"))
        # asv's own result-file layout (api version 2): results/asv/<machine>/<commit[:8]>-<env>.json
        params = [["'gnn_edge_divide'"], ["'einx'", "'torch_eager'"], ["'static'", "'unbounded'"]]
        asv = {
            "commit_hash": c,
            "env_name": "existing-py",
            "date": 1764547200000 + i * 86400000,
            "params": {"machine": "vm", "python": "3.11"},
            "python": "3.11",
            "requirements": {},
            "env_vars": {},
            "result_columns": ["result", "params", "version", "started_at", "duration"],
            "results": {
                "suite.Compiles.track_compiles": [[3 if i < 2 else 1, None, 0, 0], params, "v", 0, 1.0],
                "suite.Catalogue.time_novel_sweep": [[0.12 + i, None, 1e-3, float("nan")], params, "v", 0, 1.0],
                "suite.Compiles.track_compile_time": [[0.05, None, 0.0, 0.0], params, "v", 0, 1.0],
            },
            "durations": {},
            "version": 2,
        }
        (res / "asv" / "vm").mkdir(parents=True, exist_ok=True)
        (res / "asv" / "vm" / "machine.json").write_text(json.dumps({"machine": "vm", "version": 1}))
        (res / "asv" / "vm" / f"{c[:8]}-existing-py.json").write_text(json.dumps(asv))
    return repo, commits


def test_the_asv_fixture_is_what_asv_reads(three_commits):
    asv_results = pytest.importorskip("asv.results")
    repo, commits = three_commits
    r = asv_results.Results.load(str(repo / "results" / "asv" / "vm" / f"{commits[0][:8]}-existing-py.json"))
    params = [["'gnn_edge_divide'"], ["'einx'", "'torch_eager'"], ["'static'", "'unbounded'"]]
    assert r.commit_hash == commits[0] and "suite.Compiles.track_compiles" in r.get_all_result_keys()
    assert r.get_result_value("suite.Compiles.track_compiles", params) == [3, None, 0, 0]


def test_history_by_commit_from_runs_and_asv(three_commits):
    repo, commits = three_commits
    h = history.history(results_dir=repo / "results")
    einx = h[(h["backend"] == "einx") & (h["mode"] == "static")]
    runs = einx[einx["source"] == "harness"]
    assert list(runs["commit"]) == commits
    assert list(runs["compiles_by_shape"]) == [(1, 1, 1), (1, 1, 1), (1, 0, 0)]
    assert list(runs["novel_sweep_s"]) == pytest.approx([0.14, 0.16, 0.18])
    asv = einx[einx["source"] == "asv"]
    assert list(asv["commit"]) == commits and list(asv["compiles"]) == [3, 3, 1]
    assert list(asv["novel_sweep_s"]) == pytest.approx([0.12, 1.12, 2.12])
    assert list(asv["compile_time_s"]) == pytest.approx([0.05] * 3)
    # skipped (None) and failed (NaN) asv results are missing values, not numbers
    eager = h[(h["backend"] == "torch_eager") & (h["mode"] == "unbounded") & (h["source"] == "asv")]
    assert eager["novel_sweep_s"].isna().all() and list(eager["compiles"]) == [0, 0, 0]


def test_history_since_a_revision(three_commits, monkeypatch, capsys):
    repo, commits = three_commits
    monkeypatch.chdir(repo)
    assert cli.main(["history", "--since", commits[1], "--backends", "einx", "--modes", "static"]) == 0
    out = capsys.readouterr().out
    assert commits[0][:10] not in out
    assert f"| vm | gnn_edge_divide | einx | static | {commits[1][:10]} | 2026-11-02 00:00 | harness | pass | 3 | 1,1,1 |" in out
    assert f"| vm | gnn_edge_divide | einx | static | {commits[2][:10]} | 2026-11-03 00:00 | harness | pass | 1 | 1,0,0 |" in out
    assert f"{commits[2][:10]} | 2025-12-03 00:00 | asv | – | 1 | – | 50.0 ms | 2.12 s |" in out
    assert cli.main(["history", "--since", "no-such-rev"]) == 2


def test_html_report_plots_history_when_several_commits(three_commits):
    from harness import html_report as html

    repo, _ = three_commits
    page = html.render(results.load([repo / "results"]), rules=[])
    assert "History by commit" in page and 'aria-label="gnn_edge_divide: history by commit"' in page
    assert 'aria-label="gnn_edge_divide: novel sweep by commit"' in page
