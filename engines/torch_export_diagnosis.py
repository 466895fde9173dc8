"""torch.export's account of a constraint violation, parsed: the guards that
broke the declared range, the suggested fixes (a narrower ``Dim`` range, a
relation between dims, a constant), and the one line reports show.

torch.export's message (``torch._dynamo.exc.UserError``) reads::

    Constraints violated (p)! For more information, run with TORCH_LOGS="+dynamic".
      - Not all values of p = L['x'].size()[2] in the specified range p <= 96 satisfy the generated guard ...
    Suggested fixes:
      p = Dim('p', min=4, max=96)

    The error above occurred when calling torch.export.export. ...

``refine_dynamic_shapes_from_suggested_fixes`` fails on the whole message (it splits
every line after ``Suggested fixes:``, the closing paragraph too): :attr:`Diagnosis.fixes_text`
is the part it takes.
"""

from __future__ import annotations

import dataclasses
import re

_FIX = re.compile(r"^(?P<name>\w+) = (?P<rhs>.+)$")
_DIM = re.compile(r"^Dim\('(?P<dim>\w+)'(?:, min=(?P<min>\d+))?(?:, max=(?P<max>\d+|oo))?\)$")


@dataclasses.dataclass(frozen=True)
class Fix:
    """One suggested fix: ``kind`` ``range`` (``min``/``max``), ``constant`` (``value``)
    or ``relation`` (``expr``, another dim's expression), and its line."""

    name: str
    kind: str
    line: str
    min: int | None = None
    max: int | None = None
    value: int | None = None
    expr: str | None = None

    def words(self) -> str:
        """``p ≥ 4``, ``p ≤ 64``, ``p = 4``, ``q = 2*p``: what torch.export needs, briefly."""
        if self.kind == "range":
            parts = [f"{self.name} ≥ {self.min}" if self.min is not None else "", f"{self.name} ≤ {self.max}" if self.max else ""]
            return " and ".join(p for p in parts if p) or f"{self.name} in its default range"
        if self.kind == "constant":
            return f"{self.name} = {self.value} (a constant: not dynamic)"
        return f"{self.name} = {self.expr}"


@dataclasses.dataclass(frozen=True)
class Diagnosis:
    """What torch.export said, in parts."""

    headline: str
    guards: tuple[str, ...]
    fixes: tuple[Fix, ...]

    @property
    def fixes_text(self) -> str:
        """The ``Suggested fixes:`` block alone: what ``refine_dynamic_shapes_from_suggested_fixes`` takes."""
        return "Suggested fixes:\n" + "\n".join(f"  {f.line}" for f in self.fixes)

    @property
    def narrowable(self) -> bool:
        """A retry can keep the dims dynamic: every fix narrows a range or relates dims (none fixes a constant)."""
        return bool(self.fixes) and all(f.kind != "constant" for f in self.fixes)

    def words(self) -> str:
        """The line a report shows: ``torch.export needs p ≥ 4: suggested Dim('p', min=4, max=96)``
        where a fix narrows; else the first guard that broke (its first sentence), with the
        fix that makes a dim a constant where torch suggests one."""
        if self.fixes and not self.narrowable:
            fixed = ", ".join(f.name for f in self.fixes if f.kind == "constant")
            guard = f": {_sentence(self.guards[0])}" if self.guards else ""
            return f"torch.export cannot keep {fixed} dynamic{guard}; suggested " + "; ".join(f.line for f in self.fixes)
        if self.fixes:
            needs = ", ".join(f.words() for f in self.fixes)
            return f"torch.export needs {needs}: suggested " + "; ".join(
                f.line.split(" = ", 1)[1] if f.kind == "range" else f.line for f in self.fixes
            )
        if self.guards:
            return f"torch.export cannot keep the dims dynamic: {self.guards[0]}"
        return f"torch.export: {self.headline}"

    def as_record(self) -> dict:
        """The record's ``diagnosis`` field."""
        return {
            "system": "torch.export",
            "headline": self.headline,
            "guards": list(self.guards),
            "fixes": [{k: v for k, v in dataclasses.asdict(f).items() if v is not None} for f in self.fixes],
            "words": self.words(),
        }


def parse(message: str) -> Diagnosis | None:
    """The diagnosis in torch.export's ``message``, or ``None`` where it is not a constraint violation's."""
    lines = message.splitlines()
    head = next((i for i, line in enumerate(lines) if "Constraints violated" in line), None)
    if head is None:
        return None
    guards, fixes, in_fixes = [], [], False
    for line in lines[head + 1 :]:
        text = line.strip()
        if text.startswith("Suggested fixes:"):
            in_fixes = True
            continue
        if in_fixes:
            if not text:
                break  # the closing paragraph ("The error above occurred when ...")
            fix = _fix(text)
            if fix is not None:
                fixes.append(fix)
        elif text.startswith("- "):
            guards.append(_guard(text[2:]))
    return Diagnosis(lines[head].strip(), tuple(guards), tuple(fixes))


def _guard(text: str) -> str:
    """A guard line in words: torch's ``Not all values of p = L['x'].size()[2] in the specified
    range p <= 96 satisfy the generated guard G.`` kept whole but for the final period."""
    return text.rstrip(".")


def _sentence(text: str) -> str:
    """The first sentence of a guard's text (torch's advice on mark_dynamic follows it)."""
    return text.split(". ", 1)[0]


def _fix(line: str) -> Fix | None:
    m = _FIX.match(line)
    if m is None:
        return None
    name, rhs = m["name"], m["rhs"].strip()
    d = _DIM.match(rhs)
    if d is not None:
        return Fix(name, "range", line, min=_int(d["min"]), max=_int(d["max"]))
    if re.fullmatch(r"-?\d+", rhs):
        return Fix(name, "constant", line, value=int(rhs))
    return Fix(name, "relation", line, expr=rhs)


def _int(v: str | None) -> int | None:
    return int(v) if v is not None and v != "oo" else None  # oo: sympy's infinity, no bound
