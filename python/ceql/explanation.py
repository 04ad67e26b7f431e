"""Readable descriptions of a compiled query: its clauses, predicates and automaton."""

from __future__ import annotations

from typing import Any

from .automata import CEA
from .automata.registers import RegisterPlan
from .display import automaton_picture, describe, explanation_html, mandatory_lines, to_dot
from .frontends.ceql import format_query
from .ir import FilterAtom, FilterMatch, canonical_repr, depth, recursion_for
from .predicates import AtomTable
from .query import Query, compile

__all__ = ["Explanation", "describe", "explain", "to_dot"]


class Explanation(str):
    """What :func:`explain` returns: the text itself (a ``str``), and in a notebook a picture.

    ``print(e)`` and every ``str`` operation see the listing (or the DOT text); Jupyter shows
    the automaton drawn (``_repr_html_``, ``_repr_svg_``). ``query`` is the compiled query.
    """

    query: Query

    def __new__(cls, text: str, query: Query) -> Explanation:
        self = super().__new__(cls, text)
        self.query = query
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (Explanation, (str(self), self.query))

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))

    def _repr_svg_(self) -> str | None:
        """The automaton's picture (``None`` when it is too large to draw)."""
        atoms, cea = self.query.automaton()
        return automaton_picture(cea, atoms)

    def _repr_html_(self) -> str:
        """The picture, the predicates, and the text under it."""
        atoms, cea = self.query.automaton()
        return explanation_html(str(self), atoms, cea)


def explain(text: str | Query, *, dot: bool = False) -> Explanation:
    """Describe the query's automaton: predicates, states, transitions (or Graphviz DOT).

    The result is the text (a ``str``); a notebook draws the automaton.
    """
    q = text if isinstance(text, Query) else compile(text)
    atoms, cea = q.automaton()
    if dot:
        return Explanation(to_dot(cea, atoms), q)
    with recursion_for(depth(q.ast)):
        lines = _conditions(q, cea) + _lazy(q, atoms)
        return Explanation(describe(cea, atoms, format_query(q.ast), lines), q)


def _lazy(q: Query, atoms: AtomTable) -> list[str]:
    """The lazy evaluation plan, for ``explain``."""
    plan = q.lazy_plan()
    if not plan.eligible:
        return [f"lazy evaluation: not used ({plan.reason}); every row is fed"]
    lines = ["lazy evaluation (Arrow batches): only rows within the window of a row of every "
             "element below are fed; the elements are checked rarest first, by the frequency "
             "observed in each batch (a batch of which most rows that can change a run "
             "would be fed is fed whole)"]
    return lines + mandatory_lines(plan.elements, atoms)


def _conditions(q: Query, cea: CEA) -> list[str]:
    """How each condition between events is decided (the register plan), for ``explain``."""
    lines: list[str] = []
    key = q.implied_key()
    if key is not None:
        attr, atoms = key
        shown = ", ".join(_leaf_text(q.text, a) for a in atoms)
        lines.append(f"partition key {attr} (implied): {shown} ties every event of a match to "
                     f"one {attr}, so the query runs per {attr} value (a hash lookup per event; "
                     "in Spark the shuffle key) and the equality is not checked again")
    if not cea.scopes:
        return lines
    plan = RegisterPlan(cea, False)
    lines += ["conditions between events: runs keyed by (state, registers), not determinized; "
              "a FILTER conjunction holding them is a scope s<k> (transitions 'in s<k>'); "
              + ("runs wait in place (only those an event can move are visited)"
                 if plan.in_place else "every run is visited by each event that moves any")]
    text = q.text
    gated = {(g.scope, g.cond): g.op for q in range(cea.n_states) for g in plan.state_gates(q)}
    for sp in plan.scopes:
        lines.append(f"  s{sp.index}:")
        for ci, c in enumerate(sp.conditions):
            span = c.leaf.span
            shown = _leaf_text(text, c.leaf)
            where = f" (line {span.line}, column {span.column})" if span.line else ""
            if c.deferred:
                how = ("deferred: checked once the scope's valuation is complete, "
                       "aggregates folded as events arrive")
            elif gated.get((sp.index, ci)) == "=":
                how = ("hash lookup: the runs an event can extend are found by the earlier "
                       "event's value (an index per state), then checked")
            elif (sp.index, ci) in gated:
                how = ("range lookup: the runs an event can extend are found by a range of "
                       "the earlier values (a sorted index per state), then checked")
            else:
                how = "incremental: checked on each new choice of events as its last one arrives"
            lines.append(f"    {shown}{where} — {how}")
            regs = [f"{v}: {', '.join(a)}" for v, a in zip(c.quantified, c.attrs, strict=True)
                    if a]
            if c.prev:
                regs.append(f"previous {c.var}: {', '.join(c.prev)}")
            regs += [f"{f}({v}{'.' + a if a else ''})" for f, v, a in c.aggs]
            if regs:
                lines.append(f"      registers: {'; '.join(regs)}")
    return lines


def _leaf_text(text: str, leaf: FilterAtom | FilterMatch) -> str:
    span = leaf.span
    return text[span.start:span.end] if span.end > span.start else canonical_repr(leaf)
