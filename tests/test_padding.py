"""Host padding (backends/padding.py): inputs padded to a bucket or bound with
their neutral pad (or a dummy index), the output sliced back; the bucket
policy the gate's ``new_bucket``/``n_buckets`` read for such backends."""

import numpy as np
import pytest

import cases
from backends.base import Backend, BoundError, Program, Unsupported
from backends.padding import Padded, PadPlan, host_padding
from cases.model import Case, Input, bounded, static, unbounded
from engines.sizes import buckets
from harness import expectations as ex
from harness import results


def _scatter_oracle(x, idx, w):
    out = np.zeros_like(x)
    np.add.at(out, idx, w[:, None])
    return out


#: scatter-add of per-edge weights onto nodes: idx pads with the dummy node
SCATTER = Case(
    name="scatter_pad",
    tags=(),
    dims=(unbounded("n", min=2), bounded("e", max=40, min=2), static("f", 3)),
    inputs=(
        Input("x", ("n", "f")),
        Input("idx", ("e",), dtype="int64", gen="index", high="n", pad="dummy"),
        Input("w", ("e",), pad=7.0),
    ),
    sweep=({"n": 16, "e": 33}, {"n": 5, "e": 40}),
    oracle=_scatter_oracle,
    out_shape=("n", "f"),
    quick=(0, 1),
    torch_fn=lambda: None,
)

#: an output-size expression: every row twice (np.repeat keeps the real rows a prefix; a cat would not)
DOUBLE = Case(
    name="double_pad",
    tags=(),
    dims=(unbounded("b", min=1), static("k", 2)),
    inputs=(Input("x", ("b", "k")),),
    sweep=({"b": 3},),
    oracle=lambda x: np.repeat(x, 2, axis=0),
    out_shape=("2*b", "k"),
    quick=(0,),
    torch_fn=lambda: None,
)


def test_policy_buckets_cap_at_the_bound_and_make_room_for_the_dummy():
    assert buckets.dummy_dims(SCATTER) == {"n"}
    # n: a dummy index points at slot n, so 16 needs 17 slots: bucket 32; e: 33 -> 64, capped at its bound 40
    assert buckets.case_buckets(SCATTER, {"n": 16, "e": 33}) == {"n": 32, "e": 40}
    assert buckets.case_buckets(SCATTER, {"n": 15, "e": 3}) == {"n": 16, "e": 16}
    assert buckets.padded_size(40, bound=40, room=1) == 41  # a dummy slot past a full bound
    assert buckets.padded_size(50, bound=40) == 64  # above the bound (bucketed dims are unbounded): no cap


def test_pad_fills_neutral_values_and_dummy_indices_past_the_real_size():
    plan = PadPlan(SCATTER, "bucketed")
    x, idx, w = SCATTER.make_inputs({"n": 5, "e": 20}, seed=0)
    (px, pidx, pw), sizes, target = plan.pad([x, idx, w])
    assert sizes == {"n": 5, "e": 20} and target == {"n": 16, "e": 32}
    assert px.shape == (16, 3) and (px[5:] == 0).all() and (px[:5] == x).all()
    assert pidx.dtype == np.int64 and (pidx[20:] == 5).all() and (pidx[:20] == idx).all()  # the dummy node: n
    assert (pw[20:] == 7.0).all()
    # the padded program's rows past n (the dummy's included) are sliced off: the oracle's answer
    padded_out = _scatter_oracle(px.astype(np.float64), pidx, pw.astype(np.float64))
    np.testing.assert_allclose(padded_out[:5], SCATTER.expected([x, idx, w]))


def test_bounded_pads_to_the_bound_with_room_and_refuses_past_it():
    plan = PadPlan(SCATTER, "bounded")
    with pytest.raises(ValueError, match="dim 'n' has no bound to pad to"):  # n is unbounded
        plan.target({"n": 5, "e": 9})
    case = cases.get("expand_over_batch_bounded")
    plan = PadPlan(case, "bounded")
    assert plan.target({"b": 3}) == {"b": 64}
    with pytest.raises(BoundError, match="dim 'b' = 65 exceeds its bound 64"):
        plan.target({"b": 65})


def test_inputs_that_disagree_on_a_dim_are_named():
    plan = PadPlan(SCATTER, "bucketed")
    x, idx, w = SCATTER.make_inputs({"n": 5, "e": 20}, seed=0)
    with pytest.raises(ValueError, match=r"input 'w' dim 'e' \(axis 0\) is 19, but an earlier input has 'e' = 20"):
        plan.pad([x, idx, w[:19]])


class _Numpy(Backend):
    """A per-shape 'compiler' on NumPy: one compile per new input shape."""

    name = "numpy_static"
    forms = ("torch",)
    modes = ("static",)

    def prepare(self, case, mode):
        seen = set()

        def call(*arrays):
            key = tuple(a.shape for a in arrays)
            if key not in seen:
                seen.add(key)
                program.count("compile", reason=f"new shapes {key}")
            return case.oracle(*arrays)

        program = Program(self, case, mode, call)
        return program


NumpyPadded = host_padding("bucketed")(_Numpy)


def _run(b, case, sweep):
    program = b.prepare(case, "bucketed")
    deltas, before = [], 0
    for i, s in enumerate(sweep):
        inputs = case.make_inputs(s, seed=i)
        out = program(*program.convert(inputs))
        program.sync(out)
        np.testing.assert_allclose(program.to_numpy(out), case.expected(inputs), rtol=1e-5, atol=1e-5)
        now = program.compile_stats().get("compile", 0)
        deltas.append(now - before)
        before = now
    return deltas


def test_the_static_program_runs_once_per_bucket_and_slices_expressions_back():
    b = NumpyPadded()
    assert NumpyPadded.__name__ == "_Numpy" and b.modes == ("static", "bucketed") and b.host_padded == ("bucketed",)
    twin = _with(DOUBLE, {"b": 3}, {"b": 16}, {"b": 17}, {"b": 5})
    assert _run(b, twin, twin.sweep) == [1, 0, 1, 0]  # 3, 16 -> 16; 17 -> 32; 5 -> 16
    program = b.prepare(twin, "bucketed")
    out = program(*program.convert(twin.make_inputs({"b": 3}, seed=0)))
    assert isinstance(out, Padded) and out.value.shape == (32, 2) and out.shape == (6, 2)
    sweep = [{"n": 15, "e": 3}, {"n": 16, "e": 3}, {"n": 5, "e": 39}, {"n": 9, "e": 40}]
    assert _run(b, SCATTER, sweep) == [1, 1, 1, 0]  # n 16 needs the dummy's slot: bucket 32


def _with(case, *sweep):
    import dataclasses

    return dataclasses.replace(case, sweep=tuple(sweep), quick=tuple(range(len(sweep))))


def test_an_output_of_another_shape_is_refused_naming_the_case():
    b = NumpyPadded()
    bad = _with(DOUBLE, {"b": 3})
    object.__setattr__(bad, "out_shape", ("b", "k"))  # the program doubles, out_shape says it does not
    with pytest.raises(
        ValueError,
        match=r"double_pad: the program's output on inputs padded to \{'b': 16\} has "
        r"shape \(32, 2\), but out_shape \('b', 'k'\) says \(16, 2\)",
    ):
        program = b.prepare(bad, "bucketed")
        program(*program.convert(bad.make_inputs({"b": 3}, seed=0)))


def test_a_case_that_cannot_pad_neutrally_is_unsupported_with_its_reason():
    import dataclasses

    why = "a mean over the padded axis counts the padding"
    case = dataclasses.replace(DOUBLE, bucket_unsupported=why)
    b = NumpyPadded()
    assert b.unsupported_reason(case, "bucketed") == (
        f"numpy_static pads bucketed inputs on the host, and double_pad cannot be padded neutrally: {why}"
    )
    assert b.unsupported_reason(case, "static") is None
    with pytest.raises(Unsupported, match=why):
        b.prepare(case, "bucketed")
    with pytest.raises(ValueError, match="host padding serves bucketed, bounded, not unbounded"):
        host_padding("unbounded")


def test_the_gate_counts_buckets_by_the_padding_backends_policy(monkeypatch):
    """For jax_jit (host padding) a dummy-indexed dim buckets n + 1; for our `?`
    executors (stablehlo_xla: the padder masks, no dummy) n itself."""
    get = cases.get
    monkeypatch.setattr(cases, "get", lambda name: SCATTER if name == SCATTER.name else get(name))
    sweep = [{"n": 15, "e": 3}, {"n": 16, "e": 3}, {"n": 9, "e": 4}]

    def records(backend, deltas):
        out, total = [], 0
        for i, (s, d) in enumerate(zip(sweep, deltas, strict=False)):
            total += d
            out.append(
                results.record(
                    case=SCATTER.name,
                    backend=backend,
                    mode="bucketed",
                    shape_index=i,
                    sizes=s,
                    novel=True,
                    compiles=total,
                    compile_stages={"xla": total},
                    compile_delta={"xla": d},
                    status="pass",
                )
            )
        return out

    rule = ex.Rule(per_shape="new_bucket", compiles="n_buckets")
    assert ex.bucket_flags(records("jax_jit", [1, 1, 0])) == ({0: 1, 1: 1, 2: 0}, 2)
    assert ex.verdict(records("jax_jit", [1, 1, 0]), rule).outcome == "pass"
    assert ex.verdict(records("jax_jit", [1, 0, 0]), rule).outcome == "fail"
    assert ex.bucket_flags(records("stablehlo_xla", [1, 0, 0])) == ({0: 1, 1: 0, 2: 0}, 1)
    assert ex.verdict(records("stablehlo_xla", [1, 0, 0]), rule).outcome == "pass"


def _scatter_jax():
    import jax.numpy as jnp

    def scatter(x, idx, w):
        return jnp.zeros_like(x).at[idx].add(w[:, None])

    return scatter


def test_jax_jit_pads_a_dummy_index_once_per_bucket():
    """The dummy node in a real per-shape compiler (the catalogue's bucketed
    rows, `pytest cases/ -k bucketed`, pin the others): n = 15 and 16 fall in
    different buckets (16 needs a 17th slot for the dummy), n = 9 shares 15's."""
    import dataclasses

    from backends.jax_jit import JaxJit

    case = dataclasses.replace(SCATTER, jax_fn=_scatter_jax)
    b = JaxJit()
    b.startup()
    program = b.prepare(case, "bucketed")
    deltas, before = [], 0
    for i, s in enumerate([{"n": 15, "e": 30}, {"n": 16, "e": 31}, {"n": 9, "e": 17}, {"n": 9, "e": 12}]):
        inputs = case.make_inputs(s, seed=i)
        out = program(*program.convert(inputs))
        program.sync(out)
        np.testing.assert_allclose(program.to_numpy(out), case.expected(inputs), rtol=1e-5, atol=1e-5)
        now = sum(program.compile_stats().values())
        deltas.append(now - before)
        before = now
    assert deltas == [1, 1, 0, 1]  # buckets (n, e): (16, 32), (32, 32), (16, 32) again, (16, 16)


def test_a_case_may_bring_its_own_buckets():
    import dataclasses

    from cases.model import CaseError

    own = dataclasses.replace(SCATTER, buckets={"e": (24, 36)})
    assert buckets.case_buckets(own, {"n": 5, "e": 3}) == {"n": 16, "e": 24}
    assert buckets.case_buckets(own, {"n": 5, "e": 25}) == {"n": 16, "e": 36}
    assert buckets.case_buckets(own, {"n": 5, "e": 37}) == {"n": 16, "e": 40}  # past the list: 64, capped at 40
    with pytest.raises(CaseError, match=r"field 'buckets': dim 'f' is not a dynamic dim"):
        dataclasses.replace(SCATTER, buckets={"f": (4,)})
    with pytest.raises(CaseError, match=r"dim 'e': \(36, 24\) is not an ascending list"):
        dataclasses.replace(SCATTER, buckets={"e": (36, 24)})
