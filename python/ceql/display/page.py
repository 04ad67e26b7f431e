"""A query and its explanation as HTML: the query, the automaton's picture, the plan."""

from __future__ import annotations

from fractions import Fraction

from ..automata import CEA
from ..constants import (
    CONSUME_ANY,
    CONSUME_NONE,
    CONSUME_PARTITION,
    STRATEGY_ALL,
    STRATEGY_ANY,
    STRATEGY_LAST,
    STRATEGY_MAX,
    STRATEGY_NEXT,
    STRATEGY_STRICT,
    WITHIN_EVENTS,
    WITHIN_TIME,
)
from ..frontends.ceql import format_query
from ..ir import depth, output_variables, recursion_for
from ..ir import nodes as N
from ..markup import esc, section, table, wrap
from ..predicates import AtomTable
from . import graphviz, svg
from .automaton import atom_text, describe

__all__ = ["automaton_picture", "explanation_html", "query_html"]

_STRATEGIES = {
    STRATEGY_ALL: "every complex event (the default)",
    STRATEGY_ANY: "every complex event (the same as ALL)",
    STRATEGY_STRICT: "only contiguous complex events (every position from start to end)",
    STRATEGY_NEXT: "per end position, the one whose first differing event comes earliest",
    STRATEGY_LAST: "per end position, the one whose last differing event comes latest",
    STRATEGY_MAX: "per end position, those not strictly contained in another",
}
_CONSUME = {
    CONSUME_NONE: "events may belong to several outputs",
    CONSUME_ANY: "after an output ending at j, later outputs start after j",
    CONSUME_PARTITION: "after an output ending at j, later outputs of its partition start after j",
}
_LEGEND = ("• the event joins the complex event, ○ it is skipped; a double circle accepts; "
           "names after the mark are the variables bound")


def automaton_picture(cea: CEA, atoms: AtomTable) -> str | None:
    """The automaton as an SVG element: Graphviz's when it is installed, else ceql's own.

    ``None`` when it is too large to draw.
    """
    if cea.n_states <= graphviz.MAX_STATES:
        drawn = graphviz.render(graphviz.picture_dot(cea, atoms))
        if drawn is not None:
            return drawn
    return svg.automaton_svg(cea, atoms)


def _automaton(cea: CEA, atoms: AtomTable, listing: str) -> str:
    picture = automaton_picture(cea, atoms)
    size = f"{cea.n_states} states, {len(cea.transitions)} transitions"
    if picture is None:
        return (f'<div class="ceql-note">{size}: too large to draw; as text:</div>'
                f"<pre>{esc(listing)}</pre>")
    return (f"<div>{picture}</div><div class=\"ceql-note\">{size}. {esc(_LEGEND)}</div>"
            f"<details><summary>as text</summary><pre>{esc(listing)}</pre></details>")


def _amount(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else str(float(x))


def _window(w: N.Within | None) -> str:
    if w is None:
        return "none: a match may span the whole input"
    n = _amount(Fraction(w.amount))
    if w.kind == WITHIN_EVENTS:
        return f"WITHIN {n} EVENTS: at most {n} positions from first to last event"
    if w.kind == WITHIN_TIME:
        return f"WITHIN {n} SECONDS: first and last event at most {n} s apart (needs time=)"
    return f"WITHIN {n} [{w.attr}]: attribute {w.attr} grows by at most {n}"


def _plan(ast: N.Query, atoms: AtomTable, cea: CEA) -> str:
    if ast.select is None:
        output = "every variable: " + ", ".join(output_variables(ast))
    elif not ast.select:
        output = "NONE: intervals only"
    else:
        output = ", ".join(ast.select)
    rows = [
        ("selection", f"{ast.strategy}: {_STRATEGIES.get(ast.strategy, '')}"),
        ("output", output),
        ("streams", ", ".join(ast.streams)),
        ("partition by", ", ".join(ast.partition_by) if ast.partition_by
         else "none: one evaluation over the whole input"),
        ("window", _window(ast.within)),
        ("consume by", f"{ast.consume}: {_CONSUME.get(ast.consume, '')}"),
        ("limit", f"at most {ast.limit} per end position" if ast.limit is not None else "none"),
        ("automaton", f"{cea.n_states} states, {len(cea.transitions)} transitions, "
                      f"final {', '.join(f'q{q}' for q in sorted(cea.finals))}"),
    ]
    cells = [[esc(k), esc(v)] for k, v in rows]
    preds = "<br>".join(f"p{k}: {esc(atom_text(a))}" for k, a in enumerate(atoms.atoms))
    cells.append(["predicates", preds or "none"])
    return table(["clause", "meaning"], cells, cls="ceql-plan")


def query_html(ast: N.Query, atoms: AtomTable, cea: CEA) -> str:
    """A query for notebooks: its canonical text, its automaton (picture), its plan."""
    with recursion_for(depth(ast)):
        text = format_query(ast)
        listing = describe(cea, atoms, "").strip("\n")
    return wrap(section("query", f"<pre>{esc(text)}</pre>")
                + section("automaton", _automaton(cea, atoms, listing))
                + section("plan", _plan(ast, atoms, cea)), "ceql-query")


def explanation_html(listing: str, atoms: AtomTable, cea: CEA) -> str:
    """What ``explain`` says, for notebooks: the picture, the predicates, the text itself."""
    preds = "<br>".join(f"p{k}: {esc(atom_text(a))}" for k, a in enumerate(atoms.atoms))
    return wrap(_automaton(cea, atoms, listing)
                + section("predicates", f"<div>{preds or 'none'}</div>"), "ceql-explanation")
