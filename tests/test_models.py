"""The model cases (cases/models_*.py): seeded builds, the float64 eager oracle,
the einx forms, and what happens when a model library is missing."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import cases
from cases import libs, models_base, models_graph, models_text, models_vision
from cases.model import Case
from harness import cli, oracle, registry, runner

MODEL_CASES = models_text.CASES + models_vision.CASES + models_graph.CASES
NEEDED = sorted({n for c in MODEL_CASES for n in c.libraries})
pytestmark = pytest.mark.skipif(bool(libs.missing(*NEEDED)), reason=f"model libraries missing: {libs.missing(*NEEDED)}")
torch = pytest.importorskip("torch")


def _ids(cs):
    return [c.name for c in cs]


def test_the_catalogue_lists_every_model_case():
    names = {c.name for c in cases.catalogue()}
    assert {c.name for c in MODEL_CASES} <= names
    fams = cases.families()
    assert {fams[c.name] for c in MODEL_CASES} == {"models_text", "models_vision", "models_graph"}
    assert all(c.description.endswith(models_base.ORACLE) for c in MODEL_CASES)  # the oracle, named


@pytest.mark.parametrize("case", MODEL_CASES, ids=_ids(MODEL_CASES))
def test_torch_form_matches_the_float64_oracle_on_the_sweep(case):
    """The float32 model, eager, is within the case's tolerance of its float64 copy
    on every shape of the sweep, with the oracle's shape and dtype (Case.check_oracle
    runs the oracle, which the catalogue's check of a model case skips)."""
    Case.check_oracle(case)
    program, tol = case.torch_fn(), case.tol()
    assert tol.atol <= 3e-5 and tol.rtol == 0.0  # 10x the measured float32 error, not a loosened default
    for i, sizes in enumerate(case.sweep):
        inputs = case.make_inputs(sizes, seed=i)
        expected = case.expected(inputs)
        got = program(*(torch.from_numpy(a) for a in inputs)).numpy()
        v = oracle.compare(got, expected, case.out_dtype, tol.rtol, tol.atol)
        assert v.ok, f"{case.name} shape {sizes}: {v.message}"
        assert v.max_abs_err > 0  # float32 against float64: a zero error would mean the oracle ran in float32


def test_the_oracle_fails_a_model_with_other_weights():
    """A different seed gives a different model, which the oracle rejects: the
    tolerance is far below what a wrong model produces."""
    case = models_text.model_gpt2
    inputs = case.make_inputs(case.sweep[0], seed=0)
    expected = case.expected(inputs)
    other = models_base.SEED + 1
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(models_base, "SEED", other)
        model = models_text.gpt2()
    got = model(input_ids=torch.from_numpy(inputs[0])).logits.numpy()
    tol = case.tol()
    assert not oracle.compare(got, expected, case.out_dtype, tol.rtol, tol.atol).ok


def test_builds_are_seeded_and_leave_the_callers_rng_alone():
    torch.manual_seed(123)
    before = torch.rand(3)
    torch.manual_seed(123)
    a, b = models_graph.gcn(), models_graph.gcn()
    assert torch.equal(torch.rand(3), before)  # the build drew from a forked RNG
    for (name, p), q in zip(a.named_parameters(), b.parameters(), strict=False):
        assert torch.equal(p, q), name
        assert not p.requires_grad
    assert not a.training
    f64 = models_graph.GCN.float64()
    for p, q in zip(models_graph.GCN.float32().parameters(), f64.parameters(), strict=False):
        assert q.dtype == torch.float64 and torch.equal(p.double(), q)


def test_resnet18_builder_takes_fewer_blocks_per_stage():
    """``resnet18(layers=...)`` (the StableHLO model tests' small ResNet): that many
    BasicBlocks per stage, seeded; the default is torchvision's resnet18 itself."""
    small, full = models_vision.resnet18(layers=(1, 1, 1, 1)), models_vision.resnet18()
    assert [len(getattr(small, f"layer{i}")) for i in range(1, 5)] == [1, 1, 1, 1]
    assert [len(getattr(full, f"layer{i}")) for i in range(1, 5)] == [2, 2, 2, 2]
    again = models_vision.resnet18(layers=(1, 1, 1, 1))
    assert all(torch.equal(p, q) for p, q in zip(small.parameters(), again.parameters(), strict=True))
    assert not small.training and small.fc.out_features == models_vision.CLASSES


def _weights_digest(build) -> str:
    import hashlib

    h = hashlib.sha256()
    for name, p in sorted(build().state_dict().items()):
        h.update(name.encode())
        h.update(p.detach().cpu().numpy().tobytes())
    return h.hexdigest()


def test_weights_are_identical_in_another_process():
    """Each worker builds its own model: the seeded weights must not depend on
    what the process did before (here: this test session, against a fresh one)."""
    code = (
        "import sys; sys.path.insert(0, '.'); from tests.test_models import _weights_digest; "
        "from cases import models_graph; print(_weights_digest(models_graph.sage))"
    )
    torch.rand(5)  # this process's RNG is elsewhere
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip().splitlines()[-1] == _weights_digest(models_graph.sage)


EINX_CASES = [c for c in MODEL_CASES if c.einx is not None]


def test_at_least_two_model_cases_carry_an_einx_form():
    assert len(EINX_CASES) >= 2


@pytest.mark.parametrize("which", ["einx", "einx_symbolic"])
@pytest.mark.parametrize("case", EINX_CASES, ids=_ids(EINX_CASES))
def test_einx_form_matches_the_oracle(case, which):
    einx = pytest.importorskip("einx")
    if which == "einx_symbolic":
        from engines import einx_symbolic as einx
    program, tol = case.einx.bind(einx), case.tol()
    for i, sizes in enumerate(case.sweep):
        inputs = case.make_inputs(sizes, seed=i)
        got = program(*(torch.from_numpy(a) for a in inputs)).numpy()
        v = oracle.compare(got, case.expected(inputs), case.out_dtype, tol.rtol, tol.atol)
        assert v.ok, f"{case.name} on {which}, shape {sizes}: {v.message}"


# -- a device of its own (torch_xla) ----------------------------------------------
def test_on_device_runs_the_program_on_a_copy_of_the_weights_there(monkeypatch):
    """A model's torch form carries ``on_device``: the same program on a copy of
    the weights moved to a device, which ``torch_xla_lazy`` asks for on the XLA
    device (LazyTensor refuses CPU weights: "Expected XLA tensor"). The shared
    CPU model, which the other forms and the oracle use, stays on the CPU.
    ``meta`` stands in for the XLA device (no torch_xla in this environment)."""
    import types

    from backends import torch_xla_lazy

    syncs = []
    fake = types.SimpleNamespace(device=lambda: torch.device("meta"), sync=lambda: syncs.append(1))
    monkeypatch.setitem(sys.modules, "torch_xla", fake)
    case = models_vision.model_resnet18
    program = torch_xla_lazy.on_xla_device(case.torch_fn())
    # the move is synced before the first call (BatchNorm's 0-d buffers move as pending constants)
    assert syncs == [1]
    sizes = dict(case.sweep[0])
    (images,) = (torch.from_numpy(a).to("meta") for a in case.make_inputs(sizes, seed=0))
    out = program(images)
    assert out.device.type == "meta" and tuple(out.shape) == case.out_shape_for(sizes)
    assert {p.device.type for p in models_vision.RESNET18.float32().parameters()} == {"cpu"}
    # a program without weights of its own is the same program
    plain = cases.get("gnn_edge_divide").torch_fn()
    assert torch_xla_lazy.on_xla_device(plain) is plain and syncs == [1]


# -- a library that is missing ---------------------------------------------------
def test_a_missing_library_makes_the_case_unavailable_with_the_reason(monkeypatch, capsys):
    real = libs.missing
    monkeypatch.setattr(
        libs, "missing", lambda *names: [libs.LIBRARIES[n] for n in names if n == "torch_geometric"] or real(*names)
    )
    why = models_graph.model_gcn.unavailable()
    assert why == "needs torch_geometric==2.8.1 (the models extra: `make setup` installs it)"
    assert models_text.model_gpt2.unavailable() is None
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "  model_gcn (" in out and f"    unavailable: {why}\n" in out
    assert cli.main(["list", "--json"]) == 0
    listed = {c["name"]: c for c in json.loads(capsys.readouterr().out)["cases"]}
    assert listed["model_gcn"]["unavailable"] == why and listed["model_gpt2"]["unavailable"] is None


def test_a_job_whose_env_lacks_the_library_is_skipped_with_the_reason(monkeypatch):
    """The torch_xla env has no transformers: such jobs are skipped, naming the env and the module."""
    from backends import envs

    def fake(env, modules):
        return (False, f"not installed in env {env!r}: {', '.join(modules)}") if env == "xla" else (True, "")

    monkeypatch.setattr(envs, "modules_available", fake)
    backend = registry.get("torch_eager")

    class InXla:  # a backend of the xla env, or one whose helper (an export server) runs there
        name, env, helper_envs = "peer", "main", ("xla",)

    combo = runner.Combo(models_text.model_bert, backend, "unbounded")
    assert combo.case_libraries_missing() is None
    skipped = runner.Combo(models_text.model_bert, InXla(), "unbounded").case_libraries_missing()
    assert skipped == ("skipped", "case model_bert needs its model libraries: not installed in env 'xla': transformers")
    # a case without model libraries is never checked
    assert runner.Combo(cases.get("gnn_edge_divide"), InXla(), "unbounded").case_libraries_missing() is None


def test_case_modules_import_no_framework():
    """Listing the catalogue imports neither torch nor a model library (the xla env lists it too)."""
    code = (
        "import sys; import cases; cases.catalogue(); "
        "print([m for m in ('torch', 'transformers', 'torchvision', 'torch_geometric') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "[]"
