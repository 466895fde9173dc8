"""What a run's fork server imports (harness.forkserver.selection): the modules
and warm-up steps its backends declare (``Backend.preload``, ``Backend.warmup``,
read off the descriptors: the harness names none), so a run of torch's
eager backend alone does not wait for jax and inductor; a job that imports such
a module after its startup without naming it is warned about, since its import
would then be timed wherever the zygote did not preload it."""

import os
import sys
import warnings

import pytest

import cases
from backends import envs
from backends.base import Backend
from cases import libs
from harness import expectations, forkserver, job_env, registry, results, runner, zygote_policy

CASE = "gnn_edge_divide"


def test_selection_keeps_the_catalogue_order_and_takes_only_what_is_wanted():
    libraries = tuple(libs.PRELOAD_STEPS.values())  # the model libraries' imports, last
    assert forkserver.declared("main") == (
        ("jax", "jax.numpy"),
        ("torch._dynamo", "torch.export._trace", "backends.torch_compile:warm_inductor", *libraries),
    )
    full_modules, full_steps = forkserver.selection("main")
    assert full_modules == (*forkserver.PRELOAD["main"], *forkserver.declared("main")[0])
    assert full_steps == forkserver.declared("main")[1]
    wanted = {"backends.torch_compile:warm_inductor", "jax.numpy", "torch._dynamo"}
    assert forkserver.selection("main", wanted) == (
        (*forkserver.PRELOAD["main"], "jax.numpy"),
        ("torch._dynamo", "backends.torch_compile:warm_inductor"),
    )
    assert forkserver.selection("main", ()) == (forkserver.PRELOAD["main"], ())
    assert forkserver.catalogue("main") == (
        "jax",
        "jax.numpy",
        "torch._dynamo",
        "torch.export._trace",
        "backends.torch_compile",
        "cases.libs",
    )


def test_a_run_of_model_cases_preloads_their_libraries_once():
    """The zygote of a run whose cases need transformers imports it (a warm-up step), not each job;
    a run of a case without libraries asks for none."""
    from harness import registry
    from harness.forkserver import preload_of
    from harness.runner import Combo

    eager = registry.backends()["torch_eager"]
    wanted = preload_of([Combo(cases.get("model_gpt2"), eager, "unbounded")])["main"]
    assert libs.PRELOAD_STEPS["transformers"] in wanted
    plain = preload_of([Combo(cases.get("gnn_edge_divide"), eager, "unbounded")])["main"]
    assert not plain & set(libs.PRELOAD_STEPS.values())
    _, steps = forkserver.selection("main", wanted)
    assert libs.PRELOAD_STEPS["transformers"] in steps


def test_what_a_registered_backend_declares_is_its_zygotes_to_run(monkeypatch):
    """A backend the harness has never heard of (an out-of-tree one) gets its
    preloads and warm-up steps run by its environment's zygote, steps that import
    a module before those that call a function."""

    class Newcomer(Backend):
        name = "newcomer"
        preload = ("csv", "jax")
        warmup = ("newcomer_pkg:warm", "torch._dynamo", "decimal")

    found = dict(registry.backends(), newcomer=Newcomer())
    monkeypatch.setattr(registry, "backends", lambda: found)
    preload, steps = forkserver.declared("main")
    assert preload[-1] == "csv" and preload.count("jax") == 1
    own = tuple(s for s in steps if s not in libs.PRELOAD_STEPS.values())
    assert own[-2:] == ("backends.torch_compile:warm_inductor", "newcomer_pkg:warm") and "decimal" in steps
    assert {"csv", "decimal", "newcomer_pkg"} <= set(forkserver.catalogue("main"))
    # the xla env's zygote runs only what its own backends declare (torchax_stablehlo's) and the model libraries
    xla_preload, xla_steps = forkserver.declared("xla")
    assert set(xla_preload) == {"jax", "jax.numpy", "torchax", "torchax.export"} and "csv" not in xla_preload
    assert set(xla_steps) == {"torch._dynamo", "torch.export._trace", *libs.PRELOAD_STEPS.values()}


def test_a_zygote_that_preloads_more_serves_a_job_that_wants_less_and_replaces_one_that_preloads_less(monkeypatch):
    monkeypatch.setattr(zygote_policy, "PRELOAD", {"main": ("json",)})
    monkeypatch.setattr(zygote_policy, "declared", lambda env: (("csv",), ()))
    monkeypatch.setattr(forkserver, "_ZYGOTES", {})
    env = dict(os.environ, **envs.env_vars("main"), OMP_NUM_THREADS="1")

    def pid(wanted):
        proc = forkserver.start(sys.executable, "main", ["-c", "pass"], env, str(envs.ROOT), wanted)
        assert proc is not None
        proc.stdout.read(), proc.stderr.read()
        proc.wait(timeout=60)
        return proc.info["pid"], proc.info["preloaded"]

    try:
        lean = pid(())
        assert pid(()) == lean and lean[1] == ["json"]
        rich = pid({"csv"})
        assert rich[1] == ["json", "csv"] and rich[0] != lean[0]
        # the lean one was closed (an idle slot of MAX_ZYGOTES that the rich one makes useless)
        assert pid(()) == rich and pid({"csv"}) == rich and len(forkserver._ZYGOTES) == 1
    finally:
        forkserver.close_all()


def _run(combos, tmp_path, preload, monkeypatch):
    """Run ``combos`` from a zygote that preloads just ``preload``: a new one (a zygote
    this process already holds may preload more, and would serve them); the records
    and the LateImportWarnings."""
    monkeypatch.setattr(forkserver, "_ZYGOTES", {})
    r = runner.Runner(tmp_path, profile="quick", repeats=1, warmup=0, progress=False, fork_server=True)
    r.zygote_preload = preload
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            path = r.run(combos)
    finally:
        forkserver.close_all()
    records = results.read_records(path)
    for rec in records:  # the zygote preloaded what was asked, no more
        steps = rec["machine"]["worker_start"]["zygote_steps"]
        assert set(steps) == set(forkserver.selection("main", preload["main"])[1]), (rec["backend"], steps)
    return records, [str(w.message) for w in caught if issubclass(w.category, forkserver.LateImportWarning)]


@pytest.mark.parametrize("how", ["run", "run_one"])
def test_a_run_of_the_eager_backend_alone_preloads_no_jax_and_no_inductor(how, tmp_path, monkeypatch):
    """A run (:meth:`~harness.runner.Runner.run`) and a job run alone (``run_one``, as
    tests and asv's timed benchmarks run them) both start a zygote
    with the job's own backend's preload: a full one costs ~9 CPU-s more to start."""
    monkeypatch.setattr(forkserver, "_ZYGOTES", {})  # none of this process's (a full one would serve)
    r = runner.Runner(tmp_path, profile="quick", repeats=1, warmup=0, progress=False, fork_server=True)
    combo = runner.Combo(cases.get(CASE), registry.backends()["torch_eager"], "static")
    try:
        if how == "run":
            rec = results.read_records(r.run([combo]))[0]
        else:
            rec = r.run_one(combo, lambda rec: None)[0]
        (zygote,) = forkserver._ZYGOTES.values()
        assert zygote.steps == () and "jax" not in zygote.preload
    finally:
        forkserver.close_all()
    assert rec["status"] == "pass" and rec["machine"]["worker_start"]["how"] == "fork"
    assert rec["machine"]["worker_start"]["zygote_steps"] == []
    assert r.zygote_preload == ({"main": set()} if how == "run" else None)


def test_what_this_process_set_for_itself_does_not_start_another_zygote(tmp_path, monkeypatch):
    """A model library's settings (cases.libs.ENV, set when this process loads one)
    and inductor's own address variable (set when it compiles in this process) would
    change the jobs' environment, and so the zygote's key, between two jobs."""
    monkeypatch.setattr(forkserver, "_ZYGOTES", {})
    for k in [*libs.ENV, *job_env.PROCESS_LOCAL]:  # what libs.load sets goes after the test (tests/conftest.py)
        monkeypatch.delenv(k, raising=False)
    r = runner.Runner(tmp_path, profile="quick", repeats=1, warmup=0, progress=False, fork_server=True)
    combo = runner.Combo(cases.get(CASE), registry.backends()["torch_eager"], "static")
    try:
        first = r.run_one(combo, lambda rec: None)
        before = job_env.parent_env()
        libs.load("transformers")  # sets libs.ENV here, as a model case's oracle does
        monkeypatch.setenv(job_env.PROCESS_LOCAL[0], "140737488355328")
        assert all(k in os.environ for k in libs.ENV)
        assert job_env.parent_env() == before
        second = r.run_one(combo, lambda rec: None)
        assert len(forkserver._ZYGOTES) == 1, "a second zygote started for the same jobs"
    finally:
        forkserver.close_all()
    assert {rec["status"] for rec in first + second} == {"pass"}


def test_an_undeclared_import_after_startup_is_named_and_a_declared_one_is_not(fake_backends, tmp_path, monkeypatch):
    combos = [runner.Combo(cases.get(CASE), fake_backends(name), "static") for name in ("LateImporter", "DeclaredImporter")]
    records, late = _run(combos, tmp_path, {"main": set()}, monkeypatch)
    assert {r["status"] for r in records} == {"pass"}
    assert late == [
        f"{CASE}[late_importer-static]: imported torch._dynamo, torch.export._trace after its backend's startup; name them in "
        "LateImporter.preload (or .warmup), or the import is timed where the fork server did not preload it"
    ]


@pytest.mark.slow
def test_every_backend_names_what_its_jobs_import_after_startup(tmp_path, monkeypatch):
    """Every in-tree backend of the main environment (the opt-in one aside: a C++
    build a job) runs one job from a zygote that preloaded none of the optional
    modules (a backend with a warm-up step, from one that ran just its own
    ``preload``, as its runs do: the step's g++ probe is cached in the zygote's
    scratch directory only). No job imports a module of the catalogue after its
    startup, and every job ends as the gate's rules say. Without this, a backend
    whose ``preload`` missed one (stablehlo_xla's dynamo, which it imports at its
    first export) had that import timed wherever its zygote did not preload it."""
    rules = expectations.load()
    lean: list = []
    warmed: list = []
    for b in registry.backends().values():
        if b.env != "main" or b.opt_in or isinstance(b, registry.Broken):
            continue
        # a mode the gate expects to pass: a job that fails early imports less than its passing ones
        runs = [m for m in b.modes if runner.Combo(cases.get(CASE), b, m).skip_reason() is None]
        passing = [m for m in runs if not getattr(expectations.lookup(rules, CASE, b.name, m), "xfail", None)]
        if not passing:  # torch_xla_stablehlo (the report's bug); its _canon sibling shares the adapter
            continue
        mode = passing[0]
        (warmed if any(":" in e for e in b.warmup) else lean).append(runner.Combo(cases.get(CASE), b, mode))
    assert {c.backend.name for c in warmed} == {"torch_compile"}  # the only step with a function today
    records, late = _run(lean, tmp_path / "lean", {"main": set()}, monkeypatch)
    for c in warmed:
        more, more_late = _run([c], tmp_path / c.backend.name, {"main": {*c.backend.preload, *c.backend.warmup}}, monkeypatch)
        records, late = records + more, late + more_late
    assert late == []
    for c in lean + warmed:
        mine = [r for r in records if r["backend"] == c.backend.name]
        verdict = expectations.verdict(mine, expectations.lookup(rules, CASE, c.backend.name, c.mode))
        assert verdict.outcome == "pass", (c.id, verdict.problems)
