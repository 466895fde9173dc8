"""``packs install``: a case pack into every environment a backend runs in."""

from __future__ import annotations

from . import common

NAME = "packs"


def add_parser(sub) -> None:
    """``packs install``: a case pack into every environment."""
    pk = sub.add_parser(NAME, help="case packs: install one into every environment a backend runs in")
    pk_sub = pk.add_subparsers(dest="packs_command", required=True)
    pki = pk_sub.add_parser(
        "install",
        help="install the case pack at PATH (its pyproject.toml) into every "
        "environment (.venv, .venv-xla), as an editable install, no build step",
    )
    pki.add_argument("path", help="the pack's directory")


def main(args) -> int:
    from harness import pack_envs

    for env, seen in pack_envs.install(args.path).items():
        print(f"env {env}: packs {', '.join(seen)}")
    return common.EXIT_OK
