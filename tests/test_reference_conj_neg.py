"""The brute-force reference on conjunction and negation: SEMANTICS.md's worked examples,
hand-checked cases, and properties of the reference itself.

ASTs are built with the IR's node classes (the parser for AND and NOT is written elsewhere), so
these tests need neither the parser nor the engine.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from ceql.ir import nodes as A
from reference import RefMatch, reference_matches
from strategies import (
    PROFILE,
    Case,
    cases,
    events_lists,
    filter_conds,
    formulas,
    positive_variables,
    weighted,
    withins,
)
from test_reference import (
    TH,
    T,
    as_,
    attr_w,
    by_end,
    cmp,
    events_w,
    filt,
    or_,
    plus,
    query,
    run,
    seq,
    stream,
    time_w,
)

# ---------------------------------------------------------------- AST builders


def NOT(f: A.Formula, name: str | None = None) -> A.Not:
    """``NOT f`` or ``NOT f AS name``."""
    return A.Not(f if name is None else A.As(f, name))


def AND(left: A.Formula, right: A.Formula) -> A.And:
    return A.And(left, right)


def qcmp(var: str, name: str, op: str, other: str, other_attr: str | None = None) -> A.FilterAtom:
    """``var[name op other.other_attr]`` (a condition between events)."""
    return A.FilterAtom(var, A.Compare(op, A.Attr(name), A.Attr(other_attr or name, var=other)))


def positions(out: list[RefMatch]) -> set[tuple[int, ...]]:
    return {m.positions for m in out}


# ---------------------------------------------------------------- worked examples (TH stream)
# T T H H T T T H H; id 2 0 0 1 1 0 1 1 0; value 25 45 20 25 40 42 25 70 18

X_T = as_(T("T"), "x")
Y_H = as_(T("H"), "y")


def test_worked_conjunction() -> None:
    """``(T AS x AND H AS y) FILTER x[id = 1] AND y[id = 1] WITHIN 2 EVENTS``."""
    where = filt(AND(X_T, Y_H), cmp("x", "id", "=", 1), cmp("y", "id", "=", 1))
    assert positions(run(query(where, within=events_w(2)), TH)) == {(3, 4), (6, 7)}
    # without the window: every pair of a T and an H with id 1, in either order
    assert positions(run(query(where), TH)) == {(3, 4), (3, 6), (4, 7), (6, 7)}


def test_worked_negation_between() -> None:
    """``T AS x ; NOT H AS n ; H AS y FILTER x[id = 0] AND y[id = 0] AND n[id = 0]``."""
    chain = seq(X_T, NOT(T("H"), "n"), Y_H)
    named = filt(chain, cmp("x", "id", "=", 0), cmp("y", "id", "=", 0), cmp("n", "id", "=", 0))
    assert positions(run(query(named), TH)) == {(1, 2), (5, 8)}
    # without n[id = 0], the H at 7 (id 1) blocks {5, 8}
    unnamed = filt(chain, cmp("x", "id", "=", 0), cmp("y", "id", "=", 0))
    assert positions(run(query(unnamed), TH)) == {(1, 2)}
    # nor does it matter whether the NOT is named when no atom mentions it
    plain = filt(seq(X_T, NOT(T("H")), Y_H), cmp("x", "id", "=", 0), cmp("y", "id", "=", 0))
    assert positions(run(query(plain), TH)) == {(1, 2)}


def test_worked_negation_trailing() -> None:
    """``T AS x ; NOT H AS n FILTER x[id = 1] AND n[id = 1] WITHIN 2 EVENTS``."""
    where = filt(seq(X_T, NOT(T("H"), "n")), cmp("x", "id", "=", 1), cmp("n", "id", "=", 1))
    assert by_end(run(query(where, within=events_w(2)), TH)) == {4: {(4,)}}


def test_worked_negation_leading() -> None:
    """``NOT H AS n ; T AS x FILTER x[id = 0] AND n[id = 0] WITHIN 3 EVENTS``."""
    where = filt(seq(NOT(T("H"), "n"), X_T), cmp("x", "id", "=", 0), cmp("n", "id", "=", 0))
    assert by_end(run(query(where, within=events_w(3)), TH)) == {1: {(1,)}}


def test_some_valuation_keeps_the_complex_event() -> None:
    """``(A+) ; NOT B ; (A+)`` on ``A B A A`` keeps {0,2,3} through the split {0,2} | {3}
    (the split {0} | {2,3} is blocked by the B at 1)."""
    where = seq(plus(T("A")), NOT(T("B")), plus(T("A")))
    assert by_end(run(query(where), stream("A B A A"))) == {3: {(0, 2, 3), (2, 3)}}
    # the same with the split forced: nothing keeps {0, 2, 3} any more
    forced = seq(T("A"), NOT(T("B")), plus(T("A")))
    assert by_end(run(query(forced), stream("A B A A"))) == {3: {(2, 3)}}


# ---------------------------------------------------------------- negation between


def test_unnamed_between() -> None:
    out = run(query(seq(T("A"), NOT(T("B")), T("C"))), stream("A B C A C"))
    assert by_end(out) == {4: {(3, 4)}}
    assert by_end(run(query(seq(T("A"), T("C"))), stream("A B C A C"))) == {
        2: {(0, 2)}, 4: {(0, 4), (3, 4)}}


def test_named_with_a_condition_blocks_only_matching_events() -> None:
    ev = stream("A B C B C", v=[0, 1, 0, 9, 0])
    named = filt(seq(T("A"), NOT(T("B"), "n"), T("C")), cmp("n", "v", ">", 5))
    assert by_end(run(query(named), ev)) == {2: {(0, 2)}}
    unnamed = seq(T("A"), NOT(T("B")), T("C"))
    assert run(query(unnamed), ev) == []


def test_a_named_not_without_atoms_is_unnamed() -> None:
    ev = stream("A B C A C")
    named = run(query(seq(T("A"), NOT(T("B"), "n"), T("C"))), ev)
    assert named == run(query(seq(T("A"), NOT(T("B")), T("C"))), ev)


def test_type_name_atoms_mean_positive_events_only() -> None:
    """``B[…]`` never conditions a NOT of B: an unnamed ``NOT B`` has no conditions."""
    ev = stream("A B C", v=[0, 2, 0])
    where = filt(seq(T("A"), NOT(T("B")), T("C")), cmp("B", "v", "=", 1))
    assert run(query(where), ev) == []
    # with a positive B too: B[…] tests it, n[…] the negated ones
    ev = stream("A B B C", v=[0, 2, 1, 0])
    both = seq(T("A"), NOT(T("B"), "n"), T("B"), T("C"))
    assert run(query(filt(both, cmp("B", "v", "=", 1), cmp("n", "v", "=", 2))), ev) == []
    assert positions(run(query(filt(both, cmp("B", "v", "=", 1), cmp("n", "v", "=", 3))),
                         ev)) == {(0, 2, 3)}


def test_not_of_an_alternative() -> None:
    where = seq(T("A"), NOT(or_(T("B"), T("D"))), T("C"))
    assert by_end(run(query(where), stream("A D C A E C"))) == {5: {(3, 5)}}
    assert run(query(where), stream("A D C A B C")) == []
    named = filt(seq(T("A"), NOT(or_(T("B"), T("D")), "n"), T("C")), cmp("n", "v", "=", 1))
    ev = stream("A D C A B C", v=[0, 1, 0, 0, 2, 0])
    assert by_end(run(query(named), ev)) == {5: {(3, 5)}}


def test_stream_qualified_negation() -> None:
    """``NOT S>B``: a B of stream T does not match; a B without a stream name belongs to every
    stream of the query."""
    where = seq(T("A"), NOT(T("B", "S")), T("C"))
    ev = [{"type": "A", "stream": "S"}, {"type": "B", "stream": "T"}, {"type": "C"}]
    assert positions(run(query(where, streams=("S", "T")), ev)) == {(0, 2)}
    ev[1] = {"type": "B"}
    assert run(query(where, streams=("S", "T")), ev) == []
    # a B of a stream the query does not read is at no position at all
    ev[1] = {"type": "B", "stream": "U"}
    assert positions(run(query(where, streams=("S", "T")), ev)) == {(0, 2)}


def test_negated_atoms_compare_with_positive_variables() -> None:
    ev = stream("A A B C", p=[5, 1, 3, 0])
    where = filt(seq(as_(T("A"), "a"), NOT(T("B"), "n"), T("C")), qcmp("n", "p", ">", "a"))
    # {1, 3}: the B (3) is above a (1); {0, 3}: not above a (5)
    assert positions(run(query(where), ev)) == {(0, 3)}


def test_another_variables_atom_naming_the_negated_one() -> None:
    """``x[p < n.p]`` mentions n too: evaluated with n = {k} like ``n[p > x.p]``."""
    where = filt(seq(as_(T("A"), "x"), NOT(T("B"), "n"), T("C")), qcmp("x", "p", "<", "n"))
    assert run(query(where), stream("A B C", p=[1, 3, 0])) == []
    assert positions(run(query(where), stream("A B C", p=[5, 3, 0]))) == {(0, 2)}


def test_negated_atoms_are_universal_over_the_other_variables() -> None:
    """``n[p > a.p]`` with a run of a: the B blocks only when above every a."""
    ev = stream("A A B C", p=[5, 1, 3, 0])
    where = filt(seq(plus(as_(T("A"), "a")), NOT(T("B"), "n"), T("C")),
                 qcmp("n", "p", ">", "a"))
    assert positions(run(query(where), ev)) == {(0, 3), (0, 1, 3)}


def test_negated_atoms_are_vacuous_when_the_other_variable_is_empty() -> None:
    where = filt(seq(or_(as_(T("A"), "a"), T("D")), NOT(T("B"), "n"), T("C")),
                 qcmp("n", "p", ">", "a"))
    # the D branch binds no a: n[p > a.p] holds, so any B blocks
    assert run(query(where), stream("D B C", p=[0, 0, 0])) == []
    assert positions(run(query(where), stream("A B C", p=[5, 0, 0]))) == {(0, 2)}


def test_every_enclosing_filter_applies() -> None:
    inner = filt(seq(T("A"), NOT(T("B"), "n"), T("C")), cmp("n", "v", ">", 5))
    where = filt(inner, cmp("n", "v", "<", 8))
    assert positions(run(query(where), stream("A B B C", v=[0, 9, 1, 0]))) == {(0, 3)}
    assert run(query(where), stream("A B C", v=[0, 6, 0])) == []


def test_negated_atoms_read_the_valuation_at_their_filter() -> None:
    """Inside: a is the first A only; outside, around ``; A AS a``: both As (universally)."""
    ev = stream("A B C A", p=[1, 3, 0, 5])
    chain = seq(as_(T("A"), "a"), NOT(T("B"), "n"), T("C"))
    inside = seq(filt(chain, qcmp("n", "p", ">", "a")), as_(T("A"), "a"))
    assert run(query(inside), ev) == []
    outside = filt(seq(chain, as_(T("A"), "a")), qcmp("n", "p", ">", "a"))
    assert positions(run(query(outside), ev)) == {(0, 2, 3)}


def test_negation_inside_a_kleene_is_checked_per_block() -> None:
    """``(A ; NOT B ; C)+``: each block's gap; the gap between blocks is not checked."""
    where = plus(seq(T("A"), NOT(T("B")), T("C")))
    out = run(query(where), stream("A C B A C"))
    assert positions(out) == {(0, 1), (3, 4), (0, 1, 3, 4)}


def test_negation_inside_a_conjunction() -> None:
    where = AND(seq(T("A"), NOT(T("B")), T("C")), T("D"))
    # the D may stand anywhere (also in the A..C gap); the B must not
    assert positions(run(query(where), stream("A D C"))) == {(0, 1, 2)}
    assert run(query(where), stream("A B C D")) == []
    assert positions(run(query(where), stream("D A C B"))) == {(0, 1, 2)}


def test_negation_on_either_side_of_a_conjunction() -> None:
    right = AND(T("D"), seq(T("A"), NOT(T("B")), T("C")))
    assert positions(run(query(right), stream("A D C"))) == {(0, 1, 2)}
    assert run(query(right), stream("D A B C")) == []
    both = AND(seq(T("A"), NOT(T("B")), T("C")), seq(T("D"), NOT(T("E")), T("F")))
    assert run(query(both), stream("A D E C F")) == []
    assert run(query(both), stream("A D B F C")) == []
    assert positions(run(query(both), stream("A D C F"))) == {(0, 1, 2, 3)}
    # the other side's events may stand in a gap: only β's events block
    assert positions(run(query(both), stream("A D F C"))) == {(0, 1, 2, 3)}


def test_a_negated_event_binds_no_type_name() -> None:
    """In ``n[p > B.p]`` B is the positive B events (none here: the atom holds vacuously, so
    every B blocks), never the negated one."""
    where = filt(seq(T("A"), NOT(T("B"), "n"), T("C")), qcmp("n", "p", ">", "B"))
    assert run(query(where), stream("A B C", p=[0, 1, 0])) == []
    with_b = filt(seq(T("A"), NOT(T("B"), "n"), T("C"), T("B")), qcmp("n", "p", ">", "B"))
    assert positions(run(query(with_b), stream("A B C B", p=[0, 1, 0, 5]))) == {(0, 2, 3)}
    assert run(query(with_b), stream("A B C B", p=[0, 9, 0, 5])) == []


def test_two_negations_in_one_sequence() -> None:
    where = seq(T("A"), NOT(T("B")), T("C"), NOT(T("D")), T("E"))
    assert positions(run(query(where), stream("A C D E A C E"))) == {(0, 5, 6), (4, 5, 6)}


def test_right_nested_sequence_is_the_same_chain() -> None:
    """``A ; (NOT B ; C)`` and ``(A ; NOT B) ; C`` are ``A ; NOT B ; C`` (associativity)."""
    ev = stream("A B C A C")
    left = seq(T("A"), NOT(T("B")), T("C"))
    right = A.Seq(T("A"), A.Seq(NOT(T("B")), T("C")))
    assert run(query(left), ev) == run(query(right), ev)
    # a chain element in parentheses: the gap is before its start
    where = A.Seq(A.Seq(T("A"), NOT(T("B"))), A.Seq(T("C"), T("D")))
    assert positions(run(query(where), stream("A C B D"))) == {(0, 1, 3)}
    assert run(query(where), stream("A B C D")) == []


# ---------------------------------------------------------------- leading and trailing


def test_trailing_window_counts_from_the_start() -> None:
    """No B at k > j with time(k) − time(i) ≤ ε (i the start, not the end)."""
    where = seq(T("A"), T("C"), NOT(T("B")))
    assert run(query(where, within=events_w(3)), stream("A C X B")) == []
    assert positions(run(query(where, within=events_w(3)), stream("A C X X B"))) == {(0, 1)}


def test_leading_window_counts_to_the_end() -> None:
    """No B at k < i with time(j) − time(k) ≤ ε (j the end, not the start)."""
    where = seq(NOT(T("B")), T("A"), T("C"))
    assert run(query(where, within=events_w(3)), stream("B X A C")) == []
    assert positions(run(query(where, within=events_w(3)), stream("B X X A C"))) == {(3, 4)}


def test_trailing_and_leading_in_time() -> None:
    ev = stream("A B", ts=[0, 5])
    trailing = seq(T("A"), NOT(T("B")))
    assert run(query(trailing, within=time_w(5)), ev, time="ts") == []
    assert positions(run(query(trailing, within=time_w(4)), ev, time="ts")) == {(0,)}
    ev = stream("B A", ts=[0, 5])
    leading = seq(NOT(T("B")), T("A"))
    assert run(query(leading, within=time_w(5)), ev, time="ts") == []
    assert positions(run(query(leading, within=time_w(4)), ev, time="ts")) == {(1,)}
    # without a time option, an event's time is its position
    assert run(query(leading, within=time_w(1)), ev) == []


def test_trailing_in_datetimes() -> None:
    t0 = dt.datetime(2024, 1, 1, 12, 0, 0)
    ev = [{"type": "A", "at": t0}, {"type": "B", "at": t0 + dt.timedelta(seconds=90)}]
    trailing = seq(T("A"), NOT(T("B")))
    assert run(query(trailing, within=time_w(90)), ev, time="at") == []
    assert positions(run(query(trailing, within=time_w(89)), ev, time="at")) == {(0,)}


def test_trailing_and_leading_in_an_attribute() -> None:
    ev = stream("A X B", t=[10, 11, 14])
    trailing = seq(T("A"), NOT(T("B")))
    assert run(query(trailing, within=attr_w(4, "t")), ev) == []
    assert positions(run(query(trailing, within=attr_w(3, "t")), ev)) == {(0,)}
    ev = stream("B X A", t=[10, 11, 14])
    leading = seq(NOT(T("B")), T("A"))
    assert run(query(leading, within=attr_w(4, "t")), ev) == []
    assert positions(run(query(leading, within=attr_w(3, "t")), ev)) == {(2,)}


def test_leading_and_trailing_together() -> None:
    where = seq(NOT(T("B")), T("A"), NOT(T("C")))
    ev = stream("B X A X C A")
    # A at 2: B at 0 is 2 before (blocked within 2); A at 5: nothing after, B 5 before
    assert positions(run(query(where, within=events_w(2)), ev)) == {(5,)}
    assert positions(run(query(where, within=events_w(1)), ev)) == {(2,), (5,)}


def test_trailing_negation_with_conditions() -> None:
    ev = stream("A B B", id=[1, 2, 1])
    where = filt(seq(as_(T("A"), "a"), NOT(T("B"), "n")), qcmp("n", "id", "=", "a"))
    assert positions(run(query(where, within=events_w(1)), ev)) == {(0,)}
    assert run(query(where, within=events_w(2)), ev) == []


def test_trailing_needs_no_complete_window() -> None:
    """A complex event near the end of the input: the B that would block it never came (the
    reference groups outputs by end; the engine produces them once the window has passed)."""
    where = seq(T("A"), NOT(T("B")))
    assert by_end(run(query(where, within=events_w(5)), stream("A A"))) == {0: {(0,)},
                                                                            1: {(1,)}}


# ---------------------------------------------------------------- partitions


def test_partition_gap_holds_substream_positions() -> None:
    where = seq(T("A"), NOT(T("B")), T("C"))
    q = query(where, partition_by=("g",))
    assert [m.positions for m in run(q, stream("A B C", g=[1, 2, 1]))] == [(0, 2)]
    assert run(q, stream("A B C", g=[1, 1, 1])) == []
    # a B without the key is in no substream
    assert [m.positions for m in run(q, stream("A B C", g=[1, ..., 1]))] == [(0, 2)]


def test_partition_windows_of_leading_and_trailing() -> None:
    """WITHIN n EVENTS counts substream positions; a time without a time option is the
    position in the whole stream."""
    ev = stream("A X X B", g=[1, 2, 2, 1])
    trailing = seq(T("A"), NOT(T("B")))
    assert run(query(trailing, within=events_w(1), partition_by=("g",)), ev) == []
    assert [m.positions for m in run(query(trailing, within=events_w(1)), ev)] == [(0,)]
    assert [m.positions for m in run(query(trailing, within=time_w(1), partition_by=("g",)),
                                     ev)] == [(0,)]
    ev = stream("B X X A", g=[1, 2, 2, 1])
    leading = seq(NOT(T("B")), T("A"))
    assert run(query(leading, within=events_w(1), partition_by=("g",)), ev) == []
    assert [m.positions for m in run(query(leading, within=events_w(1)), ev)] == [(3,)]


# ---------------------------------------------------------------- conjunction


def test_conjunction_of_sequences_interleaves() -> None:
    where = AND(seq(T("A"), T("B")), seq(T("C"), T("D")))
    for spec in ("A C B D", "C A D B", "A B C D", "C D A B"):
        assert by_end(run(query(where), stream(spec))) == {3: {(0, 1, 2, 3)}}, spec
    assert run(query(where), stream("B A C D")) == []


def test_conjunction_needs_disjoint_events() -> None:
    assert run(query(AND(T("A"), T("A"))), stream("A")) == []
    assert by_end(run(query(AND(T("A"), T("A"))), stream("A A"))) == {1: {(0, 1)}}
    shared = AND(seq(T("A"), T("B")), seq(T("A"), T("C")))
    assert run(query(shared), stream("A B C")) == []
    assert positions(run(query(shared), stream("A A B C"))) == {(0, 1, 2, 3)}


def test_conjunction_interval_spans_both() -> None:
    out = run(query(AND(T("B"), T("A"))), stream("A X B"))
    assert out == [RefMatch(2, 0, (0, 2), ())]
    # its window is the whole interval
    assert run(query(AND(T("B"), T("A")), within=events_w(1)), stream("A X B")) == []


def test_conjunction_binds_variables_of_both_sides() -> None:
    where = filt(AND(as_(T("A"), "x"), as_(T("B"), "y")), qcmp("y", "v", ">", "x"))
    out = run(query(where, select=("y",)), stream("B A B", v=[3, 2, 1]))
    assert [(m.start, m.end, m.positions) for m in out] == [(0, 1, (0,))]


def test_conjunction_under_kleene() -> None:
    out = run(query(plus(AND(T("A"), T("B")))), stream("A B B A"))
    assert by_end(out) == {1: {(0, 1)}, 2: {(0, 2)}, 3: {(1, 3), (2, 3), (0, 1, 2, 3)}}


@pytest.mark.parametrize(("strategy", "expected"), [
    ("ALL", {1: {(0, 1)}, 2: {(0, 2)}, 3: {(1, 3), (2, 3)}}),
    ("NEXT", {1: {(0, 1)}, 2: {(0, 2)}, 3: {(1, 3)}}),
    ("LAST", {1: {(0, 1)}, 2: {(0, 2)}, 3: {(2, 3)}}),
    ("MAX", {1: {(0, 1)}, 2: {(0, 2)}, 3: {(1, 3), (2, 3)}}),
    ("STRICT", {1: {(0, 1)}, 3: {(2, 3)}}),
])
def test_conjunction_with_strategies(strategy: str, expected: dict[int, set[Any]]) -> None:
    assert by_end(run(query(AND(T("A"), T("B")), strategy=strategy), stream("B A A B"))) \
        == expected


def test_conjunction_with_max_and_a_run() -> None:
    where = AND(plus(T("A")), T("B"))
    assert by_end(run(query(where), stream("A B A"))) == {1: {(0, 1)}, 2: {(1, 2), (0, 1, 2)}}
    assert by_end(run(query(where, strategy="MAX"), stream("A B A"))) == {1: {(0, 1)},
                                                                          2: {(0, 1, 2)}}


def test_limit_is_left_to_the_tests() -> None:
    """The reference reports every complex event that passed (LIMIT picks among those, per
    end)."""
    where = seq(T("A"), NOT(T("B")), T("C"))
    ev = stream("A A B A A C")
    assert run(query(where, limit=1), ev) == run(query(where), ev)
    assert by_end(run(query(where), ev)) == {5: {(3, 5), (4, 5)}}


# ---------------------------------------------------------------- strategies choose among passed


def test_strategies_choose_among_the_events_that_passed() -> None:
    where = seq(T("A"), NOT(T("B")), T("C"))
    ev = stream("A A B A C")
    assert by_end(run(query(where, strategy="NEXT"), ev)) == {4: {(3, 4)}}
    assert by_end(run(query(seq(T("A"), T("C")), strategy="NEXT"), ev)) == {4: {(0, 4)}}
    kleene = seq(plus(T("A")), NOT(T("B")), T("C"))
    assert by_end(run(query(kleene, strategy="MAX"), stream("A B A C"))) == {3: {(0, 2, 3)}}
    assert by_end(run(query(where, strategy="STRICT"), stream("A C"))) == {1: {(0, 1)}}


def test_consume_acts_on_outputs_that_passed() -> None:
    """(1, 2) is blocked by the B at 0 (2 − 0 ≤ 3): it consumes nothing, so (1, 4) (the B is
    4 before its end) is still output."""
    where = seq(NOT(T("B")), T("A"), T("C"))
    out = run(query(where, within=events_w(3), consume="ANY"), stream("B A C A C"))
    assert by_end(out) == {4: {(1, 4), (3, 4)}}


# ---------------------------------------------------------------- invalid queries


@pytest.mark.parametrize(("where", "kw", "message"), [
    (NOT(T("B")), {}, "element of a ; sequence"),
    (plus(NOT(T("B"))), {}, "element of a ; sequence"),
    (as_(NOT(T("B")), "n"), {}, "element of a ; sequence"),
    (seq(A.Seq(T("A"), NOT(T("B")), True), T("C")), {}, ": sequence"),
    (A.Seq(seq(T("A"), NOT(T("B"))), T("C"), True), {}, ": sequence"),
    (seq(T("A"), NOT(T("B")), NOT(T("C")), T("D")), {}, "two NOTs in a row"),
    (A.Seq(seq(T("A"), NOT(T("B"))), seq(NOT(T("C")), T("D"))), {}, "two NOTs in a row"),
    (seq(T("A"), NOT(seq(T("B"), T("C"))), T("D")), {}, "not a single event"),
    (seq(NOT(T("B")), T("A")), {}, "needs WITHIN"),
    (seq(T("A"), NOT(T("B"))), {}, "needs WITHIN"),
    (seq(T("A"), NOT(T("B"))), {"within": events_w(2), "consume": "ANY"}, "CONSUME BY ANY"),
    (seq(T("A"), NOT(T("B"))), {"within": events_w(2), "consume": "PARTITION"},
     "CONSUME BY PARTITION"),
    (plus(seq(NOT(T("B")), T("A"))), {"within": events_w(2)}, "top-level"),
    (seq(as_(seq(T("A"), NOT(T("B"))), "x"), T("C")), {}, "top-level"),
    (AND(seq(T("A"), NOT(T("B"))), T("C")), {"within": events_w(2)}, "top-level"),
    (or_(seq(T("A"), NOT(T("B"))), T("C")), {"within": events_w(2)}, "top-level"),
    (A.Filter(seq(T("A"), NOT(T("B"), "n"), T("C")),
              A.FilterOr(cmp("n", "v", "=", 1), cmp("A", "v", "=", 1))), {}, "under OR"),
    (seq(filt(T("A"), cmp("n", "v", "=", 1)), NOT(T("B"), "n"), T("C")), {},
     "does not enclose"),
    (filt(seq(T("A"), NOT(T("B"), "n"), T("C")),
          A.FilterMatch(A.Compare(">", A.Agg("COUNT", "n"), A.Literal(0)))), {},
     "match condition"),
    (filt(seq(T("A"), NOT(T("B"), "n"), T("C")),
          A.FilterAtom("A", A.Compare(">", A.Agg("MAX", "n", "v"), A.Literal(0)))), {},
     "aggregated"),
    (filt(seq(T("A"), NOT(T("B"), "n"), T("C"), NOT(T("D"), "m"), T("E")),
          qcmp("n", "v", "=", "m")), {}, "two negated"),
    (seq(as_(T("A"), "n"), NOT(T("B"), "n"), T("C")), {}, "both negated and bound"),
    (seq(T("A"), NOT(T("B"), "n"), T("C")), {"select": ("n",)}, "SELECTed"),
])
def test_invalid_queries_are_refused(where: A.Formula, kw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        reference_matches(query(where, **kw), stream("A B C D E"))


# ---------------------------------------------------------------- properties of the reference


def _mirror(f: A.Formula) -> A.Formula:
    """Every ``φ AND ψ`` of ``f`` written ``ψ AND φ``."""
    if isinstance(f, A.And):
        return A.And(_mirror(f.right), _mirror(f.left))
    if isinstance(f, A.Seq | A.Or):
        return dataclasses.replace(f, left=_mirror(f.left), right=_mirror(f.right))
    if isinstance(f, A.As | A.Filter | A.Plus | A.Not):
        return dataclasses.replace(f, formula=_mirror(f.formula))
    return f


def _strip(f: A.Formula, drop: Callable[[A.Not], bool] = lambda _: True) -> A.Formula:
    """``f`` without the NOTs ``drop`` selects (``φ ; NOT β ; ψ`` becomes ``φ ; ψ``). Atoms
    about a dropped NOT's variable stay: the variable is then unbound, which they hold for."""
    if isinstance(f, A.Seq):
        if isinstance(f.right, A.Not) and drop(f.right):
            return _strip(f.left, drop)
        if isinstance(f.left, A.Not) and drop(f.left):
            return _strip(f.right, drop)
    if isinstance(f, A.Seq | A.Or | A.And):
        return dataclasses.replace(f, left=_strip(f.left, drop), right=_strip(f.right, drop))
    if isinstance(f, A.As | A.Filter | A.Plus):
        return dataclasses.replace(f, formula=_strip(f.formula, drop))
    return f


def _nots(f: A.Formula) -> list[A.Not]:
    if isinstance(f, A.Not):
        return [f]
    if isinstance(f, A.Seq | A.Or | A.And):
        return _nots(f.left) + _nots(f.right)
    if isinstance(f, A.As | A.Filter | A.Plus):
        return _nots(f.formula)
    return []


def _negated_names(f: A.Formula) -> list[str]:
    return [n.formula.var for n in _nots(f) if isinstance(n.formula, A.As)]


def _absent(f: A.Formula) -> A.Formula:
    """Every β of ``f`` replaced by the type Z (names kept: ``NOT Z AS n``)."""
    if isinstance(f, A.Not):
        z = A.EventType("Z")
        return A.Not(A.As(z, f.formula.var) if isinstance(f.formula, A.As) else z)
    if isinstance(f, A.Seq | A.Or | A.And):
        return dataclasses.replace(f, left=_absent(f.left), right=_absent(f.right))
    if isinstance(f, A.As | A.Filter | A.Plus):
        return dataclasses.replace(f, formula=_absent(f.formula))
    return f


def _show(q: A.Query, events: list[dict[str, Any]], time: str | None) -> None:
    note(f"query: {q!r}")
    note(f"events: {events!r} time={time!r}")


_ANY_CASES = st.booleans().flatmap(lambda c: cases(correlated=c, conj_neg=True))


@PROFILE
@given(_ANY_CASES)
def test_conjunction_is_commutative(case: Case) -> None:
    q, events, time = case
    _show(q, events, time)
    mirrored = dataclasses.replace(q, where=_mirror(q.where))
    assert reference_matches(mirrored, events, time=time) \
        == reference_matches(q, events, time=time)


@PROFILE
@given(_ANY_CASES)
def test_negation_only_removes_complex_events(case: Case) -> None:
    """Under ALL (the strategies and CONSUME BY choose among what passed, so they may pick
    another), every NOT only removes complex events."""
    q, events, time = case
    q = dataclasses.replace(q, strategy="ALL", consume="NONE")
    _show(q, events, time)
    with_not = set(reference_matches(q, events, time=time))
    without = set(reference_matches(dataclasses.replace(q, where=_strip(q.where)), events,
                                    time=time))
    assert with_not <= without


@PROFILE
@given(_ANY_CASES)
def test_negation_of_an_absent_type_changes_nothing(case: Case) -> None:
    """Every β made a type the stream does not hold: the outputs of the query without its
    NOTs, whatever the strategy, window, partition or consumption."""
    q, events, time = case
    _show(q, events, time)
    absent = dataclasses.replace(q, where=_absent(q.where))
    stripped = dataclasses.replace(q, where=_strip(q.where))
    assert reference_matches(absent, events, time=time) \
        == reference_matches(stripped, events, time=time)


@PROFILE
@given(_ANY_CASES, st.data())
def test_a_condition_that_never_holds_disarms_a_named_negation(case: Case,
                                                               data: st.DataObject) -> None:
    """``n[zz = 0]`` (zz is never there: unknown, so false) around the whole WHERE: the NOTs
    named n block nothing, the others still block."""
    q, events, time = case
    names = _negated_names(q.where)
    if not names:
        return
    name = data.draw(st.sampled_from(names))
    never = A.FilterAtom(name, A.Compare("=", A.Attr("zz"), A.Literal(0)))
    disarmed = dataclasses.replace(q, where=A.Filter(q.where, never))
    _show(disarmed, events, time)

    def named(n: A.Not) -> bool:
        return isinstance(n.formula, A.As) and n.formula.var == name

    stripped = dataclasses.replace(q, where=_strip(q.where, named))
    assert reference_matches(disarmed, events, time=time) \
        == reference_matches(stripped, events, time=time)


# φ and ψ for the two-sided properties: formulas with AND and (between) NOT inside
_SIDES = st.booleans().flatmap(
    lambda c: formulas(("S",), 2, correlated=c, conj_neg=True).map(lambda fb: fb[0]))


@st.composite
def _single_events(draw: st.DrawFn, depth: int = 2) -> A.Formula:
    """A formula whose every valuation binds one event: an event type, AS, OR, unary FILTER."""
    if depth <= 0 or draw(st.booleans()):
        return A.EventType(draw(st.sampled_from(("A", "A", "B", "C"))))
    kind = draw(st.sampled_from(("as", "or", "filter")))
    inner = draw(_single_events(depth - 1))
    if kind == "as":
        return A.As(inner, draw(st.sampled_from(("x", "y"))))
    if kind == "or":
        return A.Or(inner, draw(_single_events(depth - 1)))
    return A.Filter(inner, draw(filter_conds(positive_variables(inner), 1)))


def _clauses(where: A.Formula, **kw: Any) -> A.Query:
    return A.Query(kw.pop("strategy", "ALL"), None, ("S",), where, **kw)


_BETAS = weighted((3, st.sampled_from(("A", "B", "C")).map(A.EventType)),
                  (1, st.builds(A.Or, st.sampled_from(("A", "B")).map(A.EventType),
                                st.sampled_from(("B", "C")).map(A.EventType))))


@PROFILE
@given(_SIDES, _BETAS, _SIDES, _SIDES, events_lists(types=("A", "B", "C")),
       st.sampled_from(A.STRATEGIES), withins(), st.sampled_from([(), ("g",)]))
def test_conjunction_with_a_negation_is_commutative(phi: A.Formula, beta: A.Formula,
                                                    psi: A.Formula, chi: A.Formula,
                                                    events: list[dict[str, Any]],
                                                    strategy: str, within: A.Within | None,
                                                    partition: tuple[str, ...]) -> None:
    """``(φ ; NOT β ; ψ) AND χ`` is ``χ AND (φ ; NOT β ; ψ)``."""
    kw = {"strategy": strategy, "within": within, "partition_by": partition}
    chain = seq(phi, A.Not(beta), psi)
    note(f"chain = {chain!r}\nχ = {chi!r}\nevents = {events!r}")
    assert reference_matches(_clauses(A.And(chain, chi), **kw), events, time="ts") \
        == reference_matches(_clauses(A.And(chi, chain), **kw), events, time="ts")


@PROFILE
@given(_SIDES, _SIDES, events_lists(types=("A", "B", "C")), withins(),
       st.sampled_from([(), ("g",)]))
def test_conjunction_holds_both_sequences(phi: A.Formula, psi: A.Formula,
                                          events: list[dict[str, Any]],
                                          within: A.Within | None,
                                          partition: tuple[str, ...]) -> None:
    """``φ AND ψ`` ⊇ ``φ ; ψ`` ∪ ``ψ ; φ`` (each is a valuation of both on disjoint events)."""
    kw = {"within": within, "partition_by": partition}
    note(f"φ = {phi!r}\nψ = {psi!r}\nevents = {events!r}")
    both = set(reference_matches(_clauses(A.And(phi, psi), **kw), events, time="ts"))
    one = set(reference_matches(_clauses(A.Seq(phi, psi), **kw), events, time="ts"))
    other = set(reference_matches(_clauses(A.Seq(psi, phi), **kw), events, time="ts"))
    assert one | other <= both


@PROFILE
@given(_single_events(), _single_events(), events_lists(types=("A", "B", "C")),
       st.sampled_from(A.STRATEGIES), withins(), st.sampled_from([(), ("g",)]))
def test_conjunction_of_single_events_is_both_orders(phi: A.Formula, psi: A.Formula,
                                                     events: list[dict[str, Any]],
                                                     strategy: str, within: A.Within | None,
                                                     partition: tuple[str, ...]) -> None:
    """With one event each, ``φ AND ψ`` is exactly ``φ ; ψ OR ψ ; φ`` (whatever the strategy:
    the valuations are the same)."""
    kw = {"strategy": strategy, "within": within, "partition_by": partition}
    note(f"φ = {phi!r}\nψ = {psi!r}\nevents = {events!r}")
    both = reference_matches(_clauses(A.And(phi, psi), **kw), events, time="ts")
    orders = A.Or(A.Seq(phi, psi), A.Seq(psi, phi))
    assert both == reference_matches(_clauses(orders, **kw), events, time="ts")


@PROFILE
@given(_SIDES, _SIDES, _BETAS, events_lists(types=("A", "B", "C")), withins(),
       st.sampled_from([(), ("g",)]))
def test_negation_between_is_a_subset_of_the_sequence(phi: A.Formula, psi: A.Formula,
                                                      beta: A.Formula,
                                                      events: list[dict[str, Any]],
                                                      within: A.Within | None,
                                                      partition: tuple[str, ...]) -> None:
    """``φ ; NOT β ; ψ`` ⊆ ``φ ; ψ``."""
    kw = {"within": within, "partition_by": partition}
    note(f"φ = {phi!r}\nψ = {psi!r}\nβ = {beta!r}\nevents = {events!r}")
    negated = set(reference_matches(_clauses(seq(phi, A.Not(beta), psi), **kw), events,
                                    time="ts"))
    plain = set(reference_matches(_clauses(A.Seq(phi, psi), **kw), events, time="ts"))
    assert negated <= plain


# An oracle written independently of the reference's evaluation: X ; NOT B ; Y, NOT B ; X ; Y
# and X ; Y ; NOT B with event types, by direct comprehension over (sub)stream positions.


def _substreams(events: list[dict[str, Any]], partition: bool) -> list[list[int]]:
    if not partition:
        return [list(range(len(events)))]
    groups: dict[Any, list[int]] = {}
    for i, e in enumerate(events):
        if e.get("g") is not None:
            groups.setdefault(e["g"], []).append(i)
    return list(groups.values())


@PROFILE
@given(events_lists(types=("A", "B", "C")), st.sampled_from(("A", "B", "C")),
       st.sampled_from(("A", "B", "C")), st.sampled_from(("A", "B", "C")), st.booleans(),
       st.integers(0, 4))
def test_simple_negations_by_direct_comprehension(events: list[dict[str, Any]], x: str,
                                                  b: str, y: str, partition: bool,
                                                  n: int) -> None:
    """Windows in substream positions: leading ``k`` with ``j − n ≤ k < i``, trailing ``k``
    with ``j < k ≤ i + n``."""
    part = ("g",) if partition else ()
    events = [{k: v for k, v in e.items() if k != "stream"} for e in events]
    note(f"events = {events!r}")

    def typ(p: int) -> str:
        return str(events[p]["type"])

    between: set[tuple[int, ...]] = set()
    leading: set[tuple[int, ...]] = set()
    trailing: set[tuple[int, ...]] = set()
    for sub in _substreams(events, partition):
        def free(lo: int, hi: int, sub: list[int] = sub) -> bool:
            """No B at substream positions lo..hi-1."""
            return all(typ(sub[k]) != b for k in range(max(0, lo), min(len(sub), hi)))

        for i, p in enumerate(sub):
            for j, q in enumerate(sub):
                if not (i < j and typ(p) == x and typ(q) == y):
                    continue
                if free(i + 1, j):
                    between.add((p, q))
                if j - i <= n and free(j - n, i):
                    leading.add((p, q))
                if j - i <= n and free(j + 1, i + n + 1):
                    trailing.add((p, q))
    got = reference_matches(query(seq(T(x), NOT(T(b)), T(y)), partition_by=part), events)
    assert positions(got) == between
    got = reference_matches(query(seq(NOT(T(b)), T(x), T(y)), partition_by=part,
                                  within=events_w(n)), events)
    assert positions(got) == leading
    got = reference_matches(query(seq(T(x), T(y), NOT(T(b))), partition_by=part,
                                  within=events_w(n)), events)
    assert positions(got) == trailing
