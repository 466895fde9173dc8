"""Worker process: ``python -m harness.worker JOB_JSON``.

Runs one job and writes one JSON line per record to the protocol stream
(the original stdout); anything the frameworks print goes to stderr. The last
line is ``{"done": true}``; its absence tells the parent the worker died.
"""

from __future__ import annotations

import json
import os
import sys


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    job = json.loads(argv[0])
    proto = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # library prints must not corrupt the protocol
    sys.stdout = sys.stderr

    def send(msg: dict) -> None:
        proto.write(json.dumps(msg, default=str) + "\n")
        proto.flush()

    from . import measure, meta
    from .registry import load_spec

    send({"hello": True, "versions": meta.versions(), "pid": os.getpid()})
    try:
        backend = load_spec(job["spec"])
        measure.run(job, backend, lambda rec: send({"record": rec}))
    except Exception:
        send({"fatal": measure.describe_exception()})
        return 1
    send({"done": True})
    return 0


if __name__ == "__main__":
    sys.exit(main())
