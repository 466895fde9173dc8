"""Helpers for the harness's own tests."""

import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(autouse=True)
def _environment_restored():
    """What a test leaves in ``os.environ`` goes with it: Dask's LocalCluster sets
    ``PYTHONHASHSEED`` and others in its client's process, and every later test's
    jobs would run with them, from a fork server of their own."""
    before = dict(os.environ)
    yield
    if os.environ != before:
        os.environ.clear()
        os.environ.update(before)


@pytest.fixture
def fake_backends(monkeypatch):
    """Make tests/fixtures importable in this process and in workers."""
    import os
    import sys

    monkeypatch.syspath_prepend(str(FIXTURES))
    monkeypatch.setenv(
        "PYTHONPATH", str(FIXTURES) + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
    )
    import dynshape_fake_backends

    def make(cls_name):
        cls = getattr(dynshape_fake_backends, cls_name)
        inst = cls()
        inst.spec = f"dynshape_fake_backends:{cls_name}"
        return inst

    yield make
    sys.modules.pop("dynshape_fake_backends", None)


#: the tests ``make check`` (the edit loop's tier, ``-m "not slow"``) leaves to
#: ``make test``: modules and tests that start workers, subprocesses or
#: compilers, measured as the slowest (``--durations``); fnmatch patterns of
#: node ids relative to the repository root
SLOW = (
    "tests/xla_peers/*",
    "tests/stablehlo/test_breadth.py::*",  # XLA compiles per op: ~50 s of CPU
    "tests/op_samples/test_lazy_hlo.py::*",  # an export, a lowering and an XLA compile per lazy graph and size
    "tests/stablehlo/test_bounded.py::*",  # ~40 s
    "tests/stablehlo/test_bounded_windows.py::*",  # a whole-grid module per family: ~30 s each
    "tests/stablehlo/test_upsample.py::*",  # ~30 s a mode
    "tests/stablehlo/test_size_roundings.py::*",  # ~25 s of CPU: XLA compiles
    "tests/stablehlo/test_guarded_programs.py::*",  # ~20 s of CPU: exports and XLA compiles
    "tests/stablehlo/test_interpreter_zero_size.py::*",  # ~15 s of CPU: an interpreter worker, exports
    "tests/stablehlo/test_api.py::test_interpreter_abort_is_isolated",
    "tests/stablehlo/test_api.py::test_xla_compiles_once_bounded_per_shape_unbounded_interpreter_never",
    "tests/einx_symbolic/test_fast_paths.py::test_closure_graph_matches_generated_graph*",  # ~28 s
    "tests/lazy/test_lazy_modes.py::test_catalogue_quick_profile_all_modes",
    "tests/test_registry.py::test_out_of_tree_backend_runs_a_job",  # ~22 s
    "tests/test_check.py::test_a_broken_backend_fails_run_check_and_gate",  # starts a fork server
    "tests/test_check.py::test_the_gate_fails_a_job_with_a_hole",
    "tests/test_profiles.py::test_the_left_out_gate_collects_exactly_the_left_out_jobs",  # a pytest subprocess
    # a fork server each, ~20 s; make check's gate runs jobs the same way
    "tests/test_profiles.py::test_run_records_and_reports_what_the_profile_left_out",
    "tests/test_cli.py::test_run_exits_1_when_a_job_ends_unexpectedly",
    "tests/test_cli.py::test_run_writes_records_and_prints_the_report*",
    "tests/test_case_packs.py::*",
    "tests/test_faults.py::*",
    "tests/test_forkserver.py::*",
    "tests/test_gate_ci.py::*",
    "tests/test_html.py::*",
    "tests/test_measure.py::*",
    "tests/test_resume.py::*",
    "tests/test_setup.py::*",
    "tests/test_shards.py::*",
    "tests/test_torch_aoti.py::*",
    "tests/test_torch_lazy_ts.py::*",
    "tests/test_peers.py::*",  # an export and a system compile per job: ~30 s of CPU
    "tests/test_worker_isolation.py::*",
    "tests/test_worker_exit.py::test_a_jobs_worker_*",  # a fork server, a spawned worker
    # two to four runs of four fake jobs each (~15 s a test)
    "tests/test_incremental.py::test_unchanged_jobs_are_reused_*",
    "tests/test_incremental.py::test_a_changed_setting_reruns",
    "tests/test_incremental.py::test_records_without_a_fingerprint_are_never_reused",
    "tests/test_bench_zoo.py::test_the_goals_are_read_off_a_real_run_*",  # three zoo runs of four jobs (~15 s)
    "tests/lazy/test_lazy_models.py::*",  # ten models over four sizes
    "tests/stablehlo/test_size_classes.py::*",  # an XLA compile per size class
    "tests/test_timed_region.py::*",  # starts backends and XLA programs
    "tests/opinfo/*",  # op_db's import (~10-20 s a process) and an export + XLA compile per entry
    # an export, a lowering and an XLA (or IREE) compile per op sample: 5-30 s of CPU a module
    # (make check's junit, 2026-12-05: ~250 of its ~390 worker-seconds with the five below)
    "tests/stablehlo/test_linalg.py::*",
    "tests/stablehlo/test_special.py::*",
    "tests/stablehlo/test_special_cephes.py::*",
    "tests/stablehlo/test_single_ops.py::*",
    "tests/stablehlo/test_random.py::*",
    "tests/stablehlo/test_upsample_aa.py::*",
    "tests/stablehlo/test_iree_pooling.py::*",
    "tests/stablehlo/test_masked.py::*",
    "tests/stablehlo/test_export_programs.py::*",
    "tests/stablehlo/test_selection.py::*",
    "tests/stablehlo/test_complex.py::*",
    "tests/stablehlo/test_decompositions.py::*",
    "tests/stablehlo/test_as_strided.py::*",
    "tests/op_samples/test_lowered.py::*",
    "tests/einx_symbolic/test_differential.py::*",  # einx_symbolic beside einx on each framework (~27 s)
    "tests/einx_symbolic/test_shapes.py::*",  # Hypothesis over notations, each run on three frameworks (~18 s)
    "tests/test_torchax.py::*",  # torchax's lowering and an XLA compile per shape
    "tests/test_torch_mlir.py::*",  # torch-mlir's import and compile per program
    "tests/lazy/test_lazy_meta.py::*",  # torch's meta kernels over every registered op (~25 s)
)


#: the tests ``make test`` leaves to ``make test-extended``, which CI runs after it
#: (``.ci/run``): whole systems set up around a test (asv, a Dask cluster, a wheel
#: install) and sweeps of whole models: ~1,100 worker-seconds of the ~3,400 that kept
#: ``make test`` over its 15 minutes, then ~700 more of the ~2,300 left (the last
#: three and :data:`EXTENDED_ROWS`: a fresh clone's ``make test`` took 1,207 s with
#: them). Per-test seconds: ``DYNSHAPE_TEST_TIMES`` (conftest.py). Each is also ``slow``.
EXTENDED = (
    "tests/test_asv_publish.py::*",  # asv run + publish + Chromium (~5 min)
    "tests/test_dask_cluster.py::*",  # a real scheduler and two workers (~4.5 min)
    "tests/test_zoo_dask.py::*",  # eight zoo jobs locally and on a two-worker LocalCluster (~2.5 min)
    "tests/test_wheel.py::*",  # builds and installs the wheel, runs a job (~1.5 min)
    "tests/test_incremental.py::test_an_incomplete_job_is_not_reused",  # a LocalCluster, two probes (~2.5 min)
    "tests/test_zoo_cluster.py::test_a_two_worker_cluster_probes_as_the_local_probe",
    "tests/test_models.py::*",  # the model cases against their float64 oracles (~2.5 min)
    "tests/stablehlo/test_models.py::*",  # four bounded model sweeps (40-100 s each)
    "tests/einx_symbolic/test_grammar.py::*",  # einx 0.4.3 side by side, in processes of its own
    "tests/test_preload.py::*",  # a fork server per backend, each job's imports listed (~45 s)
    "tests/test_asv_suite.py::*",  # asv's discovery and each benchmark module in a process (~55 s)
    "tests/test_backends.py::test_torch_compile_inductor_static_one_graph_per_shape_with_dynamo_reasons",  # gcc
    "tests/test_iree_causes.py::*",  # pins of IREE's own wrong results, IREE compiles (~25 s)
)

#: the conformance gate's rows (``cases/test_conformance.py``'s jobs, by backend) that
#: ``make test`` leaves to the extended tier with :data:`EXTENDED`: peers whose row
#: repeats a path the kept rows gate (lazy → StableHLO is the lazy and StableHLO rows
#: composed; the interpreter, torch-mlir and the canonicalised torch_xla export
#: re-run the StableHLO row's programs; jax.export is jax.jit's programs exported)
#: and torch.compile's, whose inductor builds cost ~2 s a job. ~570 worker-seconds
#: of the gate's ~1,070 (fresh clone of 0a648dc, junit). ``pytest cases/`` alone
#: (tests/conftest.py unread) and ``make test-extended`` run them.
EXTENDED_ROWS = (
    "lazy_stablehlo",
    "jax_export",
    "torch_mlir_stablehlo",
    "stablehlo_interp",
    "torch_xla_stablehlo_canon",
    "torch_compile",
)
GATE = "cases/test_conformance.py::test_conformance["


def extended(item) -> bool:
    """Whether ``make test`` leaves ``item`` to ``make test-extended``."""
    import fnmatch

    if item.nodeid.startswith(GATE):
        return any(item.get_closest_marker(b) for b in EXTENDED_ROWS)
    return any(fnmatch.fnmatchcase(item.nodeid, p) for p in EXTENDED)


def pytest_collection_modifyitems(config, items):
    """Mark the :data:`SLOW` tests ``slow``, the :func:`extended` ones ``extended`` (and slow)."""
    import fnmatch

    for item in items:
        if extended(item):
            item.add_marker(pytest.mark.extended)
            item.add_marker(pytest.mark.slow)
        elif any(fnmatch.fnmatchcase(item.nodeid, p) for p in SLOW):
            item.add_marker(pytest.mark.slow)
