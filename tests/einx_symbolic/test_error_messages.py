"""Bad descriptions and contradicting inputs: each error quotes the
description and marks the offending characters (exact messages)."""

import dataclasses

import einx
import numpy as np
import pytest

import cases
from engines import einx_symbolic as ex
from engines.einx_symbolic import errors
from engines.einx_symbolic.parse import identifier

ALLOWED = (
    "The following expressions are allowed:\n- Literals: -> + , [ ] ( ) ... whitespace\n"
    "- Named axes: Must match the regex [a-zA-Z_][a-zA-Z0-9_]*\n- Unnamed axes: Must match the regex [0-9]+\n"
)
X, C = np.ones((6, 4)), np.ones(6)
PAD = " " * 13


@pytest.mark.parametrize(
    "op,desc,args,kw,kind,message",
    [
        # unbalanced brackets
        (
            "divide",
            "e d, e -> e d)",
            (X, C),
            {},
            errors.NotationSyntaxError,
            'Found a closing parenthesis that is not opened:\nExpression: "e d, e -> e d)"\n' + PAD + "             ^",
        ),
        (
            "id",
            "a [b -> a",
            (X,),
            {},
            errors.NotationSyntaxError,
            'Found an opening bracket that is not closed:\nExpression: "a [b -> a"\n' + PAD + "  ^      ",
        ),
        # an unknown token; a newline is shown escaped, so the marker lines up
        (
            "id",
            "a; b -> a",
            (X,),
            {},
            errors.NotationSyntaxError,
            "The expression 'a;' is not allowed:\nExpression: \"a; b -> a\"\n" + PAD + "^^       \n" + ALLOWED,
        ),
        (
            "id",
            "a\nb -> b a",
            (X,),
            {},
            errors.NotationSyntaxError,
            "The expression 'a\\nb' is not allowed:\nExpression: \"a\\nb -> b a\"\n" + PAD + "^^^^       \n" + ALLOWED,
        ),
        (
            "id",
            "a 'b' -> a",
            (X,),
            {},
            errors.NotationSyntaxError,
            "The expression ''b'' is not allowed:\nExpression: \"a 'b' -> a\"\n" + PAD + "  ^^^     \n" + ALLOWED,
        ),
        # an axis repeated where it may not be
        (
            "id",
            "a b -> a a b",
            (X,),
            {},
            errors.SemanticError,
            "The output expression must not contain multiple vectorized axes with the same name (after splitting "
            'concatenated axes).\nExpression: "a b -> a a b"\n' + PAD + "       ^ ^  ",
        ),
        # a missing "->" where the output cannot be inferred
        (
            "dot",
            "a b, b c",
            (X, np.ones((4, 3))),
            {},
            errors.SemanticError,
            "The output expression is missing in this operation. einx allows implicitly determining the output expression "
            "in this operation according to the rule: If one of the input expressions contains the axis names of all other "
            "input expressions (excluding 1s) and if this choice is unique, then this expression is used as output "
            'expression. However, no unique input expression was found.\nExpression: "a b, b c"\n' + PAD + "        ",
        ),
        (
            "id",
            "a b -> b a -> a",
            (X,),
            {},
            errors.NotationSyntaxError,
            "The expression must not contain more than one '->' operator.\nExpression: \"a b -> b a -> a\"\n"
            + PAD
            + "    ^^     ^^  ",
        ),
        # a composed axis that does not divide
        (
            "id",
            "(e b) d -> e b d",
            (np.ones((7, 4)),),
            {"b": 2},
            errors.AxisSizeError,
            "Failed to determine the size of all axes in the expression under the given constraints: (e b) = "
            'args[0].shape[0] = 7 is not divisible by b = 2.\nExpression: "(e b) d -> e b d"\n' + PAD + "^^^^^           ",
        ),
        # inputs that contradict each other at run time: the axis, both sizes, where each comes from
        (
            "divide",
            "e d, e -> e d",
            (np.ones((1000, 8)), np.ones(999)),
            {},
            errors.AxisSizeError,
            "Failed to determine the size of all axes in the expression under the given constraints: e = args[0].shape[0] = "
            '1000, but args[1].shape[0] = 999.\nExpression: "e d, e -> e d"\n' + PAD + "     ^       ",
        ),
        # as many inputs as arguments (a ValueError too, as in einx)
        (
            "add",
            "a b, b, c -> a",
            (X, np.ones(4)),
            {},
            errors.InputCountError,
            "The operation is defined with 3 input expressions, but 2 input tensors are given as arguments.\n"
            'Expression: "a b, b, c -> a"\n' + PAD + "   ^  ^       ",
        ),
    ],
)
def test_bad_descriptions_quote_and_mark(op, desc, args, kw, kind, message):
    with pytest.raises(kind) as e:
        getattr(ex, op)(desc, *args, **kw)
    assert str(e.value) == message
    assert isinstance(e.value, einx.errors.EinxError)


def test_an_input_count_error_is_still_the_value_error_einx_raises():
    with pytest.raises(ValueError, match="defined with 1 input expression, but 2 input tensors"):
        ex.add("a b", X, X)


@pytest.mark.parametrize("name", ["a b", "a;b", "a\nb", "'a'", "", "2x", "é", None])
def test_identifier_accepts_only_axis_names(name):
    with pytest.raises(ValueError, match="is not an axis name: it must match"):
        identifier(name)


@pytest.mark.parametrize("name", ["a", "lambda", "__import__", "print", "_", "b_0"])
def test_identifier_takes_keywords_and_dunders_they_are_prefixed_in_code(name):
    assert identifier(name) == name


@pytest.mark.parametrize("backend", ["einx_symbolic", "einx"])
def test_both_einx_backends_quote_a_bad_case_description(backend):
    """Through the harness's backends (what a case's ``EinxForm`` reaches)."""
    from harness import registry

    case = cases.get("gnn_edge_divide")
    bad = dataclasses.replace(case, einx=cases.EinxForm("divide", "e d, e -> e d)"))
    b = registry.backends()[backend]
    b.startup()
    program = b.prepare(bad, "unbounded")
    inputs = program.convert(case.make_inputs(case.sizes_for("quick")[0], seed=0))
    with pytest.raises(einx.errors.SyntaxError) as e:
        program(*inputs)
    assert str(e.value).startswith(
        'Found a closing parenthesis that is not opened:\nExpression: "e d, e -> e d)"\n' + PAD + "             ^"
    )
