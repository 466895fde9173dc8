"""One verdict per (sample, path, mode), and the entry's verdict over its samples.

``pass``            equal to eager at both sizes, with the compiles the mode promises
``refused``         the path named what it cannot do (a named refusal class of ours)
``export-refused``  torch.export's own refusal (not ours): the StableHLO path is not reached
``recompiled``      right values, but a compile more than the mode promises
``mismatch``        a value, shape or dtype unlike eager's
``crash``           any other exception from our engines: a defect of ours
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

#: worst first: an entry's verdict is its worst sample's
ORDER = ("crash", "mismatch", "recompiled", "refused", "export-refused", "pass")


@dataclass
class Verdict:
    entry: str
    family: str
    path: str  # "lazy:unbounded", "stablehlo:bounded", ...
    verdict: str
    refusal: str = ""  # the named class, for refused / export-refused
    message: str = ""  # the first line the path said
    sample: str = ""  # DynSample.describe() of the sample it is about
    route: str = ""  # what served a pass: the lazy graph's IR ops (a pin notices a lost implementation)
    targets: str = ""  # the StableHLO lowering's registry targets a pass reached (the op-sample coverage test)

    def row(self) -> dict:
        return asdict(self)


def worst(verdicts: list[Verdict]) -> Verdict:
    """The entry's verdict: its worst sample's (``ORDER``)."""
    return min(verdicts, key=lambda v: ORDER.index(v.verdict))


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
