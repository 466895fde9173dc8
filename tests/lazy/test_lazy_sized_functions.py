"""A size handed to a torch creation function inside a tuple, by a caller that holds the
function from before the step patched torch (OpInfo's ``op.op``): torch's argument parser
reaches ``SymSize.__torch_function__``, which used to call the function again with the
tuple unchanged, recursing until Python's limit."""

import pytest
import torch

import engines.lazy as L

ZEROS, FULL = torch.zeros, torch.full  # held before any step patches torch


def test_tracing_puts_each_replacement_under_its_own_name():
    """``tracing()`` reads its targets a namespace at a time and pairs what it found with them in
    order (first here: a misaligned tracing() also restores the wrong functions): a target
    added out of its namespace's run once swapped ``handle_torch_function`` for
    another function (every lazy op through torch's Python wrappers then failed)."""
    from engines.lazy import hooks

    for _, new, old in hooks._patch_set(hooks._found(), hooks._TARGETS):
        for name, f in new.items():
            assert getattr(f, "__wrapped__", f).__name__ == name == old[name].__name__, name


def test_a_size_in_a_tuple_reaches_the_lazy_creation_function():
    f = L.LazyFunction(lambda z: ZEROS((z.shape[0], 3)) + FULL((z.shape[0], 1), 2.0), dims=[{0: "s0"}])
    for n in (4, 6):
        out = f(torch.zeros(n))
        assert torch.equal(out, torch.full((n, 3), 2.0))


BROADCAST_SHAPES = torch.broadcast_shapes  # held before any step patches torch


def test_broadcast_shapes_of_symbolic_sizes_stays_symbolic():
    """``torch.broadcast_shapes`` in a step: torch's own asks ``guard_or_false`` of each size
    comparison and asserted on the lazy path's SymBool; the lazy rule keeps the sizes symbolic,
    so the step compiles once for both sizes."""
    f = L.LazyFunction(lambda x: (torch.broadcast_shapes((x.shape[0], 1), (1, 4)), x * 2), dims=[{0: "s0"}])
    for n in (4, 6):
        shape, y = f(torch.ones(n))
        assert tuple(int(d) for d in shape) == (n, 4)
        assert torch.equal(y, torch.full((n,), 2.0))
    assert f.ctx.compiles() == 1


def test_a_held_broadcast_shapes_reads_ints():
    """One held from before the step (OpInfo's) reaches the lazy rule through
    ``torch._refs._broadcast_shapes``, its ``torch.Size`` reading the sizes as ints."""
    f = L.LazyFunction(lambda x: BROADCAST_SHAPES((x.shape[0],), (1,), (2, 1)), dims=[{0: "s0"}])
    for n in (4, 6):
        assert f(torch.ones(n)) == torch.Size([2, n])


BROADCAST_TO, EYE = torch.broadcast_to, torch.eye  # held before any step patches torch


def test_a_held_creation_function_compiles_once():
    """torch's argument parser asks the first size of an int list for ``__index__`` (is it an
    int?) before it calls ``__torch_function__``: that probe is no read of the size, and its
    guard is dropped (``symbolic.retract_probes``), so the step compiles once for both sizes."""
    f = L.LazyFunction(lambda z: ZEROS((z.shape[0], 3)) + FULL((z.shape[0], 1), 2.0), dims=[{0: "s0"}])
    for n in (4, 6):
        assert torch.equal(f(torch.zeros(n)), torch.full((n, 3), 2.0))
    assert f.ctx.compiles() == 1 and not f.guard_log


def test_a_held_broadcast_to_of_a_lazy_tensor_compiles_once():
    f = L.LazyFunction(lambda x, z: BROADCAST_TO(x, (z.shape[0], 2)) * 2, dims=[{}, {0: "s0"}])
    for n in (4, 6):
        assert torch.equal(f(torch.ones(1), torch.zeros(n)), torch.full((n, 2), 2.0))
    assert f.ctx.compiles() == 1 and not f.guard_log


def test_a_held_eye_compiles_once_from_the_first_step():
    """``torch.eye(n)`` held from before the step: torch's parser asks ``n`` for ``__index__``,
    which every step refuses (the first, which learns whether the step patches torch, too), so the
    parser calls ``__torch_function__`` and the lazy ``eye`` records ``n`` symbolic. The first step
    once read it as an int (a guard, its graph constant), the later ones not: a compile per size."""
    f = L.LazyFunction(lambda z: EYE(z.shape[0]) + z, dims=[{0: "s0"}])
    for n in (4, 6):
        assert torch.equal(f(torch.zeros(n)), torch.eye(n))
    assert f.ctx.compiles() == 1 and not f.guard_log


TRIL_INDICES = torch.tril_indices  # held, and with no lazy rule


def test_a_size_a_c_function_reads_as_an_int_stays_guarded():
    """A held C function the lazy path has no rule for reads the size as an int (``int`` guard):
    the second size is traced again rather than served the first size's graph, and a size met
    before is served from the cache."""
    f = L.LazyFunction(lambda z: TRIL_INDICES(z.shape[0], z.shape[0]).sum() + z, dims=[{0: "s0"}])
    for n in (4, 6, 4):
        assert torch.equal(f(torch.zeros(n)), torch.tril_indices(n, n).sum() + torch.zeros(n))
    assert f.ctx.compiles() == 2 and any("(int)" in g for g in f.guard_log)


POS_EMBED = torch.nn.Parameter(torch.randn(1, 8, 4, 4))  # a model's parameter: a plain tensor in every step


@pytest.mark.parametrize(
    "resize",
    [
        lambda h: torch.nn.functional.interpolate(POS_EMBED, size=(h, h), mode="bicubic"),  # timm's ViTs
        lambda h: torch.nn.functional.interpolate(POS_EMBED, size=(h, 3), mode="bilinear", antialias=True),
        lambda h: torch.nn.functional.interpolate(POS_EMBED, (h, 2 * h), None, "nearest"),
        lambda h: torch.nn.functional.adaptive_avg_pool2d(POS_EMBED, (h, 2)),
        lambda h: torch.nn.functional.pad(POS_EMBED, (0, 0, 0, h - 4)),
    ],
)
def test_a_plain_tensor_resized_to_symbolic_sizes_stays_symbolic(resize):
    """A parameter given to a ``torch.nn.functional`` function with sizes taken from the input:
    torch's C++ argument parser refused the symbolic sizes (interpolate) or read them as ints;
    the parameter becomes a constant leaf and the sizes stay symbolic: one compile."""

    def program(x):
        return resize(x.shape[0]).sum(1)[0] + x[:, None]

    f = L.jit(program)
    for n in (5, 6, 8):
        x = torch.randn(n)
        torch.testing.assert_close(f(x), program(x))
    assert f.ctx.compiles() == 1


@pytest.mark.parametrize(
    "op",
    [
        lambda t, n: t.view(-1, 1).repeat(1, n),  # torch_geometric's HGTConv: ``arange(H).repeat(1, N)``
        lambda t, n: t.new_zeros(3, n) + t[:, None],
        lambda t, n: torch.narrow(torch.cat([t, t] * 4), 0, 1, n)[:, None],
    ],
)
def test_a_plain_tensors_op_at_a_symbolic_size_stays_symbolic(op):
    """A tensor made from constant sizes (plain, in every step) whose op takes a size of the input:
    the size reached ``SymSize.__torch_function__``, which read it as an int (a graph per size); the
    tensor becomes a constant leaf of the registry's op, the size symbolic: one compile, no guard."""

    def program(x):
        return op(torch.arange(3.0), x.shape[0]).sum(0) + x.sum()

    f = L.jit(program)
    for n in (3, 5, 7):
        x = torch.randn(n)
        torch.testing.assert_close(f(x), program(x))
    assert f.ctx.compiles() == 1 and list(f.guard_log) == []
