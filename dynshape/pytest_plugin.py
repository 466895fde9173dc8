"""The ``dynshape`` pytest plugin (entry point ``pytest11``): compile counts and
oracle equality of your own programs, asserted in your own test suite.

    import dynshape

    DOUBLE = dynshape.case(lambda x: x * 2 + 1, name="double", inputs={"x": ("n",)}, sweep={"n": [3, 5, 8]})

    def test_one_graph_for_every_length(dynshape_expect):
        dynshape_expect(DOUBLE, backends="torch_export,lazy", modes="unbounded", per_shape="first")

``dynshape_expect(case, backends, modes, per_shape=..., compiles=..., at_most=..., once=...)``
runs the case in worker processes (:func:`dynshape.run`) and judges each job
with the conformance gate's judgement (:func:`harness.expectations.verdict`)
and its rule grammar: ``per_shape`` a formula over ``i``, ``first``,
``n_shapes``, ``new_bucket`` (``"first"``: one compile on the first shape,
``"1"``: one per shape), ``compiles`` one for the job's total; ``at_most`` caps
the total; ``once=True`` asks that each job compiled once, as the leaderboard and the
zoo table count it (:func:`harness.sweep.compiled_once`). Every output must equal the oracle. A failure names the backend,
the mode, the shape and the reason the system gave for its compile.
"""

from __future__ import annotations

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "dynshape: a test that runs dynshape jobs in worker processes")


@pytest.fixture
def dynshape_expect(tmp_path):
    """``expect(case, backends, modes=None, per_shape=None, compiles=None, at_most=None, profile="full")``:
    run and assert; returns the per-shape frame of :func:`dynshape.run`."""

    def expect(case, backends, modes=None, per_shape=None, compiles=None, at_most=None, profile="full", once=None):
        failures = judge(case, backends, modes, per_shape, compiles, at_most, profile, tmp_path, once)
        if failures:
            pytest.fail("\n".join(failures), pytrace=False)

    return expect


def judge(case, backends, modes, per_shape, compiles, at_most, profile, out, once=None) -> list[str]:
    """The failures of each job of ``case`` on ``backends`` × ``modes`` against the rule, one line each."""
    from harness import expectations, results, sweep

    from ._run import run

    for formula in (per_shape, compiles):
        if formula is not None:
            expectations.evaluate_shape(formula, 0, 3) if formula is per_shape else expectations.evaluate(formula, 3)
    frame = run(case, backends=backends, modes=modes, profile=profile, out=out, progress=False)
    jobs: dict[tuple[str, str], list[dict]] = {}
    for rec in results.read_records(frame.attrs["records"]):
        jobs.setdefault((rec["backend"], rec["mode"]), []).append(rec)
    failures = []
    for (backend, mode), recs in sorted(jobs.items()):
        where = f"{case.name} on {backend} ({mode})"
        if all(r.get("status") in ("skipped", "unsupported") for r in recs):
            failures.append(f"{where}: did not run: {recs[0].get('status')}: {recs[0].get('message')}")
            continue
        rule = expectations.Rule(case=case.name, backend=backend, mode=mode, per_shape=per_shape, compiles=compiles)
        verdict = expectations.verdict(recs, rule, ci=False)
        failures += [f"{where}: {p}{_reason(p, recs)}" for p in verdict.problems]
        if once is not None and sweep.compiled_once(recs) != once:
            failures.append(f"{where}: {'did not compile' if once else 'compiled'} once{_reason('', recs, first_over=True)}")
        novel = [r for r in recs if r.get("novel") is True and not r.get("process")]
        if at_most is not None and novel and (novel[-1].get("compiles") or 0) > at_most:
            last = novel[-1]
            failures.append(
                f"{where}: {last['compiles']} compiles over {len(novel)} shapes, at most {at_most} allowed"
                f"{_reason('', recs, first_over=True)}"
            )
    return failures


def _reason(problem, recs: list[dict], first_over: bool = False) -> str:
    """``; reason: …``: what the system said when it compiled the shape the problem names
    (``first_over``: the first shape after the first that compiled)."""
    novel = [r for r in recs if r.get("novel") is True and not r.get("process")]
    if first_over:
        hit = [r for r in novel if r.get("shape_index") and r.get("compile_reasons")]
    else:
        at = getattr(problem, "shape_index", None)  # an expectations.Problem names its shape
        hit = [r for r in novel if at is not None and r.get("shape_index") == at]
    why = hit[0].get("compile_reasons") if hit else None
    return f"; reason: {'; '.join(map(str, why))}" if why else ""
