"""Golden shapes of conditions between events: small hand-built streams whose outputs were
computed BY HAND (the comments show the reasoning), checked against the brute-force reference
and against the engine (``ceql.compile(text).run(events, ...)``).

Every expectation is an exact set of complex events (their positions) per end position.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import pytest

import ceql
from ceql.frontends.ceql import parse
from reference import reference_matches

Outputs = dict[int, set[tuple[int, ...]]]


def engine(text: str, events: Sequence[dict[str, Any]], **kw: Any) -> Outputs:
    """end position → set of position tuples, checking the basic invariants of the output."""
    out: dict[int, set[tuple[int, ...]]] = defaultdict(set)
    seen = set()
    ends = []
    for m in ceql.compile(text).run(events, **kw):
        key = (m.end_position, m.start_position, tuple(m.positions), tuple(m.partition))
        assert key not in seen, f"{m} output twice"
        seen.add(key)
        ends.append(m.end_position)
        out[m.end_position].add(tuple(m.positions))
    assert ends == sorted(ends), "outputs must come grouped by end position, in stream order"
    return dict(out)


def reference(text: str, events: Sequence[dict[str, Any]], **kw: Any) -> Outputs:
    out: dict[int, set[tuple[int, ...]]] = defaultdict(set)
    for m in reference_matches(parse(text), events, **kw):
        out[m.end].add(m.positions)
    return dict(out)


def check(text: str, events: Sequence[dict[str, Any]], expected: Outputs, **kw: Any) -> None:
    """The hand-computed ``expected`` is what the reference AND the engine give."""
    assert reference(text, events, **kw) == expected, "the reference disagrees with the hand"
    assert engine(text, events, **kw) == expected, "the engine disagrees with the hand"


def stream(spec: str, **cols: Sequence[Any]) -> list[dict[str, Any]]:
    """``stream("A B", price=[1, 2])``; a None value leaves the attribute out."""
    out: list[dict[str, Any]] = []
    for i, t in enumerate(spec.split()):
        ev: dict[str, Any] = {"type": t}
        ev.update({k: v[i] for k, v in cols.items() if v[i] is not None})
        out.append(ev)
    return out


# ---------------------------------------------------------------- rising trend

RISING = "SELECT {strategy} * FROM S WHERE (B AS b)+ FILTER b[price > PREV(price)]"
# positions 0..4: B 10, B 12, X, B 11, B 13 (X is not a B: the iteration skips it)
PRICES = stream("B B X B B", price=[10, 12, 0, 11, 13])


@pytest.mark.parametrize(("strategy", "expected"), [
    # every set of B's whose prices rise strictly in position order: at 3, {1,3} fails (12 > 11);
    # at 4, every subset of {0,1,3} plus 4 except those holding both 1 and 3
    ("ALL", {0: {(0,)}, 1: {(1,), (0, 1)}, 3: {(3,), (0, 3)},
             4: {(4,), (0, 4), (1, 4), (3, 4), (0, 1, 4), (0, 3, 4)}}),
    # NEXT keeps the one whose first difference with any other is its own (earliest) event:
    # {0,1,4} beats {0,3,4} (they differ first at 1)
    ("NEXT", {0: {(0,)}, 1: {(0, 1)}, 3: {(0, 3)}, 4: {(0, 1, 4)}}),
    # MAX keeps the sets no other set (same end) contains: two incomparable runs end at 4
    ("MAX", {0: {(0,)}, 1: {(0, 1)}, 3: {(0, 3)}, 4: {(0, 1, 4), (0, 3, 4)}}),
])
def test_rising_trend(strategy: str, expected: Outputs) -> None:
    check(RISING.format(strategy=strategy), PRICES, expected)


# ---------------------------------------------------------------- V shape


V_SHAPE = """SELECT {strategy} * FROM S
WHERE (B AS d)+ ; (B AS u)+
FILTER d[price < PREV(price)] AND u[price > PREV(price)] AND u[price > LAST(d.price)]
   AND [COUNT(d) >= 2 AND COUNT(u) >= 2]"""
# positions 0..4: prices 5 3 1 2 4
V_PRICES = stream("B B B B B", price=[5, 3, 1, 2, 4])


@pytest.mark.parametrize(("strategy", "expected"), [
    # d falls (two or more), then u rises (two or more), every u above the bottom LAST(d).
    # d ending at 1 (bottom 3): u from {2,3,4} must all be above 3, only 4 is: fewer than two.
    # d ending at 3 (bottom 2): u can only be {4}, one event. d ending at 2 (bottom 1): d is
    # {0,2}, {1,2} or {0,1,2} (5 > 3 > 1), u is {3,4} (2 < 4, both above 1).
    ("ALL", {4: {(0, 2, 3, 4), (1, 2, 3, 4), (0, 1, 2, 3, 4)}}),
    ("MAX", {4: {(0, 1, 2, 3, 4)}}),
])
def test_v_shape(strategy: str, expected: Outputs) -> None:
    check(V_SHAPE.format(strategy=strategy), V_PRICES, expected)


# ---------------------------------------------------------------- transfer chain


CHAIN = """SELECT * FROM S
WHERE T AS a ; T AS b ; T AS c
FILTER b[src = a.dst] AND c[src = b.dst]
{tail}"""
# 0: A→B  1: B→C  2: X→Y  3: C→D  4: B→D  5: D→A
TRANSFERS = stream("T T T T T T", src=["A", "B", "X", "C", "B", "D"],
                   dst=["B", "C", "Y", "D", "D", "A"])


def test_transfer_chain() -> None:
    # a=0 (→B): b=1 (B→C) then c=3 (C→D); b=4 (B→D) then c=5 (D→A).
    # a=1 (→C): b=3 (C→D) then c=5. a=2 (→Y): nothing leaves Y. a=3, a=4 (→D): b=5 (D→A), and
    # nothing leaves A after 5.
    check(CHAIN.format(tail=""), TRANSFERS, {3: {(0, 1, 3)}, 5: {(0, 4, 5), (1, 3, 5)}})


def test_transfer_chain_within() -> None:
    # {0,4,5} spans 5 positions: out of a 4-event window
    check(CHAIN.format(tail="WITHIN 4 EVENTS"), TRANSFERS, {3: {(0, 1, 3)}, 5: {(1, 3, 5)}})


# ---------------------------------------------------------------- impossible travel


TRAVEL = """SELECT * FROM S
WHERE P AS a ; P AS b
FILTER b[card = a.card AND city != a.city]
{tail}
WITHIN 1 HOURS"""
PAYMENTS = stream("P P P P P P P",
                  card=[1, 2, 1, 1, 2, 2, 1],
                  city=["Paris", "Rome", "Paris", "Tokyo", "Oslo", "Rome", "Tokyo"],
                  ts=[0, 600, 1200, 3000, 4500, 5000, 7000])
# card 1: 0 Paris@0, 2 Paris@1200, 3 Tokyo@3000, 6 Tokyo@7000 → (0,3) 3000 s and (2,3) 1800 s;
#   (0,6), (2,6) are more than an hour apart; (0,2), (3,6) are the same city.
# card 2: 1 Rome@600, 4 Oslo@4500, 5 Rome@5000 → (4,5) 500 s; (1,4) is 3900 s; (1,5) same city.
TRAVEL_EXPECTED: Outputs = {3: {(0, 3), (2, 3)}, 5: {(4, 5)}}


def test_impossible_travel() -> None:
    check(TRAVEL.format(tail=""), PAYMENTS, TRAVEL_EXPECTED, time="ts")


def test_impossible_travel_partitioned_by_card() -> None:
    text = TRAVEL.format(tail="PARTITION BY [card]")
    check(text, PAYMENTS, TRAVEL_EXPECTED, time="ts")
    partitions = {(m.positions, m.partition) for m in ceql.compile(text).run(PAYMENTS, time="ts")}
    assert partitions == {((0, 3), (1,)), ((2, 3), (1,)), ((4, 5), (2,))}


# ---------------------------------------------------------------- burst over a total


BURST = """SELECT {strategy} * FROM S
WHERE (T AS t)+ FILTER [SUM(t.amount) > 100]
WITHIN 10 SECONDS"""
# 0: 60 @0  1: 50 @10  2: 30 @100  3: NULL @104  4: 80 @105
AMOUNTS = stream("T T T T T", amount=[60, 50, 30, None, 80], ts=[0, 10, 100, 104, 105])


def test_burst_over_a_total() -> None:
    # within 10 s: {0,1} (110); among {2,3,4}: {2,4} (110) and {2,3,4} (110: SUM skips the
    # NULL); {3,4} is 80, {3} alone has no amount (NULL sum, unknown)
    check(BURST.format(strategy=""), AMOUNTS, {1: {(0, 1)}, 4: {(2, 4), (2, 3, 4)}},
          time="ts")


def test_burst_max_is_chosen_before_the_window() -> None:
    # clause order: MAX keeps {0,1,2,3,4} alone at 4 (it contains every other set ending there),
    # then the window (105 s wide) drops it: nothing at 4
    check(BURST.format(strategy="MAX"), AMOUNTS, {1: {(0, 1)}}, time="ts")
