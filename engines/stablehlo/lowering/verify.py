"""Parse + verify StableHLO text with jaxlib's MLIR bindings."""

from __future__ import annotations

import functools


class VerificationError(Exception):
    pass


@functools.lru_cache(maxsize=1)
def _make_context_fn():
    # jax's context registers func/stablehlo/chlo/sdy/... exactly as jax.export
    # modules need them; the bare ir.Context() knows only `builtin`.
    from jax.interpreters.mlir import make_ir_context

    return make_ir_context


def make_context():
    return _make_context_fn()()


def parse(text: str, context=None):
    """Parse ``text`` into an ``ir.Module`` (raises VerificationError)."""
    from jaxlib.mlir import ir

    ctx = context or make_context()
    try:
        with ctx:
            return ir.Module.parse(text)
    except ir.MLIRError as e:
        raise VerificationError(_format(e)) from None


def verify(text: str, *, pretty: bool = True) -> str:
    """Parse and verify; return the module re-printed in StableHLO's pretty form."""
    from jaxlib.mlir import ir

    ctx = make_context()
    module = parse(text, ctx)
    with ctx:
        try:
            module.operation.verify()
        except ir.MLIRError as e:
            raise VerificationError(_format(e)) from None
        if not pretty:
            return text
        return module.operation.get_asm(enable_debug_info=False)


def _format(e) -> str:
    lines = [str(getattr(e, "message", e))]
    for d in getattr(e, "error_diagnostics", []) or []:
        lines.append(f"  {d.location}: {d.message}")
        for n in d.notes:
            lines.append(f"    note: {n.location}: {n.message}")
    return "\n".join(lines)
