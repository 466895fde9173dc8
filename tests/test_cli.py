"""The command line: list, run, report; unknown names exit 2 naming the valid ones."""

import json

import pytest

from harness import cli, results


def test_list_json_shape(capsys):
    assert cli.main(["list", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    case = {c["name"]: c for c in data["cases"]}["gnn_edge_divide"]
    assert case["dims"] == {"e": {"kind": "bounded", "max": 2048}, "d": {"kind": "static", "size": 8}}
    assert set(case) >= {"name", "tags", "dims"}
    for b in data["backends"]:
        assert set(b) >= {"name", "modes", "env", "available", "reason"}
    bucketed = {b["name"] for b in data["backends"] if "bucketed" in b["modes"]}
    # our XLA executors per `?` bucket, the per-shape compilers by host padding
    assert bucketed >= {
        "stablehlo_xla",
        "jax_export",
        "jax_jit",
        "einx",
        "torch_compile",
        "torch_export",
        "torch_xla_lazy",
        "lazy",
        "lazy_stablehlo",
    }


@pytest.mark.parametrize(
    "flag,value,what", [("--cases", "nope", "case"), ("--backends", "tpu*", "backend"), ("--modes", "dynamic", "mode")]
)
def test_unknown_names_exit_2_and_list_valid_ones(flag, value, what, capsys, tmp_path):
    assert cli.main(["run", flag, value, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"unknown {what} {value!r}; valid:" in err
    assert not list(tmp_path.glob("*.jsonl"))


@pytest.mark.parametrize("flags, start", [([], "fork"), (["--no-fork-server"], "spawn")])
def test_run_writes_records_and_prints_the_report(flags, start, tmp_path, capsys):
    code = cli.main(
        [
            "run",
            "--cases",
            "gnn_edge_divide",
            "--backends",
            "torch_eager",
            "--modes",
            "unbounded",
            "--out",
            str(tmp_path),
            "--repeats",
            "2",
            "--no-progress",
            *flags,
        ]
    )
    assert code == 0  # the job conforms to cases/expectations.toml (else exit 1)
    out = capsys.readouterr().out
    # the terminal gets a summary and where the report is; the table is `report`'s
    assert "| gnn_edge_divide |" not in out and "1 jobs ran: 1 pass" in out
    (page,) = tmp_path.glob("*.report.html")
    assert f"HTML report: {page}" in out and "<h2 id=gnn_edge_divide>" in page.read_text()
    df = results.load([tmp_path])
    assert len(df) == 6 and set(df["status"]) == {"pass"}
    novel = df[df["novel"] == True]  # noqa: E712
    assert list(novel["sizes"]) == [{"e": 1000}, {"e": 1001}, {"e": 1002}]
    assert novel["versions"].iloc[0]["torch"] == "2.13.0+cpu"
    assert {m["worker_start"]["how"] for m in df["machine"]} == {start}
    assert list(tmp_path.glob("*.report.csv"))
    # report re-reads the latest run
    assert cli.main(["report", str(tmp_path)]) == 0
    assert "| gnn_edge_divide | torch_eager | unbounded | pass | = 0/shape | 3 | 0 |" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv,message",
    [
        (["run", "--jobs", "0"], "argument --jobs: must be an integer in [1, 64], got '0'"),
        (["run", "--jobs", "65"], "argument --jobs: must be an integer in [1, 64], got '65'"),
        (["run", "--jobs", "two"], "argument --jobs: must be an integer in [1, 64], got 'two'"),
        (["run", "--repeats", "0"], "argument --repeats: must be an integer in [1, 10000], got '0'"),
        (["run", "--warmup", "-1"], "argument --warmup: must be an integer in [0, 1000], got '-1'"),
        (["run", "--threads", "5000"], "argument --threads: must be an integer in [0, 1024], got '5000'"),
        (["run", "--timeout", "0"], "argument --timeout: must be a number in [1.0, 86400.0], got '0'"),
        (["run", "--max-memory", "lots"], "argument --max-memory: cannot read memory size 'lots': give e.g. 8G, 512M, 50% (of "),
        (
            ["run", "--max-memory", "1k"],
            "argument --max-memory: memory limit '1k' = 1.0 KiB is outside the allowed range [64.0 MiB, ",
        ),
        (["compare", "a", "b", "--max-slowdown", "0.5"], "argument --max-slowdown: must be a number in [1.0, 1000.0], got '0.5'"),
    ],
)
def test_numeric_flags_out_of_range_exit_2_naming_the_range(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == cli.EXIT_USAGE
    assert message in capsys.readouterr().err


def test_unknown_names_exit_2_for_report_too(tmp_path, capsys):
    with results.Writer(tmp_path / "r.jsonl") as w:
        w.write(results.record(run_id="r", case="gnn_edge_divide", backend="torch_eager", mode="static", status="skipped"))
    for flag, value, what in (("--cases", "nope", "case"), ("--backends", "tpu*", "backend"), ("--modes", "dynamic", "mode")):
        assert cli.main(["report", str(tmp_path), flag, value]) == cli.EXIT_USAGE
        assert capsys.readouterr().err == (
            f"dynshape: unknown {what} {value!r}; valid: "
            f"{ {'case': 'gnn_edge_divide', 'backend': 'torch_eager', 'mode': 'static'}[what] }\n"
        )


def test_compare_and_report_of_missing_runs_exit_2(tmp_path, capsys):
    assert cli.main(["compare", "nope", "nada", "--results", str(tmp_path)]) == cli.EXIT_USAGE
    assert capsys.readouterr().err == (
        f"dynshape: 'nope' is neither a results file, a directory, a run id nor a commit with runs in {tmp_path}/\n"
    )
    assert cli.main(["report", str(tmp_path)]) == cli.EXIT_USAGE
    assert capsys.readouterr().err == f"dynshape: no results files (*.jsonl) in directory {tmp_path}\n"


def test_report_renders_a_torn_run_and_warns_once_per_bad_line(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    with results.Writer(path) as w:
        w.write(
            results.record(
                run_id="r", case="gnn_edge_divide", backend="torch_eager", mode="static", status="skipped", message="not today"
            )
        )
    with open(path, "a") as f:
        f.write('{"schema": 2, "run_id": "r", "ca')
    assert cli.main(["report", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "- torch_eager, skipped: not today: gnn_edge_divide[static]" in out
    assert err.splitlines()[0] == (
        f"dynshape: warning: {path}:2: skipped a line that is not JSON (Unterminated "
        "string starting at column 30; a run killed mid-write leaves a torn last line)"
    )


def test_run_exits_1_when_a_job_ends_unexpectedly(fake_backends, monkeypatch, tmp_path, capsys):
    from harness import expectations, registry

    crasher, sleepy = fake_backends("Crasher"), fake_backends("Sleepy")
    monkeypatch.setattr(registry, "backends", lambda: {"crasher": crasher, "sleepy": sleepy})
    rules = tmp_path / "e.toml"
    # a fake program's one compile lands on its first call (its Program is made in prepare)
    rules.write_text('[[expect]]\nbackend = "*"\nper_shape = "first"\n')
    monkeypatch.setattr(expectations, "DEFAULT", rules)
    argv = ["run", "--cases", "gnn_edge_divide", "--modes", "static", "--out", str(tmp_path), "--repeats", "1", "--no-progress"]
    assert cli.main([*argv, "--backends", "sleepy"]) == cli.EXIT_OK
    capsys.readouterr()
    assert cli.main([*argv, "--backends", "crasher,sleepy"]) == cli.EXIT_UNEXPECTED
    out, err = capsys.readouterr()
    # a screenful: counts, where the report is, and (on stderr) every unexpected job
    assert len(out.splitlines()) + len(err.splitlines()) <= 40, out + err
    assert "2 jobs ran: 1 pass, 1 crashed" in out and "1 pass, 1 fail (1 unexpected: listed below)" in out
    (csv,) = [
        p
        for p in tmp_path.glob("*.report.csv")
        if p.stat().st_mtime == max(q.stat().st_mtime for q in tmp_path.glob("*.report.csv"))
    ]
    assert f"report CSV: {csv}" in out and f"HTML report: {csv.with_suffix('').with_suffix('.report.html')}" in out
    err = err.splitlines()
    assert err[-2] == "dynshape: 1 of 2 jobs ended otherwise than cases/expectations.toml says:"
    assert err[-1].startswith(
        "  gnn_edge_divide[crasher-static]: fail: job crashed: worker died (signal SIGABRT) "
        "after 1 records; stderr: error: unknown op 'stablehlo.frobnicate' | Fatal Python error"
    )


def _records(path, recs):
    with results.Writer(path) as w:
        for r in recs:
            w.write(r)


@pytest.mark.parametrize(
    "change,exit_code,says",
    [
        (None, 0, ""),
        ("recompiled", 1, "  gnn_edge_divide[torch_eager-unbounded]: fail: "),
        ("norule", 1, "  gnn_edge_divide[torch_tpu-unbounded]: norule: "),
        ("more", 1, "  gnn_edge_divide[torch_eager-unbounded]: fail: "),
    ],
)
def test_check_exits_1_on_unexpected_recompiled_or_unruled_jobs(change, exit_code, says, tmp_path, capsys):
    import sys

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from synthetic import job

    recs = job(
        "gnn_edge_divide",
        "torch_tpu" if change == "norule" else "torch_eager",
        "unbounded",
        [1e-3] * 3,
        [1e-5] * 3,
        [0, 1, 1] if change == "more" else [0, 0, 0],
        status="pass",
    )
    if change == "recompiled":
        recs[-1]["status"] = "recompiled"
    _records(tmp_path / "r.jsonl", recs)
    assert cli.main(["report", str(tmp_path / "r.jsonl"), "--check", "--csv", str(tmp_path / "r.csv")]) == exit_code
    err = capsys.readouterr().err
    assert says in err and ("ended otherwise than" in err) == bool(exit_code)


def _subcommands() -> list[str]:
    import argparse

    sub = next(a for a in cli.parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(sub.choices)


@pytest.mark.parametrize("command", _subcommands())
def test_every_subcommand_prints_its_help(command, capsys):
    """argparse expands ``%`` in help strings: a stray one crashes ``--help``."""
    with pytest.raises(SystemExit) as e:
        cli.main([command, "--help"])
    assert e.value.code == 0
    assert command in capsys.readouterr().out


def test_help_names_every_command_and_no_developer_note(capsys):
    """``--help`` is for users: every verb of :data:`harness.commands.COMMANDS` is
    named in the description and listed, and no note meant for developers."""
    from harness.commands import COMMANDS

    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    description = cli.__doc__ or ""
    for name in COMMANDS:
        assert f"`{name}" in description and f"    {name}" in out, name
    assert "lines" not in out.lower() and "developer" not in out.lower()
    assert _subcommands() == sorted(COMMANDS)


def test_warnings_meant_for_backend_authors_stay_off_the_users_screen(monkeypatch, capsys):
    """A backend's undeclared import (:class:`LateImportWarning`) is shown with
    ``DYNSHAPE_AUTHOR_WARNINGS`` set, and not otherwise."""
    import warnings

    from harness import commands, zygote_policy

    def warns(args) -> int:
        warnings.warn(zygote_policy.LateImportWarning({"job": "j", "late_imports": ["m"], "backend": "b"}), stacklevel=1)
        return 0

    monkeypatch.setattr(commands.COMMANDS["merge"], "main", warns)
    argv = ["merge", "x.jsonl", "--out", "y.jsonl"]
    monkeypatch.delenv(cli.AUTHOR_WARNINGS, raising=False)
    assert cli.main(argv) == 0 and "imported m" not in capsys.readouterr().err
    monkeypatch.setenv(cli.AUTHOR_WARNINGS, "1")
    assert cli.main(argv) == 0 and "imported m" in capsys.readouterr().err
