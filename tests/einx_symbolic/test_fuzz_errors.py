"""Fuzzing descriptions: random strings and mutations of valid descriptions
(Python keywords, builtins and dunders as axis names, quotes, semicolons,
newlines) either work or raise an einx error that quotes the description;
nothing else escapes, nothing hangs, and every source the package ``exec``s
is a graph of our own making: its names are our locals, the array library and
attributes, its string literals plain einsum specs and constraint names.

The property runs ten times the profile's examples (2,000 under ``ci``, the
profile ``make test`` uses)."""

import io
import re
import signal
import tokenize

import einx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engines import einx_symbolic as ex
from engines.einx_symbolic import build

EXAMPLES = 10 * settings().max_examples

VALID = [
    ("id", "a b -> b a"),
    ("id", "(a b) c -> a b c"),
    ("id", "a (b c) -> (a b) c"),
    ("id", "a ... -> ... a"),
    ("add", "a b, b -> a b"),
    ("divide", "e d, e -> e d"),
    ("multiply", "a [b], [b] -> a [b]"),
    ("sum", "a [b]"),
    ("max", "a [b] -> a"),
    ("dot", "a b, b -> a"),
    ("id", "(a + b) c -> a c, b c"),
    ("get_at", "[a] b, [1] -> b"),
    ("softmax", "a [b]"),
    ("id", "a b -> a 1 b"),
]
NASTY = [
    "lambda",
    "print",
    "__import__",
    "None",
    "True",
    "import",
    "os",
    "exec",
    "eval",
    "def",
    "__class__",
    "__builtins__",
    "P",
    "t0",
    "d0_0",
    "v1",
    "p_b",
    "p0_b",
    "_fail",
    "np",
    "op",
    "torch",
    "_",
]
TOKENS = [
    "a",
    "b",
    "c",
    "e",
    " ",
    "->",
    ",",
    "(",
    ")",
    "[",
    "]",
    "+",
    "...",
    "1",
    "2",
    "0",
    ";",
    "'",
    '"',
    "\n",
    "\t",
    "\\",
    "#",
    "$",
    "é",
    "{",
    "}",
    "*",
    "=",
    ":",
    "`",
] + NASTY

# a graph's source: our locals, the array library, Python's syntax
LOCAL = re.compile(r"t\d+|d\d+_\d+|v\d+|p_[A-Za-z0-9_]+|p\d+_[A-Za-z0-9_]+|P|_fail|_|op")
GLOBALS = {"np", "numpy", "torch", "jax", "jnp", "slice", "None", "True", "False", "tuple", "range", "int", "len", "min", "max"}
KEYWORDS = {"def", "return", "if", "or", "and", "not", "import", "as", "else", "in", "for", "is"}
LITERAL = re.compile(r"[A-Za-z0-9_,>\-. ]*")


def audit(text: str) -> None:
    """Raise AssertionError unless every token of ``text`` is one a graph may contain."""
    toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    for k, t in enumerate(toks):
        prev, nxt = toks[k - 1].string if k else "", toks[k + 1].string if k + 1 < len(toks) else ""
        if t.type == tokenize.NAME:
            ok = (
                t.string in KEYWORDS
                or t.string in GLOBALS
                or LOCAL.fullmatch(t.string)
                or prev == "."
                or (nxt == "=" and prev in ("(", ","))
            )  # a keyword argument
            assert ok, f"unexpected name {t.string!r} in generated source:\n{text}"
        elif t.type == tokenize.STRING:
            value = t.string[1:-1]
            assert t.string[0] in "'\"" and LITERAL.fullmatch(value), f"unexpected literal {t.string} in:\n{text}"
        elif t.type in (tokenize.COMMENT, tokenize.ERRORTOKEN):
            raise AssertionError(f"unexpected {tokenize.tok_name[t.type]} {t.string!r} in:\n{text}")


@pytest.fixture(scope="module")
def audited():
    """Audit every source ``build`` compiles while the module's tests run."""
    seen = []

    def compile_audited(text, filename, mode, _compile=compile):
        audit(text)
        seen.append(text)
        return _compile(text, filename, mode)

    mp = pytest.MonkeyPatch()
    mp.setattr(build, "compile", compile_audited, raising=False)
    yield seen
    mp.undo()


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang()


def _args(op):
    x, y = np.arange(24.0).reshape(6, 4), np.arange(1.0, 5.0)
    return {"get_at": (x, np.array([1])), "add": (x, y), "divide": (x, y[:1].repeat(6)), "multiply": (x, y), "dot": (x, y)}.get(
        op, (x,)
    )


@st.composite
def descriptions(draw):
    if draw(st.booleans()):  # random text over einx's tokens and hostile ones
        return draw(st.sampled_from(list(dict(VALID).keys()))), "".join(draw(st.lists(st.sampled_from(TOKENS), max_size=16)))
    op, desc = draw(st.sampled_from(VALID))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["insert", "delete", "rename"]))
        i = draw(st.integers(0, len(desc)))
        if kind == "insert":
            desc = desc[:i] + draw(st.sampled_from(TOKENS)) + desc[i:]
        elif kind == "delete":
            desc = desc[:i] + desc[i + draw(st.integers(1, 3)) :]
        else:
            names = sorted(set(re.findall(r"[a-z]+", desc)))
            if names:
                old = draw(st.sampled_from(names))
                desc = re.sub(rf"\b{old}\b", draw(st.sampled_from(NASTY)), desc)
    return op, desc


@settings(max_examples=EXAMPLES)
@given(descriptions())
def test_only_einx_errors_escape_and_nothing_hangs(audited, case):
    op, desc = case
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(20)  # a hang guard, not a timing assertion: a build takes milliseconds
    try:
        getattr(ex, op)(desc, *_args(op))
    except einx.errors.EinxError as e:
        # every error quotes the description, escaped so its marker lines up
        assert "Expression: " in str(e) or "einx_symbolic does not support" in str(e), str(e)
    except Hang:
        pytest.fail(f"{op}({desc!r}) did not finish in 20 s")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize(
    "name", ["lambda", "print", "__import__", "None", "True", "P", "t0", "d0_0", "_fail", "np", "op", "exec"]
)
def test_keywords_builtins_and_dunders_are_safe_axis_names(audited, name):
    x = np.arange(24.0).reshape(6, 4)
    desc = f"({name} b) c -> {name} b c"
    got = ex.rearrange(desc, x, **{name: 2})
    np.testing.assert_array_equal(got, x.reshape(2, 3, 4))
    audit(ex.rearrange(desc, x, graph=True, **{name: 2}))
    assert f"p_{name} = P[{name!r}]" in ex.rearrange(desc, x, graph=True, **{name: 2})


def test_a_tuple_constraint_and_a_name_with_its_index_do_not_collide():
    # "b" given as a tuple reads b[0], b[1]; a constraint named "b_0" is another name
    x = np.arange(48.0).reshape(24, 2)
    got = ex.rearrange("(b... b_0) c -> b... b_0 c", x, b=(2, 3), b_0=4)
    np.testing.assert_array_equal(got, einx.id("(b... b_0) c -> b... b_0 c", x, b=(2, 3), b_0=4))
