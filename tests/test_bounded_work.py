"""Work stays bounded under LIMIT and WITHIN (issue 28 item 3), counted — never timed.

* LIMIT n cuts the enumeration, not only the output: the matches built per end position are
  at most n (before, a spine of unions was walked to its end before LIMIT cut, so
  ``A+ ; B LIMIT 1`` built every match below each B: cubic work in the stream).
* With conditions between events, LIMIT cuts the enumeration too, and matches stream in
  chunks, wherever no complex event can come from two runs (``RegisterPlan.one_path``):
  before, every match of an end was collected to remove duplicates, so ``A+ AS a ; B AS b
  FILTER b[v > a.v] LIMIT 1`` built 2^k matches for one, and a long correlated chain held
  every match of an end in memory.
* Runs with registers are capped per partition (``MAX_RUNS``): an aggregate over an iterated
  variable (``SUM(a.v)`` over ``A+ AS a``) has a run per distinct sum, exponentially many in
  the window; before, ``WITHIN 20000 EVENTS`` grew to gigabytes and ended in ``MemoryError``.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

import ceql
import ceql.runtime.correlated as correlated
import ceql.runtime.enumeration as enumeration
from ceql.automata.registers import RegisterPlan

warnings.simplefilter("ignore", ceql.UnboundedOutputWarning)


def linear(counts: list[int]) -> bool:
    """Doubling the input at most doubles the count (with slack for the constant part)."""
    return all(b <= 2 * a + 64 for a, b in itertools.pairwise(counts))


MANY = 200_000  #: matches built that show the work is not bounded (the test fails at once)


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many matches the enumerator builds (``[count]``), wherever LIMIT cuts them."""
    count = [0]
    new = enumeration._new

    def counting_new(cls: type) -> Any:
        count[0] += 1
        if count[0] > MANY:
            raise AssertionError(f"{count[0]} matches built and still enumerating")
        return new(cls)

    monkeypatch.setattr(enumeration, "_new", counting_new)
    yield count


def alternating(n: int) -> list[dict[str, Any]]:
    return [{"type": "AB"[i % 2], "v": i} for i in range(n)]


@pytest.mark.parametrize("text", [
    "SELECT * FROM S WHERE A+ ; B LIMIT 1",
    "SELECT * FROM S WHERE A+ ; B LIMIT 3",
    "SELECT * FROM S WHERE (A OR B)+ ; B LIMIT 2",
    "SELECT * FROM S WHERE A+ ; B WITHIN 400 EVENTS LIMIT 1",
])
def test_limit_cuts_the_enumeration(built: list[int], text: str) -> None:
    """Matches built grow linearly with the events (at most LIMIT per end position)."""
    q = ceql.compile(text)
    limit = q.ast.limit
    assert limit is not None
    counts = []
    for n in (100, 200, 400, 800):
        built[0] = 0
        out = list(q.run(alternating(n)))
        assert len(out) <= limit * n
        assert built[0] <= limit * n
        counts.append(built[0])
    assert linear(counts), counts


@pytest.mark.parametrize("text", [
    "SELECT * FROM S WHERE A+ ; B",
    "SELECT * FROM S WHERE (A OR B)+ ; B WITHIN 9 EVENTS",
    "SELECT * FROM S WHERE A ; (A OR B)+ ; B",
])
@pytest.mark.parametrize("limit", [0, 1, 2, 5, 40])
def test_limit_keeps_the_first_matches_of_each_end(text: str, limit: int) -> None:
    """LIMIT n gives, per end position, the first n matches of the full enumeration."""
    events = alternating(14)
    full: dict[int, list[Any]] = {}
    for m in ceql.compile(text).run(events):
        full.setdefault(m.positions[-1], []).append(m.positions)
    cut: dict[int, list[Any]] = {}
    for m in ceql.compile(f"{text} LIMIT {limit}").run(events):
        cut.setdefault(m.positions[-1], []).append(m.positions)
    assert cut == {k: v[:limit] for k, v in full.items() if limit}


def chain(k: int, window: int) -> str:
    """``k`` events of one type with rising values, as a chain of conditions."""
    names = " ; ".join(f"A AS a{i}" for i in range(1, k + 1))
    rising = " AND ".join(f"a{i}[v > a{i - 1}.v]" for i in range(2, k + 1))
    return f"SELECT * FROM S WHERE {names} FILTER {rising} WITHIN {window} EVENTS"


@pytest.mark.parametrize(("text", "sizes"), [
    ("SELECT * FROM S WHERE A+ AS a ; B AS b FILTER b[v > a.v] LIMIT 1", (20, 40, 80)),
    ("SELECT * FROM S WHERE A+ AS a ; B AS b FILTER b[v > a.v] WITHIN 30 EVENTS LIMIT 2",
     (50, 100, 200)),
    (chain(12, 30) + " LIMIT 1", (30, 60, 120)),
])
def test_limit_cuts_the_enumeration_of_register_runs(built: list[int], text: str,
                                                     sizes: tuple[int, ...]) -> None:
    q = ceql.compile(text)
    limit = q.ast.limit
    assert limit is not None
    counts = []
    for n in sizes:
        built[0] = 0
        events = alternating(n) if "B" in text else [{"type": "A", "v": i} for i in range(n)]
        out = list(q.run(events))
        assert out
        assert built[0] <= limit * n
        counts.append(built[0])
    assert linear(counts), counts


def test_register_matches_stream_in_chunks(built: list[int]) -> None:
    """The 12-variable rising chain over rising values: C(p-1, 11) matches end at position
    p; a consumer that reads 30 000 of them had at most one chunk more built, not every
    match of the ends it reached."""
    q = ceql.compile(chain(12, 100))
    got = 0
    for _ in q.evaluator().iter_feed([{"type": "A", "v": i} for i in range(40)]):
        got += 1
        if got == 30_000:
            break
    assert built[0] <= got + enumeration.CHUNK


@pytest.mark.parametrize(("where", "one"), [
    ("A+ AS a ; B AS b FILTER b[v > a.v]", True),
    ("A AS a1 ; A AS a2 ; A AS a3 FILTER a2[v > a1.v] AND a3[v > a2.v]", True),
    ("A+ AS a ; A AS b FILTER b[v > a.v]", True),
    # two paths for A then B (the labels differ; the enumerator joins them)
    ("((A AS x ; B AS b) OR (A AS y ; B AS b)) FILTER b[v > x.v]", False),
    # a conjunction's two sides can mark one event in either order
    ("(A AS a ; B AS b) AND (A AS c)+ FILTER b[v > c.v]", False),
])
def test_one_path_per_complex_event(where: str, one: bool) -> None:
    plan = ceql.compile(f"SELECT * FROM S WHERE {where}").evaluator()._ev.core.plan
    assert plan is not None
    assert plan.one_path is one


@pytest.mark.parametrize("where", [
    "((A AS x ; B AS b) OR (A AS y ; B AS b)) FILTER b[v > x.v]",
    "(A AS a ; B AS b) AND (A AS c)+ FILTER b[v > c.v]",
    "(A OR B)+ AS a ; B AS b FILTER b[v > a.v]",
])
@pytest.mark.parametrize("limit", ["", " LIMIT 1", " LIMIT 3"])
def test_duplicates_are_still_removed(where: str, limit: str) -> None:
    """Where two runs can give one complex event, it is output once, bindings joined."""
    events = [{"type": "ABAB"[i % 4], "v": i} for i in range(12)]
    out = list(ceql.compile(f"SELECT * FROM S WHERE {where}{limit}").run(events))
    keys = [m.positions for m in out]
    assert keys
    assert len(keys) == len(set(keys))
    if "AS y" in where:  # both runs' bindings of the A event are shown
        assert all(m.variables["x"] == m.variables["y"] for m in out)


BUDGET = 300


class TooMuchWork(AssertionError):
    pass


@pytest.fixture
def moves(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Register updates counted (``[count]``), with ``MAX_RUNS`` set to :data:`BUDGET`; past
    100 updates a run allowed the work is unbounded and the test fails at once."""
    count = [0]
    advance = RegisterPlan.advance

    def counting_advance(self: RegisterPlan, *args: Any) -> Any:
        count[0] += 1
        if count[0] > 100 * BUDGET:
            raise TooMuchWork(f"{count[0]} register updates and still running")
        return advance(self, *args)

    monkeypatch.setattr(RegisterPlan, "advance", counting_advance)
    monkeypatch.setattr(correlated, "MAX_RUNS", BUDGET, raising=False)
    yield count


def amounts(n: int, seed: int = 1) -> list[dict[str, Any]]:
    """``A`` events with distinct positive amounts (every subset its own sum), a ``B`` each
    tenth event."""
    return [{"type": "B" if i % 10 == 9 else "A", "v": 1 + 7 * i + seed, "k": seed}
            for i in range(n)]


@pytest.mark.parametrize("where", [
    "A+ AS a ; B",  # runs updated in place
    "A:+ AS a ; B",  # contiguity: every run visited by each event
    "(A AS a)+ ; B AS b",
])
@pytest.mark.parametrize("agg", ["SUM(a.v) > 1e9", "AVG(a.v) < 0"])
def test_runs_per_distinct_aggregate_stop_at_the_budget(moves: list[int], where: str,
                                                        agg: str) -> None:
    q = ceql.compile(f"SELECT * FROM S WHERE {where} FILTER [{agg}] WITHIN 20000 EVENTS")
    with pytest.raises(ceql.CeqlResourceError, match="MAX_RUNS") as err:
        list(q.run(amounts(2000)))
    assert "in one partition" in str(err.value)
    assert moves[0] <= 10 * BUDGET


def test_the_run_budget_is_per_partition_and_names_the_key(moves: list[int]) -> None:
    q = ceql.compile("SELECT * FROM S WHERE A+ AS a ; B FILTER [SUM(a.v) > 1e9] "
                     "PARTITION BY [k] WITHIN 20000 EVENTS")
    # six A events a key: at most 2^6 sums each, under the budget however many keys
    small = [e for seed in range(40) for e in amounts(7, seed)]
    assert list(q.run(small)) == []
    with pytest.raises(ceql.CeqlResourceError, match="the partition \\(3,\\)"):
        list(q.run([*small, *amounts(40, 3)]))


def test_runs_with_few_registers_stay_under_the_budget(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """One run per distinct earlier value in the window (polynomial): a window holding fewer
    values than the budget never hits it, and the output is the unbudgeted one."""
    q = ceql.compile("SELECT * FROM S WHERE A AS a ; B AS b FILTER b[v > a.v] "
                     "WITHIN 100 EVENTS")
    events = [{"type": "AB"[i % 2], "v": (i * 37) % 1000} for i in range(1000)]
    want = [m.positions for m in q.run(events)]
    monkeypatch.setattr(correlated, "MAX_RUNS", 60)
    assert [m.positions for m in q.run(events)] == want
