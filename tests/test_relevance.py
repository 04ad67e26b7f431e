"""``ceql.analysis.relevance``: which events can move a run; dropping the others changes nothing.

* the queries whose meaning counts skipped events (contiguity, STRICT, WITHIN n EVENTS,
  WITHIN n [attr]) and a marking transition without a guard have no relevance condition;
* for the others the condition is exactly "some event type of the formula, with every FILTER
  condition that can bind it" — checked through the engine's own 3-valued atom evaluation
  (``AtomTable.row_class`` and ``tri_state``) on a grid of events with NULL, NaN, missing and
  mixed-kind values;
* on random queries and streams (``tests/strategies.py``), running the engine on the stream and
  on the stream without the irrelevant events gives the same matches, in the same order, once
  positions of the shorter stream are mapped back to the original ones.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from fractions import Fraction
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, note, target
from hypothesis import strategies as st

import ceql
from ceql.analysis import Relevance, relevance
from ceql.automata import CEA, Transition
from ceql.frontends.ceql import format_query
from ceql.ir import nodes as A
from ceql.predicates import AtomTable, GAtom, GTrue, TypeIs, tri_state
from strategies import PROFILE, Case, _type_names, cases, events_lists, queries

# ---------------------------------------------------------------- helpers


def _rel(text: str, **kw: str) -> Relevance | None:
    return relevance(ceql.compile(text), **kw)


def _table(rel: Relevance, **kw: str) -> AtomTable:
    """A fresh table holding ``rel.atoms`` at the same indices (what the guard refers to)."""
    table = AtomTable(**kw)
    for k, a in enumerate(rel.atoms):
        assert table.add(a) == k
    return table


def _relevant(rel: Relevance, table: AtomTable, ev: Mapping[str, Any]) -> bool:
    return tri_state(rel.guard, table.row_class(ev)) is True


# ---------------------------------------------------------------- no condition


UNSOUND = {
    "contiguous sequence": "SELECT * FROM S WHERE A : B",
    "contiguous iteration": "SELECT * FROM S WHERE A ; B:+",
    "contiguity inside OR": "SELECT * FROM S WHERE A ; (B OR (C : A))",
    "contiguity inside AS": "SELECT * FROM S WHERE A ; (B : C) AS x",
    "contiguity inside FILTER": "SELECT * FROM S WHERE A ; ((B : C) AS x FILTER x[v > 1])",
    "contiguity inside +": "SELECT * FROM S WHERE (A ; (B : C))+",
    "contiguous iteration of a sequence": "SELECT * FROM S WHERE (A ; B):+",
    "STRICT": "SELECT STRICT * FROM S WHERE A ; B",
    "STRICT with a filter": "SELECT STRICT * FROM S WHERE A AS a ; B FILTER a[v > 1]",
    "WITHIN n EVENTS": "SELECT * FROM S WHERE A ; B WITHIN 3 EVENTS",
    "WITHIN 0 EVENTS": "SELECT * FROM S WHERE A ; B WITHIN 0 EVENTS",
    "WITHIN n [attr]": "SELECT * FROM S WHERE A ; B WITHIN 3 [ts]",
    "WITHIN n [attr], partitioned":
        "SELECT * FROM S WHERE A AS a ; B FILTER a[v > 1] PARTITION BY [g] WITHIN 5 [ts]",
}


@pytest.mark.parametrize("text", UNSOUND.values(), ids=UNSOUND.keys())
def test_queries_that_count_skipped_events_have_no_condition(text: str) -> None:
    assert _rel(text) is None


def _ev(*specs: str) -> list[dict[str, Any]]:
    """``"A"``, ``"Z@-1"``: events of a type, with ``ts`` = position unless given after ``@``."""
    out = []
    for i, spec in enumerate(specs):
        t, _, ts = spec.partition("@")
        out.append({"type": t, "ts": int(ts) if ts else i})
    return out


WHY = {  # a stream where dropping the Z events (no query names Z) would change the result
    "contiguous sequence": ("SELECT * FROM S WHERE A : B", _ev("A", "Z", "B")),
    "contiguous iteration": ("SELECT * FROM S WHERE A ; B:+", _ev("A", "B", "Z", "B")),
    "STRICT": ("SELECT STRICT * FROM S WHERE A ; B", _ev("A", "Z", "B")),
    "WITHIN n EVENTS": ("SELECT * FROM S WHERE A ; B WITHIN 1 EVENTS", _ev("A", "Z", "B")),
}


@pytest.mark.parametrize("text, events", WHY.values(), ids=WHY.keys())
def test_those_queries_do_see_skipped_events(text: str, events: list[dict[str, Any]]) -> None:
    q = ceql.compile(text)
    kept = [i for i, e in enumerate(events) if e["type"] != "Z"]
    without = _outputs(q.run([events[i] for i in kept], time="ts"), back=kept)
    whole = _outputs(q.run(events, time="ts"))
    assert whole != without


@pytest.mark.parametrize("arrow", [False, True], ids=["rows", "arrow"])
@pytest.mark.parametrize("text", [UNSOUND["WITHIN n [attr]"],
                                  UNSOUND["WITHIN n [attr], partitioned"]])
def test_within_attr_checks_the_order_of_every_event(text: str, arrow: bool) -> None:
    """WITHIN n [attr] checks that attr never decreases on every event, even one of a type no
    run reads: dropping the Z would turn the error into a match. No ``time=``, so the error
    can only come from the window attribute."""
    events = [{**e, "g": 0, "v": 2} for e in _ev("A@0", "Z@-1", "B@1")]
    q = ceql.compile(text)

    def run(evs: list[dict[str, Any]]) -> list[Out]:
        if arrow:
            return _outputs(q.evaluator().feed(pa.Table.from_pylist(evs)))
        return _outputs(q.run(evs))

    assert [m[2] for m in run([events[0], events[2]])] == [(0, 1)]
    with pytest.raises(ceql.CeqlInputError, match=r"Event 1 is out of order: 'ts' goes back"):
        run(events)


class _FakeQuery:
    """A compiled query whose CEA is replaced: ``relevance`` reads only these two things."""

    def __init__(self, text: str, cea: CEA, atoms: AtomTable) -> None:
        self.ast = ceql.compile(text).ast
        self._parts = (atoms, cea)

    def automaton(self, type_key: str = "type",
                  stream_key: str = "stream") -> tuple[AtomTable, CEA]:
        return self._parts


def test_a_marking_transition_without_guard_makes_every_event_relevant() -> None:
    atoms = AtomTable()
    k = atoms.add(TypeIs("A"))
    guarded = Transition(0, GAtom(k), True, True, frozenset({"A"}), 1)
    skip = Transition(1, GTrue(), False, False, frozenset(), 1)
    anything = Transition(1, GTrue(), True, True, frozenset({"x"}), 2)
    text = "SELECT * FROM S WHERE A ; B"
    with_true = _FakeQuery(text, CEA(3, frozenset({2}), (guarded, skip, anything)), atoms)
    assert relevance(with_true) is None  # type: ignore[arg-type]
    # the non-marking TRUE loop alone does not count
    without = _FakeQuery(text, CEA(3, frozenset({1}), (guarded, skip)), atoms)
    assert relevance(without) == Relevance(GAtom(k), (TypeIs("A"),))  # type: ignore[arg-type]


SOUND_CLAUSES = {
    "time window": "WITHIN 3 SECONDS",
    "time window in parts": "WITHIN 1 MINUTE 30 SECONDS",
    "partition": "PARTITION BY [g]",
    "consume any": "CONSUME BY ANY",
    "consume partition": "PARTITION BY [g] CONSUME BY PARTITION",
    "limit": "LIMIT 2",
    "all of them": "PARTITION BY [g] WITHIN 2 SECONDS CONSUME BY PARTITION LIMIT 1",
}


@pytest.mark.parametrize("clauses", SOUND_CLAUSES.values(), ids=SOUND_CLAUSES.keys())
@pytest.mark.parametrize("strategy", ["", "ALL", "ANY", "NEXT", "LAST", "MAX"])
@pytest.mark.parametrize("select", ["*", "a", "NONE"])
def test_other_clauses_keep_the_condition(clauses: str, strategy: str, select: str) -> None:
    base = _rel("SELECT * FROM S WHERE A AS a ; B+ FILTER a[v > 1]")
    got = _rel(f"SELECT {strategy} {select} FROM S WHERE A AS a ; B+ FILTER a[v > 1] {clauses}")
    assert got is not None
    assert got == base


def test_the_condition_follows_type_and_stream_keys() -> None:
    rel = _rel("SELECT * FROM S, T WHERE S>A ; B", type_key="kind", stream_key="src")
    assert rel is not None
    table = _table(rel, type_key="kind", stream_key="src")
    assert _relevant(rel, table, {"kind": "A", "src": "S"})
    assert _relevant(rel, table, {"kind": "A"})
    assert not _relevant(rel, table, {"kind": "A", "src": "T"})
    assert not _relevant(rel, table, {"type": "A", "stream": "S"})
    assert _relevant(rel, table, {"kind": "B", "src": "T"})


# ---------------------------------------------------------------- exactly the conditions


def num(ev: Mapping[str, Any], name: str) -> float | None:
    """The numeric value of an attribute as the engine reads it (NaN, strings → None)."""
    v = ev.get(name)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return None if isinstance(v, float) and math.isnan(v) else v


def text_of(ev: Mapping[str, Any], name: str) -> str | None:
    v = ev.get(name)
    return v if isinstance(v, str) else None


def is_type(ev: Mapping[str, Any], *types: str) -> bool:
    return ev.get("type") in types


def in_stream(ev: Mapping[str, Any], name: str) -> bool:
    s = ev.get("stream")
    return s is None or s == name


def gt(ev: Mapping[str, Any], name: str, k: float) -> bool:
    v = num(ev, name)
    return v is not None and v > k


def lt(ev: Mapping[str, Any], name: str, k: float) -> bool:
    v = num(ev, name)
    return v is not None and v < k


def eq(ev: Mapping[str, Any], name: str, k: float | str) -> bool:
    v = text_of(ev, name) if isinstance(k, str) else num(ev, name)
    return v is not None and v == k


def ne(ev: Mapping[str, Any], name: str, k: float | str) -> bool:
    v = text_of(ev, name) if isinstance(k, str) else num(ev, name)
    return v is not None and v != k


Expected = Callable[[Mapping[str, Any]], bool]

CONDITIONS: dict[str, tuple[str, Expected]] = {
    "types of a sequence": (
        "SELECT * FROM S WHERE A ; B",
        lambda e: is_type(e, "A", "B")),
    "a type named twice": (
        "SELECT * FROM S WHERE A ; A+ ; A",
        lambda e: is_type(e, "A")),
    "a filter on one type only": (
        "SELECT * FROM S WHERE A+ ; B FILTER A[x > 1]",
        lambda e: (is_type(e, "A") and gt(e, "x", 1)) or is_type(e, "B")),
    "AND of filters on two variables": (
        "SELECT * FROM S WHERE (A AS a ; B AS b) FILTER a[x > 1] AND b[y = 'q']",
        lambda e: (is_type(e, "A") and gt(e, "x", 1)) or (is_type(e, "B") and eq(e, "y", "q"))),
    "OR of filters on two variables leaves both types free": (
        "SELECT * FROM S WHERE (A AS a ; B AS b) FILTER a[x > 1] OR b[y = 'q']",
        lambda e: is_type(e, "A", "B")),
    "one type, two variables, two conditions": (
        "SELECT * FROM S WHERE (A AS a ; A AS b) FILTER a[x > 1] AND b[x < 0]",
        lambda e: is_type(e, "A") and (gt(e, "x", 1) or lt(e, "x", 0))),
    "a variable over several types": (
        "SELECT * FROM S WHERE ((A ; B) AS v ; C) FILTER v[x > 0]",
        lambda e: (is_type(e, "A", "B") and gt(e, "x", 0)) or is_type(e, "C")),
    "nested filters": (
        "SELECT * FROM S WHERE ((A AS a ; B) FILTER a[x > 0]) AS v ; C FILTER v[y != 'p']",
        lambda e: ((is_type(e, "A") and gt(e, "x", 0) and ne(e, "y", "p"))
                   or (is_type(e, "B") and ne(e, "y", "p")) or is_type(e, "C"))),
    "NOT of a comparison is FALSE on NULL": (
        "SELECT * FROM S WHERE (A OR B) AS v FILTER v[NOT x = 1]",
        lambda e: is_type(e, "A", "B") and ne(e, "x", 1)),
    "OR inside brackets": (
        "SELECT * FROM S WHERE A AS a FILTER a[x > 1 OR y = 'q']",
        lambda e: is_type(e, "A") and (gt(e, "x", 1) or eq(e, "y", "q"))),
    "OR of two filters on one variable": (
        "SELECT * FROM S WHERE A AS a FILTER a[x > 1] OR a[x < 0]",
        lambda e: is_type(e, "A") and (gt(e, "x", 1) or lt(e, "x", 0))),
    "optional variable: its condition binds only its branch": (
        "SELECT * FROM S WHERE (A AS a OR B) FILTER a[x > 1]",
        lambda e: (is_type(e, "A") and gt(e, "x", 1)) or is_type(e, "B")),
    "IN RANGE, IN, LIKE": (
        "SELECT * FROM S WHERE A AS a ; B AS b ; C AS c "
        "FILTER a[x IN RANGE(0, 1)] AND b[y IN {'q', 'qq'}] AND c[y LIKE '^q']",
        lambda e: ((is_type(e, "A") and (v := num(e, "x")) is not None and 0 <= v <= 1)
                   or (is_type(e, "B") and text_of(e, "y") in ("q", "qq"))
                   or (is_type(e, "C") and (text_of(e, "y") or "").startswith("q")))),
    "NOT IN": (
        "SELECT * FROM S WHERE A AS a FILTER a[x NOT IN {0, 1}]",
        lambda e: is_type(e, "A") and num(e, "x") is not None and num(e, "x") not in (0, 1)),
    "stream-qualified types": (
        "SELECT * FROM S, T WHERE S>A ; T>B ; C",
        lambda e: ((is_type(e, "A") and in_stream(e, "S")) or (is_type(e, "B") and
                   in_stream(e, "T")) or is_type(e, "C"))),
    "arithmetic": (
        "SELECT * FROM S WHERE A AS a FILTER a[x * 2 > 1]",
        lambda e: is_type(e, "A") and gt(e, "x", 0.5)),
    "a filter inside one branch of OR": (
        "SELECT * FROM S WHERE ((A AS a ; B) FILTER a[x > 1]) OR C",
        lambda e: (is_type(e, "A") and gt(e, "x", 1)) or is_type(e, "B", "C")),
    "a filter over OR binds the branch that names its variable": (
        "SELECT * FROM S WHERE (A AS a ; B) OR (A ; C) FILTER a[x > 1]",
        lambda e: is_type(e, "A", "B", "C")),
}

GRID_VALUES: dict[str, list[Any]] = {
    "type": ["A", "B", "C", "D", None, "a"],
    "x": [None, math.nan, -1, 0, 1, 2, 1.5, 0.5, "1"],
    "y": [None, "q", "qq", "p", "", 3],
    "stream": [None, "S", "T", "U"],
}
_MISSING = object()


def _grid() -> list[dict[str, Any]]:
    rows = []
    names = list(GRID_VALUES)
    for values in itertools.product(*([*GRID_VALUES[n], _MISSING] for n in names)):
        rows.append({n: v for n, v in zip(names, values, strict=True) if v is not _MISSING})
    return rows


GRID = _grid()


@pytest.mark.parametrize("text, expected", CONDITIONS.values(), ids=CONDITIONS.keys())
def test_the_condition_is_the_disjunction_of_the_conditions(text: str,
                                                            expected: Expected) -> None:
    rel = _rel(text)
    assert rel is not None
    table = _table(rel)
    wrong = [e for e in GRID if _relevant(rel, table, e) != expected(e)]
    assert not wrong, f"{len(wrong)} events disagree, e.g. {wrong[:5]}"
    assert any(expected(e) for e in GRID) and not all(expected(e) for e in GRID)


def test_an_unsatisfiable_condition_makes_its_type_irrelevant() -> None:
    rel = _rel("SELECT * FROM S WHERE (A AS a ; B) FILTER a[x > 1] AND a[x < 0]")
    assert rel is not None
    table = _table(rel)
    # A needs x > 1 and x < 0 (never); B is still read by the (dead) second step
    assert not any(_relevant(rel, table, e) for e in GRID if e.get("type") == "A")


# ---------------------------------------------------------------- dropping changes nothing


def _unsound(q: A.Query) -> bool:
    """Our own reading of the rule: skipped events count."""
    def contiguous(f: A.Formula) -> bool:
        if isinstance(f, A.EventType):
            return False
        if isinstance(f, (A.Seq, A.Plus)) and f.contiguous:
            return True
        if isinstance(f, (A.As, A.Filter, A.Plus)):
            return contiguous(f.formula)
        return contiguous(f.left) or contiguous(f.right)
    return (q.strategy == "STRICT" or contiguous(q.where)
            or (q.within is not None and q.within.kind != "time"))


def _soundly(q: A.Query) -> A.Query:
    """``q`` with the unsound parts replaced: ``;`` for ``:``, ``+`` for ``:+``, ALL for STRICT,
    a time window for WITHIN n EVENTS / n [attr]."""
    def fix(f: A.Formula) -> A.Formula:
        if isinstance(f, A.EventType):
            return f
        if isinstance(f, A.Seq):
            return replace(f, left=fix(f.left), right=fix(f.right), contiguous=False)
        if isinstance(f, A.Plus):
            return replace(f, formula=fix(f.formula), contiguous=False)
        if isinstance(f, A.Or):
            return replace(f, left=fix(f.left), right=fix(f.right))
        assert isinstance(f, (A.As, A.Filter))
        return replace(f, formula=fix(f.formula))
    within = q.within
    if within is not None and within.kind != "time":
        within = A.Within("time", Fraction(within.amount))
    return replace(q, where=fix(q.where), within=within,
                   strategy="ALL" if q.strategy == "STRICT" else q.strategy)


Out = tuple[int, int, tuple[int, ...], tuple[Any, ...], tuple[tuple[str, tuple[int, ...]], ...]]


def _outputs(matches: Any, back: list[int] | None = None) -> list[Out]:
    """Every match as (end, start, positions, partition, variables), positions mapped through
    ``back`` (kept index -> original index)."""
    def m_(p: int) -> int:
        return p if back is None else back[p]
    return [(m_(m.end_position), m_(m.start_position), tuple(m_(p) for p in m.positions),
             tuple(m.partition),
             tuple(sorted((v, tuple(m_(p) for p in ps)) for v, ps in m.variables.items())))
            for m in matches]


@st.composite
def _noisy_cases(draw: st.DrawFn) -> Case:
    """Like ``cases()``, but always with events of a type the query does not name."""
    q = draw(queries())
    types = (*sorted(_type_names(q.where)), "D")
    return q, draw(events_lists(types=types)), draw(st.sampled_from([None, "ts"]))


def _check_dropping(compiled: ceql.Query, rel: Relevance, events: list[dict[str, Any]],
                    time: str | None, label: str) -> None:
    table = _table(rel)
    kept = [i for i, e in enumerate(events) if _relevant(rel, table, e)]
    whole = _outputs(compiled.run(events, time=time))
    dropped = _outputs(compiled.run([events[i] for i in kept], time=time), back=kept)
    note(f"kept:    {kept}")
    note(f"whole:   {whole}")
    note(f"dropped: {dropped}")
    assert dropped == whole
    # and directly: no irrelevant event is ever the start, the end or in a match
    used = {p for end, start, ps, _, vs in whole for p in (end, start, *ps)}
    used |= {p for *_, vs in whole for _, ps in vs for p in ps}
    assert used <= set(kept)
    gone = set(range(len(events))) - set(kept)
    target(float(sum(any(start < p < end for p in gone) for end, start, *_ in whole)),
           label=f"matches spanning a dropped event ({label})")


@PROFILE
@given(st.one_of(cases(), _noisy_cases()))
def test_dropping_irrelevant_events_changes_no_match(case: Case) -> None:
    """On a random query (its unsound parts replaced, see ``_soundly``) and stream, and on the
    same stream with a copy of each event under a type the query does not name after it."""
    q0, events, time = case
    assert (relevance(ceql.compile(format_query(q0))) is None) == _unsound(q0), \
        format_query(q0)
    q = _soundly(q0)
    if q.within is not None:
        time = "ts"  # removing events must not change the times of the others
    text = format_query(q)
    note(f"query:\n{text}")
    for i, e in enumerate(events):
        note(f"  {i}: {e}")
    note(f"time={time!r}")
    compiled = ceql.compile(text)
    rel = relevance(compiled)
    assert rel is not None
    _check_dropping(compiled, rel, events, time, "stream")
    noisy = [x for e in events for x in (e, {**e, "type": "Z"})]
    note("with noise:")
    _check_dropping(compiled, rel, noisy, time, "with noise")


SEMANTICS_STOCK = [
    {"type": "SELL", "name": "MSFT", "price": 101}, {"type": "SELL", "name": "MSFT", "price": 102},
    {"type": "SELL", "name": "INTL", "price": 80}, {"type": "BUY", "name": "INTL", "price": 80},
    {"type": "SELL", "name": "AMZN", "price": 1900}, {"type": "SELL", "name": "INTL", "price": 81},
    {"type": "SELL", "name": "AMZN", "price": 1920},
]


@pytest.mark.parametrize("tail", ["", "CONSUME BY ANY", "LIMIT 1", "WITHIN 4 SECONDS"])
@pytest.mark.parametrize("strategy", ["ALL", "NEXT", "LAST", "MAX"])
def test_the_worked_example_without_its_irrelevant_events(tail: str, strategy: str) -> None:
    text = (f"SELECT {strategy} * FROM Stock WHERE SELL AS msft ; SELL AS intel ; SELL AS amzn "
            "FILTER msft[name = 'MSFT'] AND msft[price > 100] AND intel[name = 'INTL'] "
            f"AND amzn[name = 'AMZN'] AND amzn[price < 2000] {tail}")
    events = [{**e, "ts": i} for i, e in enumerate(SEMANTICS_STOCK)]
    compiled = ceql.compile(text)
    rel = relevance(compiled)
    assert rel is not None
    table = _table(rel)
    kept = [i for i, e in enumerate(events) if _relevant(rel, table, e)]
    assert kept == [0, 1, 2, 4, 5, 6]  # the BUY goes
    whole = _outputs(compiled.run(events, time="ts"))
    assert whole
    assert _outputs(compiled.run([events[i] for i in kept], time="ts"), back=kept) == whole
