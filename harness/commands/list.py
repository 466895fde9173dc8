"""``list``: the catalogue, cases × backends × modes and their availability."""

from __future__ import annotations

import json

import cases

NAME = "list"


def add_parser(sub) -> None:
    ls = sub.add_parser(
        NAME,
        help="cases × backends × modes and their availability",
        description="Cases × backends × modes and their availability. Modes: static (a program per shape), "
        "unbounded (symbolic dims), bounded (dims up to a maximum), bucketed (power-of-two buckets: "
        "our XLA executors compile the `?` module per bucket; the per-shape compilers pad inputs "
        "on the host with each input's neutral pad and slice the output back, backends/padding.py).",
    )
    ls.add_argument("--json", action="store_true", help="machine-readable output")


def main(args) -> int:
    from harness import registry

    backends = registry.backends()
    catalogue = cases.catalogue()
    avail = {name: b.available() for name, b in backends.items()}
    if args.json:
        print(json.dumps(_as_json(catalogue, backends, avail), indent=2))
        return 0
    print("backends:")
    for n, b in backends.items():
        ok, why = avail[n]
        print(
            f"  {n:<20} env={b.env:<5} forms={','.join(b.forms):<12} modes={','.join(b.modes):<25} "
            f"{'available' if ok else 'unavailable: ' + why}"
        )
        for mode, note in b.mode_notes.items():
            print(f"  {'':<20} {mode}: {note}")
    print("\ncases × backends × modes:")
    _print_matrix(catalogue, backends, avail)
    from cases import zoo

    if zoo.skipped():  # enumerated but not cases: listed, never dropped silently
        print(f"\nmodel zoo: {len(zoo.skipped())} enumerated architectures left out; `harness zoo-table --skipped` says why")
    return 0


def _as_json(catalogue, backends, avail) -> dict:
    return {
        "cases": [
            {
                "name": c.name,
                "tags": list(c.tags),
                "dims": {d.name: d.as_json() for d in c.dims},
                "forms": list(c.forms),
                "modes": list(c.modes),
                "unavailable": c.unavailable() if hasattr(c, "unavailable") else None,
            }
            for c in catalogue
        ],
        "backends": [
            {
                "name": n,
                "modes": list(b.modes),
                "forms": list(b.forms),
                "env": b.env,
                "available": avail[n][0],
                "reason": avail[n][1],
                "mode_notes": dict(b.mode_notes),
                "counters": {s: {"source": c.source, "event": c.event} for s, c in b.counters.items()},
            }
            for n, b in backends.items()
        ],
    }


def _print_matrix(catalogue, backends, avail) -> None:
    from harness import pack_envs, runner

    family = cases.families()

    def label(case, name):
        """The backend's name, saying so when the case's pack is missing from its environment."""
        pack = family.get(case, "")
        why = pack_envs.missing_reason(pack[5:] if pack.startswith("pack:") else None, backends[name].env)
        return f"{name} (pack {pack[5:]!r} not installed in env {backends[name].env})" if why else name

    for c in catalogue:
        dims = ", ".join(
            f"{d.name}={d.size}" if not d.dynamic else f"{d.name}:{d.kind}" + (f"≤{d.max}" if d.max else "") for d in c.dims
        )
        print(f"  {c.name} ({dims}) tags={','.join(c.tags)}")
        unavailable = c.unavailable() if hasattr(c, "unavailable") else None
        if unavailable:  # a model case whose library is missing here
            print(f"    unavailable: {unavailable}")
            continue
        for m in c.modes:
            runs = [
                label(c.name, n)
                for n, b in backends.items()
                if b.unsupported_reason(c, m) is None and avail[n][0] and runner.Combo(c, b, m).case_libraries_missing() is None
            ]
            print(f"    {m:<10} {', '.join(runs) or '–'}")
