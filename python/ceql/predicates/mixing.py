"""Where an atom meets a string and a number: such a comparison is unknown (SEMANTICS.md), so an
input read without types (a CSV's ``'7'``) silently matches nothing. Both paths find it:

* the row path's closures are pure; an evaluation that listens asks :func:`find_mix` about an
  event whose class leaves an atom unknown (a mix always does, but in ``IN RANGE``, where the
  other bound may make it false), and it evaluates the atom's operands again, as the closures
  do, applying the tests below: this is the one definition of a mix on the row path;
* the column path knows its column types per batch: :func:`batch_mixes` says, from them alone,
  which parts of an atom meet a string and a number, and on which columns.

Mixing means: a comparison (``=``, ``<``, …, ``IN RANGE``) of values of kinds that never
compare (a string with a number; a time with a number, a duration, or a string that writes no
time; a duration with a string: :func:`~.values.clash`), ``IN`` with a string against numbers
only (or a number against strings only), arithmetic on a string, and arithmetic on times that
has no value (``ts + ts``, ``ts * 2``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import date as _date
from datetime import timedelta as _timedelta
from typing import Any, NamedTuple

import pyarrow as pa

from ..ir import nodes as _ast
from .atoms import Atom, attr_names
from .programs import is_deep
from .values import (
    K_DATE,
    K_DT,
    K_DTZ,
    K_DUR,
    K_NUM,
    K_STR,
    TIMES,
    UNKNOWN,
    InSetSpec,
    arith,
    clash,
    neg,
    norm,
    time_of_text,
)
from .values import kind as value_kind

__all__ = ["Mix", "bad_arith", "batch_mixes", "column_kind", "find_mix", "mixes"]

# Kinds of a batch value (enough to tell strings, numbers, times and durations apart).
_NULL, _NUM, _STR, _OTHER, _TIME, _DUR = 0, 1, 2, 3, 4, 5


def mixes(a: Any, b: Any) -> bool:
    """Whether two normalized values are of kinds that never compare (a string and a number,
    a time and a number, ...: :func:`~.values.clash`)."""
    ta, tb = type(a), type(b)
    if ta is tb or a is None or b is None:
        return False
    if (ta is str and (tb is int or tb is float)) or (tb is str and (ta is int or ta is float)):
        return True
    return clash(a, b)


def bad_arith(a: Any, b: Any) -> bool:
    """Whether arithmetic on two non-NULL values that gave no value did so because it involves
    a time or a duration with a number, string, time or duration it cannot take."""
    ka, kb = value_kind(a), value_kind(b)
    moments = (*TIMES, K_DUR)
    return (ka in moments and kb in (*moments, K_NUM, K_STR)) or (
        kb in moments and ka in (*moments, K_NUM, K_STR))


def find_mix(atom: Atom, event: Mapping[str, Any]) -> Any:
    """The part of ``atom`` that meets values of kinds that never compare when the row path
    evaluates it on ``event`` (the first, in the order the row path evaluates: operands left
    to right, arithmetic inside before what uses it), or None.

    Arithmetic inside an operand the row path runs as a stack program
    (:func:`~.programs.is_deep`) is not looked into: only the comparison that reads it."""
    if isinstance(atom, _ast.Compare):
        a, found = _operand(atom.left, event)
        b, right = _operand(atom.right, event)
        found = found if found is not None else right
        return found if found is not None else atom if mixes(a, b) else None
    if isinstance(atom, _ast.InRange):
        x, found = _operand(atom.expr, event)
        lo, m_lo = _operand(atom.lo, event)
        hi, m_hi = _operand(atom.hi, event)
        for m in (found, m_lo, m_hi):
            if m is not None:
                return m
        return atom if mixes(x, lo) or mixes(x, hi) else None
    if isinstance(atom, _ast.InSet):
        x, found = _operand(atom.expr, event)
        if found is not None or x is None or type(x) is bool:
            return found
        spec = InSetSpec(atom.values)
        if spec.row_code(x) != UNKNOWN:
            return None
        # a string among numbers only, or a number among strings only; a time among strings
        # none of which writes one
        other: Any = str if spec.only == K_NUM else (int, float) if spec.only == K_STR else ()
        if isinstance(x, other) or (isinstance(x, _date) and spec.strs
                                    and not spec.times_of(x)):
            return atom
        return None
    if isinstance(atom, _ast.Like):
        return _operand(atom.expr, event)[1]
    return None  # an event's type or stream


def _operand(e: _ast.Expr, event: Mapping[str, Any]) -> tuple[Any, Any]:
    """The value of ``e`` on ``event`` as the row path computes it (None = NULL), and the
    first arithmetic inside that does arithmetic on a string, or on times that has no value
    (None: none, or ``e`` is deep). Iterative: deep expressions are long chains."""
    inner = not is_deep(e)
    found: Any = None
    vals: list[Any] = []
    push, pop = vals.append, vals.pop
    todo: list[tuple[_ast.Expr, bool]] = [(e, False)]
    while todo:
        n, ready = todo.pop()
        if isinstance(n, _ast.Attr):
            push(norm(event.get(n.name)))
        elif isinstance(n, _ast.Literal):
            push(norm(n.value))
        elif isinstance(n, _ast.Neg):
            if not ready:
                todo += [(n, True), (n.operand, False)]
                continue
            a = pop()
            if inner and found is None and type(a) is str:
                found = n
            push(neg(a))
        elif isinstance(n, _ast.Arith):
            if not ready:
                todo += [(n, True), (n.right, False), (n.left, False)]
                continue
            b, a = pop(), pop()
            r = arith(n.op, a, b)
            if inner and found is None and a is not None and b is not None and not (
                    type(a) in _NUMBERS and type(b) in _NUMBERS) and (
                    type(a) is str or type(b) is str or (r is None and bad_arith(a, b))):
                found = n
            push(r)
        else:
            raise TypeError(f"not an expression: {n!r}")
    return vals[0], found


_NUMBERS = (int, float)


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
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return _TIME
    if pa.types.is_duration(t):
        return _DUR
    return _NULL if pa.types.is_null(t) else _OTHER


def _literal_kind(v: Any) -> int:
    t = type(v)
    if t is int or t is float:
        return _NUM
    if t is str:
        return _STR
    return _DUR if isinstance(v, _timedelta) else _OTHER


def _writes_time(e: _ast.Expr) -> bool:
    """Whether ``e`` is a string literal that writes a time in ISO 8601 (of some kind)."""
    return isinstance(e, _ast.Literal) and isinstance(e.value, str) and any(
        time_of_text(e.value, k) is not None for k in (K_DT, K_DTZ, K_DATE))


def _arith_kind(op: str, kl: int, kr: int) -> int | None:
    """The kind of ``l op r`` with a time or duration among them; None: it has no value."""
    if kl == _TIME:
        if kr == _TIME:
            return _DUR if op == "-" else None
        return _TIME if op in "+-" and kr in (_DUR, _NUM) else None
    if kl == _DUR:
        if kr == _TIME:
            return _TIME if op == "+" else None
        if kr in (_DUR, _NUM):
            return _DUR if op in "+-" or (op == "*" and kr == _NUM) else (
                (_NUM if kr == _DUR else _DUR) if op == "/" else None)
        return None
    if kl == _NUM and kr == _TIME:
        return _TIME if op == "+" else None
    if kl == _NUM and kr == _DUR:
        return _DUR if op in "+-*" else None
    return None


def _never_compare(kx: int, ky: int, x: _ast.Expr, y: _ast.Expr) -> bool:
    if kx == ky or _NULL in (kx, ky) or _OTHER in (kx, ky):
        return False
    pair = {kx, ky}
    if pair == {_DUR, _NUM}:
        return False
    if pair == {_TIME, _STR}:
        return not (_writes_time(x) or _writes_time(y))
    return True


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
                kinds[id(n)] = k if k in (_NUM, _DUR) else _NULL
            elif isinstance(n, _ast.Arith):
                if not ready:
                    todo += [(n, True), (n.right, False), (n.left, False)]
                    continue
                kl, kr = kinds[id(n.left)], kinds[id(n.right)]
                if _NULL in (kl, kr) or (_OTHER in (kl, kr) and _STR not in (kl, kr)):
                    kinds[id(n)] = _NULL
                    continue
                timed = _TIME in (kl, kr) or _DUR in (kl, kr)
                got = _arith_kind(n.op, kl, kr) if timed else (
                    _NUM if kl == kr == _NUM else None)
                if got is None:
                    out.append(Mix(atom, n, tuple(sorted(attr_names(n)))))
                kinds[id(n)] = _NULL if got is None else got
            else:
                kinds[id(n)] = _OTHER
        return kinds[id(e)]

    def compare(node: Any, x: _ast.Expr, y: _ast.Expr, kx: int, ky: int) -> None:
        if _never_compare(kx, ky, x, y):
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
        if (kx == _STR and kinds == {_NUM}) or (kx == _NUM and kinds == {_STR}) or (
                kx == _TIME and _STR in kinds
                and not any(_writes_time(v) for v in atom.values)):
            out.append(Mix(atom, atom, tuple(sorted(attr_names(atom.expr)))))
    elif isinstance(atom, _ast.Like):
        kind(atom.expr)
    return out
