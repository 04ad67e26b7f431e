"""Conditions between a match's events: compatibility of mappings (shared variables joined by
``sameTerm``) and cross-GPM FILTERs, evaluated by SPARQL's own expression rules.

A cross-GPM FILTER is run by pyoxigraph as ``ASK { VALUES (…) { (…) } FILTER (expr) }`` on
an empty store, with the variables' terms as N-Triples text (an unbound variable is left out,
so SPARQL's error rule makes the FILTER false unless it tests ``BOUND``; a blank node is bound
by ``BIND(BNODE("id") AS ?v)``, since ``VALUES`` takes no blank nodes). Answers are cached
per (FILTER, terms).

Most FILTERs between events compare numbers (``?p2 > ?p1``): those are decided in Python
(:func:`compile_numeric`) when every term they compare is an ``xsd:integer`` or
``xsd:decimal`` literal in the store's canonical range, or two ``xsd:double`` ones, with
SPARQL's numeric comparison (integers promote to decimals exactly; no error can arise).
Anything else — another type, an unbound variable, arithmetic, a function — goes to SPARQL.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal

import pyoxigraph as ox

from ..frontends.spaseq import (
    BinaryExpr,
    CrossFilter,
    Expr,
    Literal,
    UnaryExpr,
    Var,
    expr_to_sparql,
)

__all__ = ["FilterChecker", "compatible", "compile_numeric", "numeric_value"]

_XSD = "http://www.w3.org/2001/XMLSchema#"
# lexical forms both Python and the store read alike: integers within i64, decimals within
# the store's 18 fraction digits, doubles as XSD writes them
_INTEGER = re.compile(r"[+-]?[0-9]{1,18}\Z")
_DECIMAL = re.compile(r"[+-]?[0-9]{0,18}(?:\.[0-9]{0,18})?\Z")
_DOUBLE = re.compile(r"(?:[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                     r"|-?INF)\Z")  # NaN: the store has its own rules (NaN <= NaN)
_TYPED = re.compile(r'"([^"\\]*)"\^\^<http://www\.w3\.org/2001/XMLSchema#(integer|decimal|double)>\Z')
_COMPARE: dict[str, Callable[[object, object], bool]] = {
    "=": lambda a, b: a == b, "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,  # type: ignore[operator]
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,  # type: ignore[operator]
}

Numeric = tuple[bool, int | Decimal | float]  # (is a double, value)


class _Unknown(Exception):
    """The fast path cannot decide: ask SPARQL."""


def _number(lexical: str, datatype: str) -> Numeric | None:
    if datatype == "integer":
        return (False, int(lexical)) if _INTEGER.match(lexical) else None
    if datatype == "decimal":
        if not _DECIMAL.match(lexical) or not any(c.isdigit() for c in lexical):
            return None
        return False, Decimal(lexical)
    if datatype == "double":
        return (True, float(lexical)) if _DOUBLE.match(lexical) else None
    return None


def numeric_value(term: str) -> Numeric | None:
    """An ``xsd:integer``/``decimal``/``double`` literal's N-Triples text as ``(is a double,
    value)``, or ``None`` when it is another term or outside what :func:`compile_numeric`
    decides."""
    m = _TYPED.match(term)
    return None if m is None else _number(m.group(1), m.group(2))


def compile_numeric(expr: Expr) -> Callable[[Callable[[str], Numeric]], bool] | None:
    """``expr`` as a Python function of a variable → number lookup (which raises for a
    variable it cannot give), when it is made only of ``&&``, ``||``, ``!`` over comparisons
    of variables and numeric literals; else ``None``."""
    if isinstance(expr, BinaryExpr) and expr.op in ("&&", "||"):
        left, right = compile_numeric(expr.left), compile_numeric(expr.right)
        if left is None or right is None:
            return None
        if expr.op == "&&":
            return lambda get: left(get) and right(get)
        return lambda get: left(get) or right(get)
    if isinstance(expr, UnaryExpr) and expr.op == "!":
        inner = compile_numeric(expr.operand)
        return None if inner is None else (lambda get: not inner(get))
    if isinstance(expr, BinaryExpr) and expr.op in _COMPARE:
        a, b = _operand(expr.left), _operand(expr.right)
        if a is None or b is None:
            return None
        compare = _COMPARE[expr.op]

        def test(get: Callable[[str], Numeric]) -> bool:
            (da, x), (db, y) = a(get), b(get)
            if da != db:
                raise _Unknown  # a double against a decimal: the store's own promotion
            return compare(x, y)
        return test
    return None


def _operand(expr: Expr) -> Callable[[Callable[[str], Numeric]], Numeric] | None:
    if isinstance(expr, Var):
        name = expr.name
        return lambda get: get(name)
    if isinstance(expr, Literal) and expr.datatype is not None and expr.lang is None \
            and expr.datatype.startswith(_XSD):
        value = _number(expr.lexical, expr.datatype[len(_XSD):])
        if value is not None:
            return lambda get: value
    return None


def compatible(shared: Mapping[str, str], mapping: Mapping[str, str],
               local: frozenset[str]) -> bool:
    """Whether ``mapping`` agrees with the match's ``shared`` values on every variable both
    bind, iteration-local variables (``local``) aside."""
    for v, t in mapping.items():
        if v in local:
            continue
        other = shared.get(v)
        if other is not None and other != t:
            return False
    return True


def joined(mappings: Iterable[Mapping[str, str]]) -> dict[str, str] | None:
    """The union of ``mappings`` (one per GPM of a ``&`` alternative, at one instant), or
    None when two of them disagree on a variable both bind."""
    out: dict[str, str] = {}
    for m in mappings:
        if not compatible(out, m, frozenset()):
            return None
        out.update(m)
    return out


_CACHE = 100_000  # answers and numbers remembered (then forgotten all at once)


class FilterChecker:
    """Evaluates cross-GPM FILTERs on bindings (variable → N-Triples text). Not thread-safe
    (one store)."""

    def __init__(self) -> None:
        self._store = ox.Store()
        self._texts: dict[int, tuple[str, tuple[str, ...]]] = {}
        self._cache: dict[tuple[int, tuple[str | None, ...]], bool] = {}
        self._fast: dict[int, Callable[[Callable[[str], Numeric]], bool] | None] = {}
        self._numbers: dict[str, Numeric | None] = {}

    def holds(self, f: CrossFilter, bindings: Mapping[str, str]) -> bool:
        """Whether ``f`` is true on ``bindings`` (its variables absent from them unbound)."""
        key = id(f)
        known = self._texts.get(key)
        if known is None:
            known = (expr_to_sparql(f.expr), f.variables)
            self._texts[key] = known
        expr, variables = known
        if key not in self._fast:
            self._fast[key] = compile_numeric(f.expr)
        fast = self._fast[key]
        if fast is not None:
            try:
                return fast(lambda v: self._number(bindings.get(v)))
            except _Unknown:
                pass
        terms = tuple(bindings.get(v) for v in variables)
        found = self._cache.get((key, terms))
        if found is None:
            found = self._ask(expr, variables, terms)
            if len(self._cache) >= _CACHE:
                self._cache.clear()
            self._cache[(key, terms)] = found
        return found

    def _number(self, term: str | None) -> Numeric:
        if term is None:
            raise _Unknown
        if term in self._numbers:
            found = self._numbers[term]
        else:
            if len(self._numbers) >= _CACHE:
                self._numbers.clear()
            found = self._numbers[term] = numeric_value(term)
        if found is None:
            raise _Unknown
        return found

    def _ask(self, expr: str, variables: tuple[str, ...], terms: tuple[str | None, ...]) -> bool:
        names, values, binds = [], [], []
        for v, t in zip(variables, terms, strict=True):
            if t is None:
                continue
            if t.startswith("_:"):
                binds.append(f'BIND(BNODE("{t[2:]}") AS ?{v})')
            else:
                names.append(f"?{v}")
                values.append(t)
        head = f"VALUES ({' '.join(names)}) {{ ({' '.join(values)}) }} " if names else ""
        text = f"ASK {{ {head}{' '.join(binds)} FILTER ({expr}) }}"
        result = self._store.query(text)
        assert isinstance(result, ox.QueryBoolean)
        return bool(result)
