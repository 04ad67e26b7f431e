"""NEXT, LAST and MAX with conditions between events choose without the ALL set: the work of the
register runtime grows polynomially with the events of a partition, counted (never timed) as
run moves, live runs and chains compared; and where the choice is inherently exponential (an
aggregate per subset) compiling says so.

Before these fixes an iterated variable read by another variable's comparison kept every
subset's records apart (``(login AS l ; purchase AS p) AND (cart AS c)+ FILTER c[ts > l.ts]``
raised ``CeqlResourceError`` at 16 carts) and MAX enumerated every complex event to rank.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

import ceql
import ceql.runtime.correlated as correlated
from ceql.automata.registers import RegisterPlan
from ceql.predicates.between import compile_condition
from ceql.predicates.summary import record_reducer
from reference import reference_matches

warnings.simplefilter("ignore", ceql.UnboundedOutputWarning)

CLICKS = ("SELECT {s} * FROM clicks WHERE (login AS l ; purchase AS p) AND (cart AS c)+ "
          "FILTER c[ts > l.ts] PARTITION BY [user] WITHIN 30 MINUTES")


@dataclass
class Work:
    moves: int = 0  # register updates: a run taking a marked transition on an event
    peak_runs: int = 0  # live (state, registers) runs of the partition, at most
    compared: int = 0  # MAX: chains compared for inclusion
    matches: int = 0


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Work]:
    work = Work()
    advance = RegisterPlan.advance
    leave = correlated.RegisterRuns._leave
    differ = correlated.differ

    def counting_advance(self: RegisterPlan, *args: Any) -> Any:
        work.moves += 1
        return advance(self, *args)

    def counting_leave(self: Any, P: Any, states: Any, *args: Any) -> Any:
        work.peak_runs = max(work.peak_runs, len(states))
        return leave(self, P, states, *args)

    def counting_differ(a: Any, b: Any) -> int:
        work.compared += 1
        return differ(a, b)

    monkeypatch.setattr(RegisterPlan, "advance", counting_advance)
    monkeypatch.setattr(correlated.RegisterRuns, "_leave", counting_leave)
    monkeypatch.setattr(correlated, "differ", counting_differ)  # as correlated reads it
    yield work


def clicks(n: int, layout: str) -> list[dict[str, Any]]:
    """One user's login, ``n`` carts and a purchase: carts after the login, before it, or
    half before and half after (times rise)."""
    login = {"type": "login", "user": 1}
    carts = [{"type": "cart", "user": 1} for _ in range(n)]
    order = ([login, *carts] if layout == "after" else [*carts, login] if layout == "before"
             else [*carts[:n // 2], login, *carts[n // 2:]])
    events = [*order, {"type": "purchase", "user": 1}]
    return [dict(e, ts=t) for t, e in enumerate(events)]


def run(text: str, events: list[dict[str, Any]], work: Work) -> list[tuple[int, ...]]:
    out = [m.positions for m in ceql.compile(text).run(events, time="ts")]
    work.matches = len(out)
    return out


def polynomial(counts: list[int], degree: int) -> bool:
    """Doubling the input at most multiplies the count by ``2 ** degree`` (with slack for
    the constant part): exponential growth fails this at once (2^20 for 20 more events)."""
    return all(b <= (2 ** degree) * a + 64 for a, b in itertools.pairwise(counts))


@pytest.mark.parametrize("strategy", ["NEXT", "LAST", "MAX"])
@pytest.mark.parametrize("layout", ["after", "before", "mixed"])
def test_ranked_clicks_work_grows_polynomially(counted: Work, strategy: str,
                                               layout: str) -> None:
    moves, runs, compared = [], [], []
    for n in (10, 20, 40):
        counted.moves = counted.peak_runs = counted.compared = 0
        got = run(CLICKS.format(s=strategy), clicks(n, layout), counted)
        ts = [e["ts"] for e in clicks(n, layout)]
        login = next(i for i, e in enumerate(clicks(n, layout)) if e["type"] == "login")
        carts = tuple(i for i, t in enumerate(ts) if i != login and i < len(ts) - 1
                      and t > ts[login])
        # every cart after the login is in the one match (NEXT, LAST, MAX agree here)
        assert got == ([tuple(sorted((login, *carts, len(ts) - 1)))] if carts else [])
        moves.append(counted.moves)
        runs.append(counted.peak_runs)
        compared.append(counted.compared)
    assert polynomial(moves, 3), moves
    assert polynomial(runs, 1), runs
    assert polynomial(compared, 3), compared


def test_all_clicks_without_output_do_polynomial_work(counted: Work) -> None:
    """Carts before the login: no match, and no longer a run per subset of carts."""
    moves = []
    for n in (10, 20, 40):
        counted.moves = 0
        assert run(CLICKS.format(s="ALL"), clicks(n, "before"), counted) == []
        moves.append(counted.moves)
    assert polynomial(moves, 2), moves


def test_all_clicks_output_is_every_subset_of_carts(counted: Work) -> None:
    # the runs merged: the output is still all 2^n - 1 non-empty subsets of the carts
    got = run(CLICKS.format(s="ALL"), clicks(8, "after"), counted)
    assert len(got) == 2 ** 8 - 1
    assert counted.moves <= 8 * 8 + 64


@pytest.mark.parametrize("strategy", ["ALL", "NEXT", "LAST", "MAX"])
def test_clicks_equal_the_reference(strategy: str, counted: Work) -> None:
    text = CLICKS.format(s=strategy).replace("WITHIN 30 MINUTES", "WITHIN 8 SECONDS")
    for layout in ("after", "before", "mixed"):
        events = clicks(7, layout)
        for i, e in enumerate(events):  # some carts share a time with the login
            if e["type"] == "cart" and i % 3 == 0:
                e["ts"] = events[i - 1]["ts"] if i else 0
        events.sort(key=lambda e: e["ts"])
        q = ceql.compile(text)
        got = sorted(m.key() for m in q.run(events, time="ts"))
        want = sorted(reference_matches(q.ast, events, time="ts"))
        assert got == want, layout


@pytest.mark.parametrize(("strategy", "agg"), [
    (s, a) for s in ("NEXT", "LAST", "MAX")
    for a in ("COUNT(b) >= 2", "MIN(b.price) > a.price", "MAX(b.price) > a.price",
              "LAST(b.price) > a.price")
    if (s, a) != ("MAX", "COUNT(b) >= 2")  # exponential: test_exponential_choice_warns…
])
def test_aggregates_with_few_values_stay_polynomial(counted: Work, strategy: str,
                                                    agg: str) -> None:
    text = (f"SELECT {strategy} * FROM S WHERE A AS a ; (B AS b)+ ; C AS c FILTER [{agg}]")
    moves = []
    for n in (10, 20, 40):
        counted.moves = 0
        events = ([{"type": "A", "price": 0}]
                  + [{"type": "B", "price": (7 * i) % 11 - 3} for i in range(n)]
                  + [{"type": "C", "price": 0}])
        assert len(list(ceql.compile(text).run(events))) <= 1
        moves.append(counted.moves)
    assert polynomial(moves, 3), moves


# ---------------------------------------------------------------- the exponential cases

AVG_MAX = "SELECT MAX * FROM S WHERE A AS a ; (B AS b)+ ; C AS c FILTER [AVG(b.price) > a.price]"


@pytest.mark.parametrize(("text", "named"), [
    (AVG_MAX, "AVG(b.price) (line 1, column 63)"),
    (AVG_MAX.replace("MAX", "NEXT", 1).replace("AVG", "SUM"), "SUM(b.price) (line 1, column 64)"),
    (AVG_MAX.replace("MAX", "LAST", 1), "AVG(b.price) (line 1, column 64)"),
    ("SELECT MAX * FROM S WHERE A ; (B AS b)+ FILTER [COUNT(b) >= 2]",
     "COUNT(b) (line 1, column 49)"),
])
def test_exponential_choice_warns_and_explains(text: str, named: str) -> None:
    with pytest.warns(ceql.ExponentialChoiceWarning) as record:
        ceql.compile(text)
    [w] = [r for r in record if r.category is ceql.ExponentialChoiceWarning]
    message = str(w.message)
    assert named in message
    assert "an iteration (+) binds to any subset of its events" in message
    assert "SELECT ALL or ANY with WITHIN" in message
    assert w.filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ceql.ExponentialChoiceWarning)
        assert "exponential choice: SELECT " in str(ceql.explain(text))


@pytest.mark.parametrize("text", [
    AVG_MAX.replace("MAX", "ALL", 1),  # ALL: the output itself is what it is
    AVG_MAX.replace("AVG", "MIN"),  # few distinct values
    "SELECT LAST * FROM S WHERE A ; (B AS b)+ FILTER [COUNT(b) >= 2]",
    "SELECT MAX * FROM S WHERE A AS a ; (B AS b):+ ; C FILTER [AVG(b.price) > a.price]",
    "SELECT MAX * FROM S WHERE A AS a ; B AS b ; C FILTER [AVG(b.price) > a.price]",
    CLICKS.format(s="LAST"),
])
def test_no_exponential_choice_warning(text: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", ceql.ExponentialChoiceWarning)
        ceql.compile(text)
    assert "exponential choice" not in str(ceql.explain(text))


def test_the_warned_query_still_stops_with_a_resource_error(monkeypatch: Any) -> None:
    monkeypatch.setattr(correlated, "RANKED_RUNS", 500)
    events = ([{"type": "A", "price": 0}] + [{"type": "B", "price": 2 ** i} for i in range(12)]
              + [{"type": "C", "price": 0}])
    with pytest.warns(ceql.ExponentialChoiceWarning):
        q = ceql.compile(AVG_MAX)
    with pytest.raises(ceql.CeqlResourceError, match="RANKED_RUNS"):
        list(q.run(events))


# ---------------------------------------------------------------- the summaries themselves

def _reducer(text: str, var: str) -> Any:
    q = ceql.compile(f"SELECT * FROM S WHERE A AS a ; (B AS b)+ ; C AS c FILTER {text}")
    plan = RegisterPlan(q.cea(), False)
    [c] = plan.scopes[0].conditions
    assert compile_condition(c.leaf).quantified == c.quantified
    return record_reducer(c, var)


def _fold(reduce: Any, records: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    kept: tuple[Any, ...] = ()
    for r in records:
        kept = reduce(kept, r) if kept else (r,)
    return kept


def test_a_comparison_keeps_the_extreme_record() -> None:
    assert _fold(_reducer("b[x > a.x]", "b"), [(3,), (1,), (2,), (1,)]) == ((1,),)
    assert _fold(_reducer("b[x < a.x]", "b"), [(3,), (1,), (5,)]) == ((5,),)
    assert _fold(_reducer("a[x > b.x]", "b"), [(3,), (1,), (5,)]) == ((5,),)
    # arithmetic on the variable's side: the extreme of x + 1, kept as its record
    assert _fold(_reducer("b[x + 1 > a.y]", "b"), [(3,), (-2,), (0,)]) == ((-2,),)
    # a conjunction: the records each comparison needs
    assert _fold(_reducer("b[x > a.x AND y < a.y]", "b"),
                 [(5, 1), (2, 0), (4, 9), (7, 3)]) == ((2, 0), (4, 9))


def test_an_equality_keeps_one_value_or_a_conflict() -> None:
    eq = _reducer("b[x = a.x]", "b")
    assert _fold(eq, [(2,), (2.0,), (2,)]) == ((2,),)
    assert _fold(eq, [(2,), (3,), (4,), (2,)]) == ((2,), (3,))


def test_null_and_kinds() -> None:
    gt = _reducer("b[x > a.x]", "b")
    # a NULL fails every partner: kept alone, and for good
    assert _fold(gt, [(3,), (None,), (1,)]) == ((None,),)
    # values of two kinds: the smallest of each
    assert _fold(gt, [(3,), ("b",), (1,), ("a",)]) == (("a",), (1,)) or \
        _fold(gt, [(3,), ("b",), (1,), ("a",)]) == ((1,), ("a",))


def test_what_is_not_summarized() -> None:
    assert _reducer("b[x != a.x]", "b") is None
    assert _reducer("b[x > a.x OR x < 0]", "b") is None
    assert _reducer("b[x > a.x + x]", "b") is None  # b on both sides
    assert _reducer("[AVG(b.x) > a.x]", "b") is None  # deferred
