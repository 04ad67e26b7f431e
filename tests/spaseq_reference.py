"""A brute-force SPAseq evaluator written directly from docs/SPASEQ.md, for tests only.

It enumerates every candidate match — per element of SEQ, one or more (``+``) group choices
at strictly increasing instants, a group choice being one (GPM, event, mapping) per GPM of a
``&``/``|`` alternative, all at one instant — and keeps those that satisfy each rule of the
contract, checked literally: compatible shared variables; cross-GPM FILTERs, checked when
their GPM's events are chosen (on the match so far) for every iteration and every choice of
one iteration of each other ``+`` GPM they read; the selection operators (``:`` nothing more,
``;`` no instant strictly between with a fit choice, ``,`` the next instant of the
streamset), between elements and between iterations; the window. Outputs are the set of
(events per GPM, projected bindings). Exponential: small inputs only.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from fractions import Fraction
from itertools import product
from typing import Any

import pyoxigraph as ox

from ceql.frontends.spaseq import (
    SKIP_TILL_NEXT,
    STRICT,
    Conj,
    GpmRef,
    SeqGroup,
    SpaseqQuery,
    expr_to_sparql,
    gpm_names,
    to_sparql,
)
from ceql.rdf import GpmEvaluator, StaticDataset

__all__ = ["reference_matches"]

Choice = tuple[str, int, int, dict[str, str]]  # (GPM, input position, instant, mapping)


def _exact(time: Any) -> Fraction:
    """A time in exact seconds (docs/SPASEQ.md: a float is its binary value, not rounded)."""
    if isinstance(time, dt.datetime):
        d = time - (dt.datetime(1970, 1, 1, tzinfo=dt.UTC) if time.utcoffset() is not None
                    else dt.datetime(1970, 1, 1))
        return Fraction((d.days * 86400 + d.seconds) * 10 ** 6 + d.microseconds, 10 ** 6)
    return Fraction(time)


def _ask(expr: str, bindings: Mapping[str, str]) -> bool:
    rows = []
    for v, t in bindings.items():
        if t.startswith("_:"):
            rows.append(f'BIND(BNODE("{t[2:]}") AS ?{v})')
        else:
            rows.append(f"VALUES ?{v} {{ {t} }}")
    result = ox.Store().query(f"ASK {{ {' '.join(rows)} FILTER ({expr}) }}")
    assert isinstance(result, ox.QueryBoolean)
    return bool(result)


def reference_matches(query: SpaseqQuery, events: Sequence[Mapping[str, Any]],
                      dataset: StaticDataset | None = None
                      ) -> set[tuple[tuple[tuple[str, tuple[int, ...]], ...],
                                     tuple[tuple[str, Any], ...]]]:
    """The set of (sorted (GPM, positions) pairs, (variable, term) pairs) of every match,
    terms as N-Triples texts (outputs are RDF terms: ``"x"`` and ``"x"@en`` are two); an
    iteration-local variable's term is a tuple, one term per iteration."""
    iris = {s.name: s.iri for s in query.streams}
    names = {**{s.iri: s.iri for s in query.streams}, **iris}
    order = [s.iri for s in query.streams]
    evs = [(e["time"], order.index(names[e["stream"]]), i, names[e["stream"]], e["graph"])
           for i, e in enumerate(events) if e["stream"] in names]
    evs.sort(key=lambda x: (x[0], x[1], x[2]))
    times = sorted({x[0] for x in evs})
    # ⟦X⟧(e) for every GPM and every event of its stream
    per_instant: list[list[Choice]] = [[] for _ in times]
    for g in query.gpms:
        ev = GpmEvaluator({g.name: to_sparql(g)}, dataset, terms=True)
        for t, _, i, iri, graph in evs:
            if iri != iris[g.stream]:
                continue
            for m in ev.evaluate(graph)[g.name]:
                per_instant[times.index(t)].append((g.name, i, times.index(t), m))  # type: ignore[arg-type]

    local = {g.name: set(query.iteration_local(g.name)) for g in query.gpms}
    owner = {v: g for g, vs in local.items() for v in vs}
    elements = query.sequence.elements
    ops = query.sequence.operators

    def group_choices(group: SeqGroup, k: int) -> list[tuple[Choice, ...]]:
        if isinstance(group, GpmRef):
            return [(c,) for c in per_instant[k] if c[0] == group.name]
        parts = [group_choices(g, k) for g in group.operands]
        if isinstance(group, Conj):
            return [tuple(c for p in combo for c in p) for combo in product(*parts)]
        return [c for p in parts for c in p]

    def shared_values(chosen: Sequence[Choice]) -> dict[str, str] | None:
        values: dict[str, str] = {}
        for g, _, _, m in chosen:
            for v, t in m.items():
                if v in local[g]:
                    continue
                if values.setdefault(v, t) != t:
                    return None
        return values

    def filters_hold(element: int, prefix: Sequence[Choice]) -> bool:
        shared = shared_values(prefix)
        if shared is None:
            return False
        for g in gpm_names(elements[element].group):
            for f in query.gpm(g).cross_filters:
                others = sorted({owner[v] for v in f.variables if v in owner and owner[v] != g})
                pools = [[c[3] for c in prefix if c[0] == o] or [{}] for o in others]
                for own in [c[3] for c in prefix if c[0] == g]:
                    for combo in product(*pools):
                        b = dict(shared)
                        b.update({v: t for v, t in own.items() if v in local[g]})
                        for o, m in zip(others, combo, strict=True):
                            b.update({v: t for v, t in m.items() if v in local[o]})
                        b = {v: t for v, t in b.items() if v in f.variables}
                        if not _ask(expr_to_sparql(f.expr), b):
                            return False
        return True

    def fit(element: int, before: Sequence[Choice], c: tuple[Choice, ...]) -> bool:
        return filters_hold(element, [*before, *c])

    out = set()

    def check(blocks: list[tuple[int, tuple[Choice, ...]]]) -> None:
        # blocks: (element index, group choice) in time order
        chosen: list[Choice] = []
        for n, (el, c) in enumerate(blocks):
            k = c[0][2]
            if n:
                prev_el, prev = blocks[n - 1]
                op = (ops[el - 1] if el != prev_el else
                      (ops[el - 1] if el else SKIP_TILL_NEXT))
                k0 = prev[0][2]
                if op == STRICT and k != k0 + 1:
                    return
                if op == SKIP_TILL_NEXT:
                    for t in range(k0 + 1, k):
                        options = group_choices(elements[el].group, t)
                        if any(fit(el, chosen, alt) for alt in options):
                            return
            chosen.extend(c)
            if not filters_hold(el, chosen):
                return
        if shared_values(chosen) is None:
            return
        first, last = times[blocks[0][1][0][2]], times[blocks[-1][1][0][2]]
        if _exact(last) - _exact(first) > query.window.seconds:
            return
        shared = shared_values(chosen)
        assert shared is not None
        bindings = []
        for v in (query.select if query.select is not None else query.variables):
            if v in owner:
                bindings.append((v, tuple(c[3][v] for c in chosen
                                          if c[0] == owner[v] and v in c[3])))
            else:
                bindings.append((v, shared.get(v)))
        per_gpm: dict[str, list[int]] = {}
        for g, i, _, _ in chosen:
            per_gpm.setdefault(g, []).append(i)
        out.add((tuple(sorted((g, tuple(ps)) for g, ps in per_gpm.items())), tuple(bindings)))

    def extend(el: int, start: int, blocks: list[tuple[int, tuple[Choice, ...]]]) -> None:
        # choose element el's (next) iteration at an instant >= start
        for k in range(start, len(times)):
            for c in group_choices(elements[el].group, k):
                if not c:
                    continue
                nb = [*blocks, (el, c)]
                if el == len(elements) - 1:
                    check(nb)
                elif el + 1 < len(elements):
                    extend(el + 1, k + 1, nb)
                if elements[el].kleene:
                    extend(el, k + 1, nb)

    extend(0, 0, [])
    return out
