"""Readable descriptions of a compiled query: its clauses, predicates and automaton."""

from __future__ import annotations

from typing import Any

from .automata import CEA
from .automata.registers import RegisterPlan
from .display import automaton_picture, describe, explanation_html, mandatory_lines, to_dot
from .frontends.ceql import format_query
from .ir import (
    FilterAtom,
    FilterMatch,
    Not,
    canonical_repr,
    depth,
    formula_nodes,
    recursion_for,
)
from .predicates import AtomTable
from .predicates.summary import record_reducer
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
        lines = _engine(q) + _conditions(q, cea) + _negations(q, cea) + _lazy(q, atoms)
        return Explanation(describe(cea, atoms, format_query(q.ast), lines), q)


def _engine(q: Query) -> list[str]:
    """The engine stack an evaluator runs (outermost first), for ``explain``."""
    return [f"engine: {q.engine().name}"]


def _lazy(q: Query, atoms: AtomTable) -> list[str]:
    """The lazy evaluation plan, for ``explain``."""
    plan = q.lazy_plan()
    if not plan.eligible:
        return [f"lazy evaluation: not used ({plan.reason}); every row is fed"]
    if q.engine().base in ("dense", "join"):
        return [f"lazy evaluation: not used (the {q.engine().base} engine reads whole "
                "columns); every row is read"]
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
    if cea.edge_rank:
        read = ", ".join(sorted(cea.edge_reads)) or "none"
        lines.append(f"SELECT {q.ast.strategy} after a leading or trailing NOT: partial matches "
                     f"kept apart by start and the events of the variables the NOT reads ({read}), "
                     "whatever their start; the complex events at an end are checked and the "
                     "strategy chooses among those that pass (up to RANKED_RUNS per partition)")
    if not cea.scopes:
        return lines
    if q.engine().base == "join":
        lines.append("conditions between events: equalities with an earlier element are join "
                     "keys (with the partition, a hash join); each candidate chain (rows that "
                     "pass the elements' guards, order and window) is checked on a batch's "
                     "columns as arrays where they compare numbers, else value by value")
        return lines + [f"  {_leaf_text(q.text, leaf)}" for sc in cea.scopes for leaf in sc]
    if q.engine().base == "dense":
        lines.append("conditions between events: checked on each candidate chain (rows that "
                     "pass the elements' guards and the window), on a batch's columns as "
                     "arrays where they compare numbers, else value by value")
        return lines + [f"  {_leaf_text(q.text, leaf)}" for sc in cea.scopes for leaf in sc]
    plan = RegisterPlan(cea, False)
    exponential = q.exponential_choices()
    if exponential:
        shown = ", ".join(f"{e.func}({e.var}{'.' + e.attr if e.attr else ''})"
                          for e in exponential)
        lines.append(f"exponential choice: SELECT {q.ast.strategy} ranks a partial match per "
                     f"subset of an iteration's events for {shown} (see the "
                     "ExponentialChoiceWarning)")
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
            regs = [f"{v}: {', '.join(a)}"
                    + (" (summarized: only the records the comparison needs)"
                       if record_reducer(c, v) is not None else "")
                    for v, a in zip(c.quantified, c.attrs, strict=True) if a]
            if c.prev:
                regs.append(f"previous {c.var}: {', '.join(c.prev)}")
            regs += [f"{f.split()[0]}({'DISTINCT ' if ' ' in f else ''}{v}{'.' + a if a else ''})"
                     for f, v, a in c.aggs]
            if regs:
                lines.append(f"      registers: {'; '.join(regs)}")
    return lines


def _leaf_text(text: str, leaf: FilterAtom | FilterMatch) -> str:
    span = leaf.span
    return text[span.start:span.end] if span.end > span.start else canonical_repr(leaf)


def _negations(q: Query, cea: CEA) -> list[str]:
    """How each NOT is checked, for ``explain``: at the first chance in the automaton (a gap
    between two elements), or per complex event (a leading or trailing NOT)."""
    lines: list[str] = []
    nots = [n for n in formula_nodes(q.ast.where) if isinstance(n, Not)]
    if not nots:
        return lines
    text = q.text
    kills = list({id(k): k for t in cea.transitions for k in t.kills}.values())
    reading = any(not k[3] for k in kills)
    deferred = any(k[3] for k in kills)
    gated = set()
    if kills:
        plan = RegisterPlan(cea, False)
        gated = {g.cond for g in plan.kill_gates.values()}
    lines.append("negation:")
    edges = {id(x) for x in (cea.leading, cea.trailing) if x is not None}
    between = len(nots) - len(edges)
    if between:
        lines.append("  NOT between two elements: first chance — the gap's self-loop lets only "
                     "events that are not β by, so a β event ends the runs waiting there")
        if reading:
            how = ("found through an index by the earlier value, then checked" if gated else
                   "each run waiting there checked")
            lines.append(f"    conditions reading earlier events (kept in the registers): a β "
                         f"event ends only the runs for which they hold ({how})")
        if deferred:
            lines.append("    conditions reading events not all before the NOT (later ones, "
                         "or the NOT iterated or in an operand of AND inside their FILTER): "
                         "the gap's β events are recorded in the registers (for one order "
                         "comparison only the extreme value), and a valuation fails when it "
                         "completes if one satisfies them all")
    if cea.leading is not None:
        lines.append("  leading NOT: per complex event — the β events of its partition are kept "
                     "within the window; it passes when none lies before its start within "
                     "WITHIN of its end")
    if cea.trailing is not None:
        lines.append("  trailing NOT: per complex event — it waits until the input passes its "
                     "start + WITHIN (a later event, Evaluator.advance or close), unless a β "
                     "event of its partition comes first")
    for leaf in (*cea.leading_conds, *cea.trailing_conds):
        span = leaf.span
        shown = text[span.start:span.end] if span.end > span.start else canonical_repr(leaf)
        lines.append(f"    {shown} (line {span.line}, column {span.column}) — read on each "
                     "complex event's own events")
    return lines
