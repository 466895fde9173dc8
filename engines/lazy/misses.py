"""Why a cache key missed: the part of the key (``passes.key``) that is new
against the closest cached key, as text (``LazyContext.on_compile``'s reason)."""

from __future__ import annotations


def _key_parts(k: tuple) -> dict:
    """A cache key (``passes.key``) split into its parts."""
    parts = {"mode": k[0], "inputs": [], "ops": [], "outputs": (), "guards": []}
    for e in k[1:]:
        if e[0] == "in":
            parts["inputs"].append(e)
        elif e[0] == "out":
            parts["outputs"] = e
        elif e[0] == "guard":
            parts["guards"].append(e[1])
        else:
            parts["ops"].append(e)
    return parts


def _fmt_input(e: tuple) -> str:
    """``("in", dtype, dims)`` as ``float32[1000, 8]`` (static: the concrete
    sizes; otherwise the symbolic dims, with bounds)."""
    dims = e[2]
    concrete = [d for d in dims if isinstance(d, int)]
    shown = concrete if concrete else [str(d) for d in dims]
    return f"{e[1].replace('torch.', '')}[{', '.join(map(str, shown))}]"


def _fmt_sig(a) -> str:
    """An operand signature (``passes._sig``) as text: ``(%0, (10, -1, -1))``."""
    if not (isinstance(a, tuple) and a):
        return repr(a)
    tag, rest = a[0], a[1:]
    if tag == "%":
        return f"%{rest[0]}"
    if tag == "e":
        return str(rest[0])
    if tag in ("tuple", "list"):
        inner = ", ".join(_fmt_sig(x) for x in rest)
        return f"({inner})" if tag == "tuple" else f"[{inner}]"
    if tag == "d":
        return "{" + ", ".join(f"{k}={_fmt_sig(v)}" for k, v in rest) + "}"
    if tag == "sl":
        return ":".join("" if x == ("NoneType", None) else _fmt_sig(x) for x in rest)
    return str(rest[0]) if len(rest) == 1 else repr(a)


def _fmt_op_args(e: tuple) -> str:
    """An op entry ``(op, args, kwargs, dtype)`` of a key: its operands as text."""
    kwargs = _fmt_sig(e[2]) if len(e[2]) > 1 else ""
    return _fmt_sig(e[1]) + (f" {kwargs}" if kwargs else "")


def _diff(new: dict, old: dict) -> list:
    """The parts of ``new`` that differ from ``old``, described."""
    out = []
    if new["mode"] != old["mode"]:
        out.append(f"mode {new['mode']} (cached: {old['mode']})")
    ni, oi = new["inputs"], old["inputs"]
    if len(ni) != len(oi):
        out.append(f"{len(ni)} inputs (cached: {len(oi)})")
    else:
        changed = [i for i, (a, b) in enumerate(zip(ni, oi, strict=False)) if a != b]
        if changed:
            out.append(
                "input shapes "
                + ", ".join(f"{i}: {_fmt_input(ni[i])}" for i in changed)
                + " (cached: "
                + ", ".join(_fmt_input(oi[i]) for i in changed)
                + ")"
            )
    no, oo = new["ops"], old["ops"]
    if no != oo:
        first = next((i for i, (a, b) in enumerate(zip(no, oo, strict=False)) if a != b), min(len(no), len(oo)))
        if first < len(no) and first < len(oo) and no[first][0] == oo[first][0]:
            out.append(f"arguments of op {first} {no[first][0]}{_fmt_op_args(no[first])} (cached: {_fmt_op_args(oo[first])})")
        else:
            what = f"op {first} is {no[first][0]}" if first < len(no) else f"{len(no)} ops"
            was = f"{oo[first][0]}" if first < len(oo) else f"{len(oo)} ops"
            out.append(f"graph structure ({what}; cached: {was})")
    elif new["outputs"] != old["outputs"]:
        out.append("graph outputs")
    added = [g for g in new["guards"] if g not in old["guards"]]
    dropped = [g for g in old["guards"] if g not in new["guards"]]
    if added or dropped:
        out.append(
            "guards "
            + ("; ".join(added) if added else "(none)")
            + " (cached: "
            + ("; ".join(dropped) if dropped else "none")
            + ")"
        )
    return out


def explain_miss(k: tuple, cache) -> str:
    """Why ``k`` missed the cache: which part of the key is new against the
    closest cached key (the one that differs in fewest parts)."""
    if not cache:
        return "first call: empty graph cache"
    new = _key_parts(k)
    best = None
    for old in cache:
        d = _diff(new, _key_parts(old))
        if best is None or len(d) < len(best):
            best = d
            if len(d) <= 1:
                break
    return "new " + " and new ".join(best or ["key (no part differs?)"])
