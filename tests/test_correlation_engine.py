"""The register runtime's own plans: the in-place update with its hash index gives what the
full rebuild gives, implied keys are a plan only, and ranked strategies stop with a clear error
instead of growing without bound."""

from __future__ import annotations

import random
import warnings
from typing import Any

import pytest

import ceql
import ceql.runtime.correlated as correlated
from ceql.automata import registers
from ceql.automata.cea import CEA, Transition
from ceql.predicates import GAtom, GTrue, GuardTree, GUnless

warnings.simplefilter("ignore", ceql.UnboundedOutputWarning)

QUERIES = [
    "SELECT * FROM S WHERE A AS a ; A AS b ; A AS c FILTER b[src = a.dst] AND c[src = b.dst] "
    "WITHIN 30 EVENTS",
    "SELECT * FROM S WHERE A AS a ; B AS b FILTER b[p > a.p] PARTITION BY [k] WITHIN 5 EVENTS",
    "SELECT * FROM S WHERE (A AS a)+ ; B AS b FILTER b[src = a.dst] WITHIN 6 EVENTS",
    "SELECT * FROM S WHERE A AS a ; (B AS b)+ FILTER b[src = a.dst] AND [COUNT(b) >= 2] "
    "WITHIN 8 EVENTS CONSUME BY ANY",
]


def _events(n: int, seed: int) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    return [{"type": rnd.choice("AB"), "src": rnd.randrange(4), "dst": rnd.randrange(4),
             "p": rnd.randrange(10), "k": rnd.randrange(2)} for _ in range(n)]


def _run(text: str, events: list[dict[str, Any]]) -> list[Any]:
    return sorted(m.key() for m in ceql.compile(text).run(events))


@pytest.mark.parametrize("text", QUERIES)
def test_in_place_runs_equal_the_full_rebuild(text: str, monkeypatch: Any) -> None:
    events = _events(400, 3)
    fast = _run(text, events)
    plan = registers.RegisterPlan(ceql.compile(text).cea(), False)
    assert plan.in_place
    init = registers.RegisterPlan.__init__

    def rebuild(self: registers.RegisterPlan, *args: Any) -> None:
        init(self, *args)
        self.in_place = False

    monkeypatch.setattr(registers.RegisterPlan, "__init__", rebuild)
    slow = _run(text + " ", events)  # another text: not the cached query
    assert fast == slow
    assert fast


def test_an_equality_with_an_earlier_event_is_a_hash_lookup() -> None:
    q = ceql.compile(QUERIES[0])
    plan = registers.RegisterPlan(q.cea(), False)
    gates = {g for s in range(q.cea().n_states) for g in plan.state_gates(s)}
    assert {g.attr for g in gates} == {"src"}


def test_an_implied_key_runs_per_value_but_is_not_reported() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A AS x ; B AS y FILTER y[id = x.id]")
    assert q.plan.partition_by == ("id",) and q.partition_by == ()
    assert q.implied_key() is not None
    ms = list(q.run([{"type": "A", "id": 1}, {"type": "A", "id": 2}, {"type": "B", "id": 1}]))
    assert [(m.positions, m.partition) for m in ms] == [((0, 2), ())]


def test_ranked_strategies_stop_before_growing_without_bound(monkeypatch: Any) -> None:
    monkeypatch.setattr(correlated, "RANKED_MATCHES", 1000)
    # 1 0 3 2 5 4 …: a rising trend takes one price of each pair, 2^k maximal ones
    events = [{"type": "B", "price": 2 * (i // 2) + 1 - i % 2} for i in range(40)]
    q = ceql.compile("SELECT MAX * FROM S WHERE (B AS b)+ FILTER b[price > PREV(price)]")
    with pytest.raises(ceql.CeqlResourceError) as err:
        list(q.run(events))
    assert str(err.value).startswith(
        "SELECT MAX with conditions between events ranks every complex event ending at an "
        "event before WITHIN cuts (as the semantics asks), and this evaluation reached ")
    assert str(err.value).endswith("or raise ceql.runtime.correlated.RANKED_MATCHES.")
    # a rising stream has one maximal trend per end: no cap reached
    rising = [{"type": "B", "price": p} for p in range(40)]
    assert [m.positions for m in q.run(rising)] == [tuple(range(j + 1)) for j in range(40)]
    monkeypatch.setattr(correlated, "RANKED_RUNS", 10)
    q = ceql.compile("SELECT MAX * FROM S WHERE A AS a ; B AS b FILTER b[p > a.p]")
    with pytest.raises(ceql.CeqlResourceError, match="partial matches in a partition"):
        list(q.run([{"type": "A", "p": i} for i in range(20)]))


def _rising_next(ps: list[int], j: int) -> tuple[int, ...]:
    """NEXT's rising trend ending at ``j``: the earliest start below ``ps[j]``, then each
    time the earliest later price between the last one and ``ps[j]``."""
    out = []
    low = None
    for i in range(j):
        if (low is None or ps[i] > low) and ps[i] < ps[j]:
            out.append(i)
            low = ps[i]
    return (*out, j)


def _rising_last(ps: list[int], j: int) -> tuple[int, ...]:
    """LAST's: from ``j`` back, each time the latest earlier price below the last one."""
    out = [j]
    for i in range(j - 1, -1, -1):
        if ps[i] < ps[out[-1]]:
            out.append(i)
    return tuple(reversed(out))


@pytest.mark.parametrize("strategy", ["NEXT", "LAST"])
def test_next_and_last_keep_one_chain_per_run(monkeypatch: Any, strategy: str) -> None:
    # 2^400 rising subsequences: ranking them by enumeration would hit the cap at once
    monkeypatch.setattr(correlated, "RANKED_MATCHES", 1000)
    rnd = random.Random(7)
    ps = [rnd.randrange(60) for _ in range(400)]
    q = ceql.compile(f"SELECT {strategy} * FROM S WHERE (B AS b)+ "
                     "FILTER b[price > PREV(price)]")
    got = [m.positions for m in q.run([{"type": "B", "price": p} for p in ps])]
    want = _rising_next if strategy == "NEXT" else _rising_last
    assert got == [want(ps, j) for j in range(len(ps))]


def test_warnings_read_match_conditions_and_implied_keys() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ceql.compile("SELECT * FROM S WHERE T AS x ; H AS y FILTER y[id = x.id]")
        assert caught == []  # runs per id, as PARTITION BY [id] would
        ceql.compile("SELECT * FROM S WHERE (B AS b)+ FILTER [FIRST(b.s) LIKE '%a'] "
                     "WITHIN 5 EVENTS")
    assert [type(w.message) for w in caught] == [ceql.LikePatternWarning]


def test_a_state_ends_its_runs_only_for_an_event_no_self_loop_lets_by() -> None:
    b, c = GAtom(0), GAtom(1)  # class bit 1: atom 0 TRUE; bit 4: atom 1 TRUE
    x = frozenset({"x"})

    def plan(*loops: GuardTree) -> registers.RegisterPlan:
        ts = [Transition(0, GTrue(), True, True, x, 1), Transition(1, GTrue(), True, True, x, 2)]
        ts += [Transition(1, g, False, False, frozenset(), 1) for g in loops]
        return registers.RegisterPlan(CEA(3, frozenset({2}), tuple(ts)), False)

    assert plan().kills[1] is None and plan(GTrue(), GUnless(b)).kills[1] is None
    one = plan(GUnless(b)).kills[1]
    assert one is not None and one(1) and not one(4)
    both = plan(GUnless(b), GUnless(c)).kills[1]  # ends runs only when b and c both hold
    assert both is not None and both(1 | 4) and not both(1) and not both(4)
