"""The expectations file: formulas, rule specificity, exact checks both ways."""

import pytest

from harness import expectations as ex
from harness import results


def test_formulas():
    assert ex.evaluate("n_shapes", 7) == 7
    assert ex.evaluate("1", 7) == 1
    assert ex.evaluate("n_shapes + 1", 7) == 8
    assert ex.evaluate("min(n_shapes, 8)", 50) == 8
    with pytest.raises(ex.ExpectationError, match="bad compile-count formula 'n_shape'"):
        ex.evaluate("n_shape", 3)
    with pytest.raises(ex.ExpectationError, match="bad compile-count formula"):
        ex.evaluate("__import__('os')", 3)


def test_most_specific_rule_wins(tmp_path):
    p = tmp_path / "e.toml"
    p.write_text('[[expect]]\nbackend = "b"\ncompiles = "n_shapes"\n'
                 '[[expect]]\ncase = "c1"\nbackend = "b"\nmode = "static"\nxfail = "known bug"\n'
                 '[[expect]]\ncompiles = "0"\n')
    rules = ex.load(p)
    assert ex.lookup(rules, "c1", "b", "static").xfail == "known bug"
    assert ex.lookup(rules, "c2", "b", "static").compiles == "n_shapes"
    assert ex.lookup(rules, "c2", "other", "static").compiles == "0"


def test_rules_need_exactly_one_of_compiles_or_xfail(tmp_path):
    p = tmp_path / "e.toml"
    p.write_text('[[expect]]\nbackend = "b"\n')
    with pytest.raises(ex.ExpectationError, match="exactly one of"):
        ex.load(p)


def _records(compiles, cached_compiles=None, statuses=None):
    statuses = statuses or ["pass"] * len(compiles)
    recs = [results.record(shape_index=i, sizes={"e": i}, novel=True, compiles=c, compile_stages={"s": c},
                           status=s) for i, (c, s) in enumerate(zip(compiles, statuses))]
    for i, c in enumerate(cached_compiles or [compiles[-1]] * len(compiles)):
        recs.append(results.record(shape_index=i, sizes={"e": i}, novel=False, compiles=c, status="pass"))
    return recs


def test_exact_counts_fail_both_ways():
    rule = ex.Rule(compiles="1")
    assert ex.problems(_records([1, 1, 1]), rule) == []
    assert "compiles: got 3 over 3 novel shapes, expected 1 = 1" in ex.problems(_records([1, 2, 3]), rule)[0]
    assert "got 0" in ex.problems(_records([0, 0, 0]), rule)[0]  # better than expected fails too


def test_stage_counts_and_cached_phase_recompiles_are_caught():
    assert "stage s: got 2" in ex.problems(_records([1, 2]), ex.Rule(compiles="n_shapes", stages=(("s", "1"),)))[0]
    found = ex.problems(_records([1, 1], cached_compiles=[1, 2]), ex.Rule(compiles="1"))
    assert "cached phase compiled again" in found[0]


def test_failed_shapes_are_problems_even_for_xfail_rules():
    found = ex.problems(_records([1, 1], statuses=["pass", "error"]), ex.Rule(xfail="why"))
    assert len(found) == 1 and "shape 1" in found[0] and "error" in found[0]


def test_the_checked_in_file_loads():
    assert len(ex.load()) >= 5


def test_xfail_match_catches_a_different_failure():
    rule = ex.Rule(xfail="known", match="Unbounded dynamism")
    recs = _records([1, 1], statuses=["error", "error"])
    recs[0]["message"] = "ValueError: Unbounded dynamism is disabled for instruction"
    assert ex.unexpected_failure(recs, rule) is None
    recs[0]["message"] = "TypeError: something else"
    assert "expected a failure matching" in ex.unexpected_failure(recs, rule)
