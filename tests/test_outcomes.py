"""Say why, in the system's own words, and never crash (issue 46): torch.export's
diagnosis kept and parsed, its narrowed retry recorded, our engines' internal errors
counted apart as ``crash``."""

from __future__ import annotations

import textwrap
import uuid
from pathlib import Path

import pytest

import dynshape
from engines import torch_export_diagnosis as diagnosis
from harness import blame, expectations, leaderboard, messages, report, results, zoo_table

ROOT = Path(__file__).resolve().parent.parent

#: torch.export 2.13's refusal of Dim('p', min=2) for a stride-4 conv on p
CONV_REFUSAL = """Constraints violated (p)! For more information, run with TORCH_LOGS="+dynamic".
  - Not all values of p = L['x'].size()[2] in the specified range p <= 96 satisfy the generated guard (L['x'].size()[2] // 4) != 1.
  - Not all values of p = L['x'].size()[2] in the specified range p <= 96 satisfy the generated guard 4 <= L['x'].size()[2] and L['x'].size()[2] <= 96
Suggested fixes:
  p = Dim('p', min=4, max=96)

The error above occurred when calling torch.export.export. If you would like to view some more information about this error, and get a list of all other errors that may occur in your export call, you can replace your `export()` call with `draft_export()`."""


def test_torch_exports_refusal_is_parsed_into_its_parts():
    d = diagnosis.parse(CONV_REFUSAL)
    assert d is not None and d.narrowable
    assert len(d.guards) == 2 and d.guards[0].endswith("satisfy the generated guard (L['x'].size()[2] // 4) != 1")
    (fix,) = d.fixes
    assert (fix.name, fix.kind, fix.min, fix.max) == ("p", "range", 4, 96)
    assert d.words() == "torch.export needs p ≥ 4 and p ≤ 96: suggested Dim('p', min=4, max=96)"
    assert d.fixes_text == "Suggested fixes:\n  p = Dim('p', min=4, max=96)"
    constant = diagnosis.parse(
        "Constraints violated (n)!\n  - You marked n as dynamic but your code specialized it to be a constant (6). "
        "If you're using mark_dynamic, remove it.\nSuggested fixes:\n  n = 6\n"
    )
    assert constant is not None and not constant.narrowable
    assert constant.words() == (
        "torch.export cannot keep n dynamic: You marked n as dynamic but your code specialized it to be a constant (6); "
        "suggested n = 6"
    )
    assert diagnosis.parse("RuntimeError: something else") is None
    related = diagnosis.parse("Constraints violated (t)!\nSuggested fixes:\n  _t = Dim('_t', max=oo)\n  t = 2*_t - 1\n")
    assert related is not None and [f.kind for f in related.fixes] == ["range", "relation"]
    assert (
        related.words() == "torch.export needs _t in its default range, t = 2*_t - 1: suggested Dim('_t', max=oo); t = 2*_t - 1"
    )


def test_refine_takes_the_fixes_part_not_the_whole_message():
    """torch's ``refine_dynamic_shapes_from_suggested_fixes`` fails on the whole message (it
    reads every line after "Suggested fixes:", the closing paragraph too); our part it takes."""
    from torch.export import Dim
    from torch.export.dynamic_shapes import refine_dynamic_shapes_from_suggested_fixes

    spec = ({2: Dim("p", min=2, max=96)},)
    with pytest.raises(ValueError):
        refine_dynamic_shapes_from_suggested_fixes(CONV_REFUSAL, spec)
    (refined,) = refine_dynamic_shapes_from_suggested_fixes(diagnosis.parse(CONV_REFUSAL).fixes_text, spec)
    assert (refined[2].min, refined[2].max) == (4, 96)


def _write_case(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "planted.py"
    path.write_text("import dynshape\nimport torch\n" + textwrap.dedent(body))
    return path


def _records(frame) -> list[dict]:
    return results.read_records(frame.attrs["records"])


@pytest.mark.slow
def test_a_range_from_1_with_a_stride_4_conv_runs_narrowed(tmp_path):
    """The planted case's range starts at 1; a stride-4 conv needs p ≥ 4. torch.export's
    narrowed retry runs the sweep on [4, inf]; the record says the range it ran under,
    beside the declared one, and why in torch.export's words."""
    path = _write_case(
        tmp_path,
        """
        torch.manual_seed(0)
        conv = dynshape.case(
            torch.nn.Conv1d(2, 3, 4, stride=4),
            name="planted_stride4",
            inputs={"x": (1, 2, "p")},
            sweep={"p": [16, 4, 33]},
            out_shape=(1, 3, "p // 4"),
        )
        """,
    )
    frame = dynshape.run(str(path), backends="torch_export", modes="unbounded", out=tmp_path, progress=False, repeats=2)
    recs = _records(frame)
    assert {r["status"] for r in recs} == {"pass"}
    narrowed = recs[0]["narrowed"]
    assert narrowed["declared"] == {"p": [1, None]} and narrowed["ran"] == {"p": [4, None]}
    assert narrowed["why"].startswith("torch.export needs p ≥ 4: suggested Dim('p', min=4)")
    assert recs[-1]["compiles"] == 1  # one export, retried once inside it: the narrowed one counts
    # the report shows the narrowed range beside the declared one, and why
    rows = report.summary(results.load([frame.attrs["records"]]))
    assert rows["message"].iloc[0].startswith("ran on p in [4, inf] (declared [1, inf]): torch.export needs p ≥ 4")


@pytest.mark.slow
def test_sizes_outside_the_narrowed_range_are_reported_as_such(tmp_path):
    """``x[:, : t // 2]``: torch.export answers with a relation (t = 2*_t): the odd sizes of the
    sweep are ``out_of_range``, each naming the narrowed range, not dropped; the even ones pass."""
    path = _write_case(
        tmp_path,
        """
        def half(x):
            return x[:, : x.shape[1] // 2] * 2

        dynshape.case(
            half, inputs={"x": (3, "t")}, sweep={"t": [16, 7, 10]}, dims={"t": ("bounded", 96)}, out_shape=(3, "t // 2")
        )
        """,
    )
    frame = dynshape.run(str(path), backends="torch_export", modes="bounded", out=tmp_path, progress=False, repeats=2)
    novel = {r["shape_index"]: r for r in _records(frame) if r["novel"]}
    assert [novel[i]["status"] for i in range(3)] == ["pass", "out_of_range", "pass"]
    assert "t = 7 not of the form t = 2*_t" in novel[1]["message"]
    assert novel[0]["narrowed"]["ran"] == {"t": [2, 96]}
    assert novel[0]["narrowed"]["relations"] == {"t": "2*_t"}


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["stablehlo_xla", "stablehlo_iree"])
def test_our_lowering_exports_the_narrowed_range_as_the_peer_does(tmp_path, backend):
    """A stride-4 conv from p = 1: torch.export refuses the range, even size-obliviously, and
    suggests p >= 4. Our lowering paths retry with torch.export's fix as the torch_export peer
    does: one lowering and one executable serve the narrowed range, the records say so
    (without the retry: every size refused). A size outside it is ``out_of_range`` by the
    peer's own check (:class:`backends.torch_export.NarrowedExport`, the test above)."""
    if backend == "stablehlo_iree":
        pytest.importorskip("iree.compiler")
    path = _write_case(
        tmp_path,
        """
        torch.manual_seed(0)
        conv = torch.nn.Conv1d(2, 3, 4, stride=4)
        dynshape.case(
            conv, name="planted_stride4", inputs={"x": (1, 2, "p")}, sweep={"p": [16, 4, 33]},
            dims={"p": ("bounded", 96)}, out_shape=(1, 3, "p // 4"),
        )
        """,
    )
    frame = dynshape.run(str(path), backends=backend, modes="bounded", out=tmp_path, progress=False, repeats=2)
    novel = {r["shape_index"]: r for r in _records(frame) if r["novel"]}
    assert [novel[i]["status"] for i in range(3)] == ["pass", "pass", "pass"]
    assert novel[0]["narrowed"]["ran"] == {"p": [4, 96]} and novel[0]["narrowed"]["declared"] == {"p": [1, 96]}
    assert novel[0]["narrowed"]["why"].startswith("torch.export needs p ≥ 4")
    assert max(novel[2]["compile_stages"].values()) == 1, novel[2]["compile_stages"]


@pytest.mark.slow
def test_a_case_torch_export_cannot_keep_dynamic_shows_the_guard(tmp_path):
    """Its report shows the broken guard in torch.export's words, not "run with TORCH_LOGS";
    the record keeps torch.export's message whole."""
    path = _write_case(
        tmp_path,
        """
        def fixed(x):
            return x.reshape(2, 3) * 2

        dynshape.case(fixed, inputs={"x": ("n",)}, sweep={"n": [6, 6]}, dims={"n": ("bounded", 8)})
        """,
    )
    frame = dynshape.run(str(path), backends="torch_export", modes="bounded", out=tmp_path, progress=False, repeats=2)
    (rec,) = [r for r in _records(frame) if r["status"] != "pass"][:1]
    assert rec["status"] == "unsupported" and rec["stage"] == "export"
    assert "Constraints violated" in rec["message"] and "\n" in rec["message"]  # whole, not its first line
    words = rec["diagnosis"]["words"]
    assert words.startswith("torch.export cannot keep n dynamic: You marked n as dynamic but your code specialized it")
    assert "TORCH_LOGS" not in words
    shown = report.summary(results.load([frame.attrs["records"]]))["message"].iloc[0]
    assert shown.startswith(words) and "TORCH_LOGS" not in shown.split(" (")[0]


# -- our crashes, apart --------------------------------------------------------


def test_blame_is_ours_only_for_a_bug_raised_in_engines(tmp_path):
    planted = ROOT / "engines" / f"_planted_{uuid.uuid4().hex[:8]}.py"
    planted.write_text(
        "def boom(x):\n    return x.node\n\ndef refuse():\n    raise NotImplementedError('no lowering for aten.x')\n"
    )
    try:
        import importlib

        mod = importlib.import_module(f"engines.{planted.stem}")
        with pytest.raises(AttributeError) as bug:
            mod.boom(1)
        with pytest.raises(NotImplementedError) as named:
            mod.refuse()
        with pytest.raises(AttributeError) as theirs:
            (1).node  # noqa: B018 (raised here, not in engines/)
    finally:
        planted.unlink()
    assert blame.ours(bug.value) and not blame.ours(named.value) and not blame.ours(theirs.value)


@pytest.mark.slow
def test_a_planted_engine_error_is_a_crash_in_its_own_column(tmp_path):
    """An internal error of an engine (an ``AttributeError`` raised by a line of
    ``engines/``) is status ``crash``: the report counts it, the leaderboard and the zoo
    table have a column for it, and the gate fails on it whatever the rule says."""
    name = f"_planted_{uuid.uuid4().hex[:8]}"
    planted = ROOT / "engines" / f"{name}.py"
    planted.write_text("def boom(x):\n    return x.node  # 'Tensor' object has no attribute 'node'\n")
    try:
        path = _write_case(
            tmp_path,
            f"""
            from engines.{name} import boom

            def crashes(x):
                return boom(x)

            dynshape.case(
                crashes,
                name="zoo_planted_crash",
                inputs={{"x": ("n",)}},
                sweep={{"n": [3, 5]}},
                oracle=lambda x: x,  # the program itself would crash the oracle too
                out_shape=("n",),
            )
            """,
        )
        frame = dynshape.run(str(path), backends="torch_eager", modes="unbounded", out=tmp_path, progress=False, repeats=2)
    finally:
        planted.unlink()
    recs = _records(frame)
    assert {r["status"] for r in recs} == {"crash"}
    assert "'Tensor' object has no attribute 'node'" in recs[0]["message"]
    df = results.load([frame.attrs["records"]])
    board = leaderboard.leaderboard(df)
    assert int(board["crash"].iloc[0]) == 1 and int(board["passed"].iloc[0]) == 0
    assert "our crashes" in leaderboard.markdown(board)
    assert int(zoo_table.table(df)["crash"].iloc[0]) == 1
    rows = report.summary(df)
    assert "1 crash" in report.run_summary(rows, {}, "r", {})
    assert "Our engines crashed (1; a bug of ours, not the system's):\n- zoo_planted_crash[torch_eager-unbounded]" in (
        report.markdown(rows)
    )
    anything = expectations.Rule(case="zoo_planted_crash", xfail="any failure", match=".*")
    v = expectations.verdict(recs, anything)
    assert v.outcome == "fail" and v.problems[0].startswith("our engine crashed") and v.problems[0].shape_index == 0


def test_a_verdict_carries_its_shape_index():
    recs = [
        results.record(run_id="r", case="c", backend="b", mode="m", status="pass", novel=True, shape_index=i, compiles=i + 1)
        | {"compile_delta": {"x": 1}}
        for i in range(3)
    ]
    v = expectations.verdict(recs, expectations.Rule(case="c", per_shape="first"))
    assert [p.shape_index for p in v.problems] == [1, 2]


def test_messages_show_the_first_lines_and_the_diagnosis():
    msg = "torch.export could not keep c's dims dynamic: Constraints violated (p)!\n  - guard one\n  - guard two\n  - three"
    shown = messages.shown(msg, {"words": "torch.export needs p ≥ 4: suggested Dim('p', min=4)"})
    assert shown.startswith("torch.export needs p ≥ 4") and "guard two" in shown and "three" not in shown


@pytest.mark.slow
def test_leaderboard_and_zoo_table_agree_on_a_recorded_run(tmp_path):
    """A small zoo run, recorded by real workers: for every job, the leaderboard's
    "compiled once" and the zoo table's are the same answer."""
    from harness import frames

    path = _write_case(
        tmp_path,
        """
        dynshape.case(lambda: torch.nn.Linear(4, 3), name="zoo_linear", inputs={"x": ("b", 4)}, sweep={"b": [2, 3, 5]},
                      out_shape=("b", 3))

        def halve(x):
            return x[: x.shape[0] // 2] * 2

        dynshape.case(halve, name="zoo_halve", inputs={"x": ("n",)}, sweep={"n": [4, 6, 9]}, out_shape=("n // 2",))
        """,
    )
    frame = dynshape.run(
        str(path), backends="torch_eager,torch_export,lazy", modes="static,unbounded", out=tmp_path, progress=False, repeats=2
    )
    df = results.load([frame.attrs["records"]])
    board = leaderboard.once_per_job(frames.flat(df), frames.RUN + frames.JOB)
    board_once = {(k[2], k[3], k[4]): bool(v) for k, v in board.items()}
    zoo_once = {(j["case"], j["backend"], j["mode"]): zoo_table.compiled_once(j) for j in zoo_table.jobs(df)}
    ran = {k for k in zoo_once if k[2] in ("static", "unbounded")}
    assert ran and {k: board_once[k] for k in ran} == {k: zoo_once[k] for k in ran}
    assert zoo_once[("zoo_linear", "torch_export", "unbounded")] and not zoo_once[("zoo_linear", "torch_export", "static")]


def test_the_plugin_reads_the_shape_off_the_verdict_not_its_text():
    """``dynshape_expect`` names the reason the system gave at the shape a problem is about,
    from the problem's ``shape_index`` (its text may say anything)."""
    from dynshape.pytest_plugin import _reason

    recs = [{"novel": True, "shape_index": i, "compile_reasons": [f"why {i}"]} for i in range(3)]
    assert _reason(expectations.Problem("whatever the words", 2), recs) == "; reason: why 2"
    assert _reason("shape 2: a plain string names no shape", recs) == ""


@pytest.mark.slow
def test_a_false_export_assertion_is_out_of_range_on_the_stablehlo_path(tmp_path):
    """SEW's padding branch: torch.export takes the branch of its sample and defers the guard
    to a runtime assertion; at a size where it is false, the lowered program refuses as torch's
    would, recorded ``out_of_range`` at stage ``export`` with torch's expression, not an error."""
    path = _write_case(
        tmp_path,
        """
        def parity(x):
            if x.shape[1] % 2 == 0:
                return x * 2
            return x * 3

        dynshape.case(parity, inputs={"x": (3, "t")}, sweep={"t": [16, 7, 10]}, dims={"t": ("bounded", 96)})
        """,
    )
    frame = dynshape.run(str(path), backends="stablehlo_xla", modes="bounded", out=tmp_path, progress=False, repeats=2)
    novel = {r["shape_index"]: r for r in _records(frame) if r["novel"]}
    assert [novel[i]["status"] for i in range(3)] == ["pass", "out_of_range", "pass"]
    assert novel[1]["stage"] == "export" and "torch.export runtime assertion" in novel[1]["message"]
    assert zoo_table.stage_of(novel[1]["status"], novel[1]["stage"]) == "export"
