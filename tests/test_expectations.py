"""The expectations file: formulas, rule specificity, exact checks both ways,
shape by shape, and strict expected failures."""

import pytest

from harness import expectations as ex
from harness import results


def test_formulas():
    assert ex.evaluate("n_shapes", 7) == 7
    assert ex.evaluate("1", 7) == 1
    assert ex.evaluate("n_shapes + 1", 7) == 8
    assert ex.evaluate("min(n_shapes, 8)", 50) == 8
    assert [ex.evaluate_shape("first", i, 3) for i in range(3)] == [1, 0, 0]
    assert [ex.evaluate_shape("first + 1", i, 3) for i in range(3)] == [2, 1, 1]
    assert [ex.evaluate_shape("i // 2", i, 5) for i in range(5)] == [0, 0, 1, 1, 2]
    with pytest.raises(ex.ExpectationError, match="bad compile-count formula 'n_shape'"):
        ex.evaluate("n_shape", 3)
    with pytest.raises(ex.ExpectationError, match="bad compile-count formula"):
        ex.evaluate("__import__('os')", 3)
    with pytest.raises(ex.ExpectationError, match="bad compile-count formula 'first'"):
        ex.evaluate("first", 3)  # a job total has no first shape


def _load(tmp_path, text):
    p = tmp_path / "e.toml"
    p.write_text(text)
    return ex.load(p, known=False)  # rules over made-up names


def test_most_specific_rule_wins(tmp_path):
    rules = _load(
        tmp_path,
        '[[expect]]\nbackend = "b"\nper_shape = "1"\n'
        '[[expect]]\ncase = "c1"\nbackend = "b"\nmode = "static"\nxfail = "known bug"\n'
        'match = "boom"\nper_shape = "0"\n'
        '[[expect]]\ncompiles = "0"\n',
    )
    assert ex.lookup(rules, "c1", "b", "static").xfail == "known bug"
    assert ex.lookup(rules, "c2", "b", "static").per_shape == "1"
    assert ex.lookup(rules, "c2", "other", "static").compiles == "0"


def test_the_finder_picks_the_rule_lookup_picks(tmp_path):
    """:class:`expectations.Finder` (rules indexed by exact case and backend) gives the
    rule :func:`expectations.lookup` (a scan of every rule) gives: globs in each field,
    a pack's scope, the most specific winning and the later among equals."""
    rules = _load(
        tmp_path,
        '[[expect]]\nper_shape = "0"\n'
        '[[expect]]\nbackend = "b*"\nper_shape = "1"\n'
        '[[expect]]\ncase = "c[12]"\nmode = "static"\nper_shape = "2"\n'
        '[[expect]]\ncase = "c1"\nper_shape = "3"\n'
        '[[expect]]\ncase = "c1"\nbackend = "b1"\nmode = "s*"\nper_shape = "4"\n'
        '[[expect]]\ncase = "c1"\nbackend = "b1"\nmode = "s*"\nper_shape = "5"\n'
        '[[expect]]\ncase = "c?"\nbackend = "b2"\nmode = "unbounded"\nper_shape = "6"\n'
        '[[expect]]\nbackend = "b2"\nper_shape = "7"\n',
    )
    rules.append(ex.Rule(case="c3", backend="b2", per_shape="8", index=len(rules), scope=frozenset({"c3"})))
    rules.append(ex.Rule(case="c*", backend="b3", per_shape="9", index=len(rules), scope=frozenset({"c2"})))
    find = ex.Finder(rules)
    jobs = [(c, b, m) for c in ("c1", "c2", "c3", "d") for b in ("b1", "b2", "b3", "x") for m in ("static", "unbounded")]
    got = {j: find(*j) for j in jobs}
    assert got == {j: ex.lookup(rules, *j) for j in jobs}
    assert {r.per_shape for r in got.values()} == set("0123456789") - {"4"}  # "5": the later of two equals
    assert ex.Finder([])("c1", "b1", "static") is None


def test_the_finder_agrees_with_lookup_on_the_projects_rules():
    rules = ex.load()
    names = ex._known()
    named = {r.case for r in rules if not any(ch in r.case for ch in "*?[")}
    some = sorted(named | set(names["case"][::25]))  # every case a rule names, and a spread of the others
    jobs = [(c, b, m) for c in some for b in names["backend"] for m in names["mode"]]
    find = ex.Finder(rules)
    assert [find(*j) for j in jobs] == [ex.lookup(rules, *j) for j in jobs]


GOOD = '[[expect]]\nbackend = "torch_eager"\nper_shape = "0"\n'


@pytest.mark.parametrize(
    "text, message",
    [
        (
            '[[expect]]\nbackend = "torch_eager"\n',
            "key 'per_shape': missing: the rule states no compile count (give 'per_shape' or 'compiles')",
        ),
        (
            '[[expect]]\nxfail = "why"\nper_shape = "0"\n',
            "key 'xfail': needs 'match': 'xfail' (why the job fails) and "
            "'match' (a regex every failure of the job must fit) go together",
        ),
        (
            '[[expect]]\nmatch = "x"\nper_shape = "0"\n',
            "key 'match': needs 'xfail': 'xfail' (why the job fails) and "
            "'match' (a regex every failure of the job must fit) go together",
        ),
        (
            '[[expect]]\nper_shape = "1"\nxfail = "why"\nmatch = "(unclosed"\n',
            "key 'match': bad regex '(unclosed': missing ), unterminated subpattern at position 0",
        ),
        (
            '[[expect]]\nper_shape = "1"\ncolour = "red"\n',
            "key 'colour': unknown key; valid: backend, case, compiles, "
            "env_optional, match, mode, per_shape, shape_stages, stages, xfail",
        ),
        ('[[expect]]\nper_shape = "1"\nstages = { a = "1" }\n', "key 'stages': 'stages' goes with 'compiles'"),
        ('[[expect]]\nper_shape = "bogus"\n', "key 'per_shape': bad compile-count formula 'bogus': "),
        ('[[expect]]\nper_shape = "1 +"\n', "key 'per_shape': bad compile-count formula '1 +': "),
        (
            '[[expect]]\ncompiles = "1"\nstages = { xla = "n_shapes *" }\n',
            "key 'stages.xla': bad compile-count formula 'n_shapes *': ",
        ),
        ('[[expect]]\nper_shape = "1"\nbackend = "tpu*"\n', "key 'backend': 'tpu*' matches no backend; valid: einx, "),
        (
            '[[expect]]\nper_shape = "1"\ncase = "gnn_edge_divid"\n',
            "key 'case': 'gnn_edge_divid' matches no case; valid: gnn_edge_divide, ",
        ),
        (
            '[[expect]]\nper_shape = "1"\nmode = "dynamic"\n',
            "key 'mode': 'dynamic' matches no mode; valid: static, bounded, unbounded",
        ),
        ("[[expect]]\nper_shape = true\n", "key 'per_shape': True is a bool, expected a formula"),
        ('[[expect]]\nper_shape = "1"\ncase = ["a"]\n', "key 'case': ['a'] is a list, expected a string"),
    ],
)
def test_bad_rules_are_refused_naming_file_rule_and_key(tmp_path, text, message):
    p = tmp_path / "e.toml"
    p.write_text(GOOD + text)
    with pytest.raises(ex.ExpectationError) as e:
        ex.load(p)
    assert str(e.value).startswith(f"{p}: rule #2, {message}"), str(e.value)


def test_a_file_that_is_not_toml_is_refused_naming_it(tmp_path):
    p = tmp_path / "e.toml"
    p.write_text("[[expect]\nper_shape = 1\n")
    with pytest.raises(ex.ExpectationError) as e:
        ex.load(p)
    assert str(e.value).startswith(f"{p}: not valid TOML: ")


def test_the_projects_file_loads_with_every_glob_matching():
    assert len(ex.load()) == sum(1 for line in ex.DEFAULT.read_text().splitlines() if line == "[[expect]]")


def _records(deltas, cached_deltas=None, statuses=None, messages=None):
    """Records of a job whose novel shape i compiled ``deltas[i]`` times (stage s)."""
    statuses = statuses or ["pass"] * len(deltas)
    messages = messages or [None] * len(deltas)
    recs, total = [], 0
    for i, (d, s, m) in enumerate(zip(deltas, statuses, messages, strict=False)):
        total += d
        recs.append(
            results.record(
                shape_index=i,
                sizes={"e": i},
                novel=True,
                compiles=total,
                compile_stages={"s": total},
                compile_delta={"s": d},
                status=s,
                message=m,
            )
        )
    for i, d in enumerate(cached_deltas or [0] * len(deltas)):
        total += d
        recs.append(
            results.record(
                shape_index=i,
                sizes={"e": i},
                novel=False,
                compiles=total,
                compile_delta={"s": d},
                status="recompiled" if d else "pass",
            )
        )
    return recs


def test_per_shape_counts_fail_shape_by_shape_even_when_the_total_fits():
    rule = ex.Rule(per_shape="1")
    assert ex.verdict(_records([1, 1, 1]), rule).outcome == "pass"
    v = ex.verdict(_records([2, 1, 0]), rule)  # 3 compiles over 3 shapes, but not one each
    assert v.outcome == "fail"
    assert len(v.problems) == 2
    assert v.problems[0].startswith("shape 0 {'e': 0}: 2 compile(s) (s=2), expected 1 = 1")
    assert v.problems[1].startswith("shape 2 {'e': 2}: 0 compile(s) (none), expected 1 = 1")
    # the old job-total rule cannot see it
    assert ex.verdict(_records([2, 1, 0]), ex.Rule(compiles="n_shapes")).outcome == "pass"


def test_exact_counts_fail_both_ways():
    rule = ex.Rule(per_shape="first")
    assert ex.verdict(_records([1, 0, 0]), rule).outcome == "pass"
    assert ex.verdict(_records([0, 0, 0]), rule).problems[0].startswith("shape 0 {'e': 0}: 0 compile(s)")
    total = ex.Rule(compiles="1")
    assert "compiles: got 3 over 3 novel shapes, expected 1 = 1" in ex.verdict(_records([1, 1, 1]), total).problems[0]
    assert "got 0" in ex.verdict(_records([0, 0, 0]), total).problems[0]  # better than expected fails too


def test_stage_counts_per_shape_and_in_total():
    v = ex.verdict(_records([1, 1]), ex.Rule(per_shape="1", shape_stages=(("s", "first"),)))
    assert v.problems == ["shape 1 {'e': 1}: stage s: 1, expected first = 0"]
    v = ex.verdict(_records([1, 1]), ex.Rule(compiles="n_shapes", stages=(("s", "1"),)))
    assert v.problems == ["stage s: got 2, expected 1 = 1"]


def test_a_compile_in_the_cached_phase_fails_the_job():
    v = ex.verdict(_records([1, 1], cached_deltas=[0, 1]), ex.Rule(per_shape="1"))
    assert v.outcome == "fail" and v.problems == ["shape 1 {'e': 1} (cached): recompiled: None"]


def test_xfail_needs_every_failure_to_match():
    rule = ex.Rule(per_shape="1", xfail="known", match="Unbounded dynamism")
    msg = "ValueError: Unbounded dynamism is disabled for instruction"
    assert ex.verdict(_records([1, 1], statuses=["error", "error"], messages=[msg, msg]), rule).outcome == "xfail"
    # one matching failure no longer excuses another
    v = ex.verdict(_records([1, 1], statuses=["error", "error"], messages=[msg, "TypeError: else"]), rule)
    assert v.outcome == "fail"
    assert v.problems == [
        "failed otherwise than expected (match 'Unbounded dynamism'): shape 1 {'e': 1} (novel): error: TypeError: else"
    ]


def test_xfail_jobs_still_have_their_counts_checked():
    rule = ex.Rule(per_shape="1", xfail="known", match="boom")
    v = ex.verdict(_records([1, 2], statuses=["error", "error"], messages=["boom", "boom"]), rule)
    assert v.outcome == "fail" and v.problems[0].startswith("shape 1 {'e': 1}: 2 compile(s)")


def test_xfail_that_passes_is_reported():
    v = ex.verdict(_records([1, 1]), ex.Rule(per_shape="1", xfail="known", match="boom"))
    assert v.outcome == "xpass" and not v.ok


def test_no_rule_and_idle_jobs():
    assert ex.verdict(_records([1]), None).outcome == "norule"
    idle = [results.record(status="unsupported", message="no such mode")]
    assert ex.verdict(idle, None).outcome == "idle" and ex.verdict(idle, None).ok


def test_the_checked_in_file_loads_and_states_counts_per_shape():
    rules = ex.load()
    assert len(rules) >= 20
    assert all(r.per_shape is not None for r in rules)
    assert all(r.match for r in rules if r.xfail)


def _bucket_records(sizes, deltas):
    recs, total = [], 0
    for i, (e, d) in enumerate(zip(sizes, deltas, strict=False)):
        total += d
        recs.append(
            results.record(
                shape_index=i,
                sizes={"e": e},
                novel=True,
                compiles=total,
                compile_stages={"s": total},
                compile_delta={"s": d},
                status="pass",
            )
        )
    return recs


def test_new_bucket_and_n_buckets_follow_the_sizes():
    """E = 1000..1049: buckets 1024 (shapes 0-24) and 2048 (from shape 25)."""
    sizes = list(range(1000, 1050))
    flags, n = ex.bucket_flags(_bucket_records(sizes, [0] * 50))
    assert n == 2 and [i for i, f in flags.items() if f] == [0, 25]
    per_bucket = ex.Rule(per_shape="new_bucket", compiles="n_buckets")
    good = _bucket_records(sizes, [int(i in (0, 25)) for i in range(50)])
    assert ex.verdict(good, per_bucket).outcome == "pass"
    late = _bucket_records(sizes, [int(i in (0, 26)) for i in range(50)])  # right total, wrong shapes
    v = ex.verdict(late, per_bucket)
    assert v.outcome == "fail" and any("shape 25" in p for p in v.problems) and any("shape 26" in p for p in v.problems)
    assert ex.verdict(_bucket_records(sizes, [1] * 50), per_bucket).outcome == "fail"
    assert ex.evaluate("n_buckets + 1", 50, 2) == 3 and ex.evaluate_shape("first + new_bucket", 3, 50, 0, 2) == 0


def test_a_job_refused_at_run_time_fails_as_its_xfail_rule_says():
    """torch.export's constraint violations surface as an ``unsupported``
    record once the job runs: an xfail rule whose match fits judges it xfail;
    a rule that expects a pass fails it (an adapter turning its errors into
    ``Unsupported`` must not pass); no rule is ``norule``."""
    refused = [
        results.record(
            status="unsupported",
            compiles=0,
            versions={"torch": "2"},
            message="torch.export could not keep x's dims dynamic: Constraints violated (t)!",
        )
    ]
    rule = ex.Rule(per_shape="0", xfail="export refuses t // 2", match=r"Constraints violated \(t\)")
    assert ex.verdict(refused, rule).outcome == "xfail"
    other = ex.Rule(per_shape="0", xfail="something else", match="HLO verifier")
    v = ex.verdict(refused, other)
    assert v.outcome == "fail" and not v.ok
    assert v.problems == [
        "expected a pass, but the backend refused the job: job unsupported: torch.export could "
        "not keep x's dims dynamic: Constraints violated (t)!"
    ]
    assert ex.verdict(refused, ex.Rule(per_shape="0")).outcome == "fail"
    assert ex.verdict(refused, None).outcome == "norule"


@pytest.mark.parametrize(
    "message,ci,optional,outcome",
    [
        ("torch_xla_lazy: environment 'xla' not found at /x", False, None, "idle"),
        ("torch_xla_lazy: environment 'xla' not found at /x", True, None, "missing"),
        ("torch_xla_lazy: environment 'xla' not found at /x", True, "a laptop has no TPU", "idle"),
        ("left out of the quick profile (why); `harness run --whole-matrix` runs it", True, None, "idle"),
        ("torch_aoti is opt-in (slow): name it with --backends", True, None, "idle"),
    ],
)
def test_jobs_not_run_by_choice_or_for_want_of_their_environment(message, ci, optional, outcome):
    """Skipped without a worker: by choice (left out, opt-in) is fine anywhere;
    for want of an environment fails in CI unless the rule says ``env_optional``.
    A job the backend does not offer (``unsupported`` without a worker) is fine."""
    skipped = [results.record(status="skipped", message=message)]
    v = ex.verdict(skipped, ex.Rule(per_shape="0", env_optional=optional), ci=ci)
    assert v.outcome == outcome and v.ok == (outcome == "idle")
    if outcome == "missing":
        assert v.problems[0].startswith("not run in CI: torch_xla_lazy: environment 'xla' not found")
        assert v.note.startswith("missing: not run in CI")
    offered = [results.record(status="unsupported", message="the case has no bounded mode")]
    assert ex.verdict(offered, ex.Rule(per_shape="0"), ci=ci).outcome == "idle"


def test_env_optional_is_a_rule_key(tmp_path):
    p = tmp_path / "e.toml"
    p.write_text('[[expect]]\nper_shape = "0"\nenv_optional = "no TPU here"\n')
    assert ex.load(p, known=False)[0].env_optional == "no TPU here"
    p.write_text('[[expect]]\nper_shape = "0"\nenv_optional = true\n')
    with pytest.raises(ex.ExpectationError, match="key 'env_optional': True is a bool, expected a string"):
        ex.load(p, known=False)
