"""Where an atom meets a string and a number: such a comparison is unknown (SEMANTICS.md), so an
input read without types (a CSV's ``'7'``) silently matches nothing. Both paths find it:

* the row path's closures call :func:`report` on their slow branch only (the fast one never
  sees a string meet a number), which tells the hook of this thread's evaluation, if any;
* the column path knows its column types per batch: :func:`batch_mixes` says, from them alone,
  which parts of an atom meet a string and a number, and on which columns.

Mixing means: a comparison (``=``, ``<``, …, ``IN RANGE``) of a string with a number, ``IN``
with a string against numbers only (or a number against strings only), and arithmetic on a
string.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import pyarrow as pa

from ..ir import nodes as _ast
from .atoms import Atom, attr_names

__all__ = ["WATCH", "Hook", "Mix", "batch_mixes", "column_kind", "mixes", "report"]

#: Hears of one mix on the row path: ``(atom, node, event)``; ``node`` is the comparison,
#: ``IN``, ``IN RANGE`` or arithmetic inside ``atom`` that met a string and a number.
Hook = Callable[[Atom, Any, Mapping[str, Any]], None]

# Kinds of a batch value (enough to tell strings from numbers).
_NULL, _NUM, _STR, _OTHER = 0, 1, 2, 3


class _Watch(threading.local):
    """The hook of the evaluation running on this thread (None: nobody listens)."""

    hook: Hook | None = None


WATCH = _Watch()


def report(atom: Atom, node: Any, event: Mapping[str, Any]) -> None:
    """Tell this thread's hook that ``node`` of ``atom`` met a string and a number in ``event``."""
    hook = WATCH.hook
    if hook is not None:
        hook(atom, node, event)


def mixes(a: Any, b: Any) -> bool:
    """Whether two normalized values are a string and a number (in either order)."""
    ta, tb = type(a), type(b)
    return (ta is str and (tb is int or tb is float)) or (tb is str and (ta is int or ta is float))


class Mix(NamedTuple):
    """A part of an atom that meets a string and a number in every row where ``columns`` (the
    attributes it reads) all hold a value."""

    atom: Atom
    node: Any
    columns: tuple[str, ...]


def column_kind(t: pa.DataType) -> int:
    """Whether an Arrow column holds strings, numbers or something else."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if (pa.types.is_string(t) or pa.types.is_large_string(t)
            or pa.types.is_string_view(t)):
        return _STR
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return _NUM
    return _NULL if pa.types.is_null(t) else _OTHER


def _literal_kind(v: Any) -> int:
    t = type(v)
    if t is int or t is float:
        return _NUM
    return _STR if t is str else _OTHER


def batch_mixes(atom: Atom, kind_of: Callable[[str], int]) -> list[Mix]:
    """The parts of ``atom`` that meet a string and a number, given each column's kind
    (``kind_of(name)``: 0 absent or NULL, 1 numbers, 2 strings, 3 other)."""
    out: list[Mix] = []

    def kind(e: _ast.Expr) -> int:
        # iterative enough: deep expressions are only chains of arithmetic, and a mix inside
        # one is reported once, so this walks each node once
        todo: list[tuple[_ast.Expr, bool]] = [(e, False)]
        kinds: dict[int, int] = {}
        while todo:
            n, ready = todo.pop()
            if isinstance(n, _ast.Attr):
                kinds[id(n)] = kind_of(n.name)
            elif isinstance(n, _ast.Literal):
                kinds[id(n)] = _literal_kind(n.value)
            elif isinstance(n, _ast.Neg):
                if not ready:
                    todo += [(n, True), (n.operand, False)]
                    continue
                k = kinds[id(n.operand)]
                if k == _STR:
                    out.append(Mix(atom, n, tuple(sorted(attr_names(n)))))
                kinds[id(n)] = _NUM if k == _NUM else _NULL
            elif isinstance(n, _ast.Arith):
                if not ready:
                    todo += [(n, True), (n.right, False), (n.left, False)]
                    continue
                kl, kr = kinds[id(n.left)], kinds[id(n.right)]
                if _STR in (kl, kr) and _NULL not in (kl, kr):
                    out.append(Mix(atom, n, tuple(sorted(attr_names(n)))))
                kinds[id(n)] = _NUM if kl == kr == _NUM else _NULL
            else:
                kinds[id(n)] = _OTHER
        return kinds[id(e)]

    def compare(node: Any, x: _ast.Expr, y: _ast.Expr, kx: int, ky: int) -> None:
        if {kx, ky} == {_STR, _NUM}:
            out.append(Mix(atom, node, tuple(sorted(attr_names(x) | attr_names(y)))))

    if isinstance(atom, _ast.Compare):
        compare(atom, atom.left, atom.right, kind(atom.left), kind(atom.right))
    elif isinstance(atom, _ast.InRange):
        kx = kind(atom.expr)
        for bound in (atom.lo, atom.hi):
            compare(atom, atom.expr, bound, kx, kind(bound))
            if len(out) and out[-1].node is atom:
                break
    elif isinstance(atom, _ast.InSet):
        kx = kind(atom.expr)
        kinds = {_literal_kind(v.value) for v in atom.values}
        if (kx == _STR and kinds == {_NUM}) or (kx == _NUM and kinds == {_STR}):
            out.append(Mix(atom, atom, tuple(sorted(attr_names(atom.expr)))))
    elif isinstance(atom, _ast.Like):
        kind(atom.expr)
    return out
