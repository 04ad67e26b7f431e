"""Conditions between a match's events: compatibility of mappings (shared variables joined by
``sameTerm``) and cross-GPM FILTERs, evaluated by SPARQL's own expression rules.

A cross-GPM FILTER is run by pyoxigraph as ``ASK { VALUES (…) { (…) } FILTER (expr) }`` on
an empty store, with the variables' terms as N-Triples text (an unbound variable is left out,
so SPARQL's error rule makes the FILTER false unless it tests ``BOUND``; a blank node is bound
by ``BIND(BNODE("id") AS ?v)``, since ``VALUES`` takes no blank nodes). Answers are cached
per (FILTER, terms).
"""

from __future__ import annotations

from collections.abc import Mapping

import pyoxigraph as ox

from ..frontends.spaseq import CrossFilter, expr_to_sparql

__all__ = ["FilterChecker", "compatible"]


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


class FilterChecker:
    """Evaluates cross-GPM FILTERs on bindings (variable → N-Triples text). Not thread-safe
    (one store)."""

    def __init__(self) -> None:
        self._store = ox.Store()
        self._texts: dict[int, tuple[str, tuple[str, ...]]] = {}
        self._cache: dict[tuple[int, tuple[str | None, ...]], bool] = {}

    def holds(self, f: CrossFilter, bindings: Mapping[str, str]) -> bool:
        """Whether ``f`` is true on ``bindings`` (its variables absent from them unbound)."""
        key = id(f)
        known = self._texts.get(key)
        if known is None:
            known = (expr_to_sparql(f.expr), f.variables)
            self._texts[key] = known
        expr, variables = known
        terms = tuple(bindings.get(v) for v in variables)
        found = self._cache.get((key, terms))
        if found is None:
            found = self._ask(expr, variables, terms)
            self._cache[(key, terms)] = found
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
