"""Repository-wide pytest setup: the Hypothesis profiles.

``ci`` (the default, so ``make test``): 200 examples per property, the same
examples on every run (``derandomize``), no deadline (the first call of an
op builds its graph; a run on a loaded machine must not fail on time).
``dev``: the same at 12 examples, for quick iterations::

    HYPOTHESIS_PROFILE=dev .venv/bin/python -m pytest tests/einx_symbolic

Tests take ``max_examples`` and the rest from the loaded profile; a test that
needs another setting overrides only that one (``@settings(...)`` inherits
the profile's other values).
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    derandomize=True,
    # sizes are drawn small, but descriptions with many axes can need many draws
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", settings.get_profile("ci"), max_examples=12)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_addoption(parser):
    parser.addoption(
        "--dynshape-out",
        default="results",
        metavar="DIR",
        help="where the conformance gate (cases/) keeps its records: DIR/gate-<id>.jsonl, one run "
        "that `harness report`/`compare` read (default: results/; 'none' keeps nothing)",
    )


def pytest_configure(config):
    """Register the gate's markers: one per backend, one per environment."""
    from backends import envs
    from harness import registry

    for name in registry.backends():
        config.addinivalue_line("markers", f"{name}: gate items of the {name} backend")
    for env in (e for e, spec in envs.ENVS.items() if "system" not in spec):  # a release's env is no backend's
        config.addinivalue_line("markers", f"{env}: gate items whose backend runs (or starts helpers) in the {env} env")


def pytest_runtest_logreport(report):
    """With ``DYNSHAPE_TEST_TIMES=FILE``, each test's seconds (setup + call + teardown)
    appended to FILE as it ends, from every xdist worker: what the test tiers
    (tests/conftest.py) are drawn from, kept when a run is cut short."""
    path = os.environ.get("DYNSHAPE_TEST_TIMES")
    if not path or getattr(report, "node", None) is not None:  # (xdist's controller: its worker wrote it)
        return
    times = _TEST_TIMES.setdefault(report.nodeid, [])
    times.append(report.duration)
    if report.when == "teardown":
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{sum(_TEST_TIMES.pop(report.nodeid)):.3f}\t{report.nodeid}\n")


_TEST_TIMES: dict[str, list[float]] = {}
