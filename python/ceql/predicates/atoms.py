"""The atoms a guard is made of, their structural identity, and the attributes they read.

An atom is an IR comparison, LIKE, IN or IN RANGE, or a structural :class:`TypeIs` /
:class:`StreamIs` test.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..ir import nodes as _ast
from .values import PY_CMP

__all__ = [
    "FLIP",
    "Atom",
    "StreamIs",
    "TypeIs",
    "attr_names",
    "norm_op",
    "structural_key",
]


@dataclass(frozen=True)
class TypeIs:
    """The event's type value equals ``name`` (never UNKNOWN)."""

    name: str


@dataclass(frozen=True)
class StreamIs:
    """The event's stream value equals ``name`` or is NULL/missing (never UNKNOWN)."""

    name: str


Atom = _ast.Compare | _ast.Like | _ast.InSet | _ast.InRange | TypeIs | StreamIs

#: The comparison with its operands swapped: ``a op b`` is ``b FLIP[op] a``.
FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
# Other spellings of ``=`` and ``!=``.
_OP_ALIASES = {"==": "=", "<>": "!="}


def norm_op(op: str) -> str:
    """The canonical spelling of a comparison operator (``ValueError`` if there is none)."""
    op = _OP_ALIASES.get(op, op)
    if op not in PY_CMP:
        raise ValueError(f"unknown comparison operator {op!r}")
    return op


def structural_key(node: Any) -> Any:
    """Structural identity: like AST equality, but ``1``, ``1.0`` and ``TRUE`` differ."""
    if isinstance(node, _ast.Literal):
        v = node.value
        return ("lit", type(v).__name__, repr(v) if isinstance(v, float) else v)
    if isinstance(node, _ast.Attr):
        return ("attr", node.name) if node.var is None else ("attr", node.name, node.var)
    if isinstance(node, _ast.Prev):
        return ("prev", node.name)
    if isinstance(node, _ast.Agg):
        return ("agg", node.func, node.var, node.attr, node.distinct)
    if isinstance(node, _ast.Neg):
        return ("neg", structural_key(node.operand))
    if isinstance(node, _ast.Arith):
        return ("arith", node.op, structural_key(node.left), structural_key(node.right))
    if isinstance(node, _ast.Compare):
        return ("cmp", _OP_ALIASES.get(node.op, node.op), structural_key(node.left),
                structural_key(node.right))
    if isinstance(node, _ast.Like):
        return ("like", structural_key(node.expr), node.pattern)
    if isinstance(node, _ast.InSet):
        return ("in", node.negated, structural_key(node.expr),
                tuple(structural_key(v) for v in node.values))
    if isinstance(node, _ast.InRange):
        return ("range", structural_key(node.expr), structural_key(node.lo),
                structural_key(node.hi))
    if isinstance(node, TypeIs):
        return ("type", node.name)
    if isinstance(node, StreamIs):
        return ("stream", node.name)
    raise TypeError(f"not a predicate atom or expression: {node!r}")


def attr_names(node: Any) -> set[str]:
    """The attributes an atom or expression reads (none for :class:`TypeIs`/:class:`StreamIs`)."""
    return _collect_attrs(node, set())


def _collect_attrs(node: Any, out: set[str]) -> set[str]:
    if isinstance(node, _ast.Attr):
        out.add(node.name)
    elif isinstance(node, _ast.Neg):
        _collect_attrs(node.operand, out)
    elif isinstance(node, (_ast.Arith, _ast.Compare)):
        _collect_attrs(node.left, out)
        _collect_attrs(node.right, out)
    elif isinstance(node, (_ast.Like, _ast.InSet)):
        _collect_attrs(node.expr, out)
    elif isinstance(node, _ast.InRange):
        for e in (node.expr, node.lo, node.hi):
            _collect_attrs(e, out)
    return out
