"""Each evaluation hears of its own strings met with numbers (:class:`ceql.ValueTypeWarning`),
however evaluations of one compiled query interleave (issue 29: no thread-local hook): the row
path's atoms are pure and a row is looked into only when its class may hide a mix
(:func:`ceql.predicates.mixing.find_mix`); conditions between events are handed their
evaluation's listener."""

from __future__ import annotations

import datetime as dt
import itertools
import sys
import threading
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

import ceql
from ceql.ir import nodes as N
from ceql.predicates import AtomTable
from ceql.predicates.atoms import Atom, StreamIs, TypeIs
from ceql.predicates.mixing import find_mix
from ceql.predicates.values import FALSE, TRUE, UNKNOWN
from ceql.runtime import notices

ROWS = "SELECT * FROM S WHERE A AS a ; B AS b FILTER a[x > 5] WITHIN 10 EVENTS"
BETWEEN = "SELECT * FROM S WHERE A AS a ; B AS b FILTER b[x < a.x] WITHIN 10 EVENTS"


def _said(got: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in got if w.category is ceql.ValueTypeWarning]


def _clean(n: int) -> list[dict[str, Any]]:
    return [{"type": "AB"[i % 2], "x": i} for i in range(n)]


def _mixed(n: int, at: int, value: Any) -> list[dict[str, Any]]:
    rows = _clean(n)
    rows[at] = {"type": "A", "x": value}
    return rows


def _interleaved(mine: list[dict[str, Any]], other: Any,
                 theirs: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """``mine`` one by one; before each, the other evaluation reads one of ``theirs`` (a
    whole feed, while this one is inside its own)."""
    for row, their in itertools.zip_longest(mine, theirs):
        if their is not None:
            other.feed([their])
        if row is not None:
            yield row


@pytest.mark.parametrize(("text", "value", "says"), [
    (ROWS, "7", "Event 6 compares a string with a number in `x > 5`"),
    (BETWEEN, "9", "A condition between events"),
])
def test_evaluations_of_one_query_fed_inside_each_other_hear_their_own(
        text: str, value: Any, says: str) -> None:
    q = ceql.compile(text)
    if text is BETWEEN:  # numbers held as text on both sides: '9' < '10' is false as text
        mixing = [*_clean(6), {"type": "A", "x": "10"}, {"type": "B", "x": value}, *_clean(10)]
    else:
        mixing = _mixed(12, 6, value)
    for mixes_outside in (True, False):
        one, two = q.evaluator(), q.evaluator()
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            clean = _clean(len(mixing))  # (the inner one runs between any two outer rows)
            if mixes_outside:  # the outer evaluation's rows mix, the inner one's do not
                one.feed(_interleaved(mixing, two, clean))
            else:
                one.feed(_interleaved(clean, two, mixing))
        [said] = _said(got)
        assert said.startswith(says), said
        # once per evaluation: the one that mixed says nothing more, the other nothing at all
        for ev in (one, two):
            with warnings.catch_warnings(record=True) as again:
                warnings.simplefilter("always")
                ev.feed(mixing[6:8])
            assert len(_said(again)) == (0 if (ev is one) == mixes_outside else 1)


def test_evaluations_alternating_through_iter_feed_hear_their_own() -> None:
    q = ceql.compile("SELECT * FROM S WHERE A AS a FILTER a[x > 0]")
    clean = [{"type": "A", "x": i + 1} for i in range(40)]
    mixing = [*clean[:20], {"type": "A", "x": "7"}, *clean[20:]]
    one, two = q.evaluator(), q.evaluator()
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        a, b = one.iter_feed(clean), two.iter_feed(mixing)
        for x, y in itertools.zip_longest(a, b):  # one chunk (one row) of each in turn
            assert x is not None or y is not None
    [said] = _said(got)
    assert said.startswith("Event 20 compares a string with a number"), said


@pytest.mark.parametrize("text", [ROWS, BETWEEN])
def test_evaluations_in_two_threads_hear_their_own(text: str) -> None:
    q = ceql.compile(text)
    n = 3000
    if text is BETWEEN:
        mixing = _clean(n)
        mixing[n // 2:n // 2 + 2] = [{"type": "A", "x": "10"}, {"type": "B", "x": "9"}]
    else:
        mixing = _mixed(n, n // 2, "7")
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def run(rows: list[dict[str, Any]]) -> None:
        try:
            ev = q.evaluator()
            start.wait()
            for i in range(0, n, 50):  # many feeds: many chances to interleave
                ev.feed(rows[i:i + 50])
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with warnings.catch_warnings(record=True) as got:  # records both threads' warnings
            warnings.simplefilter("always")
            threads = [threading.Thread(target=run, args=(rows,))
                       for rows in (mixing, _clean(n))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    finally:
        sys.setswitchinterval(old)
    assert errors == []
    [said] = _said(got)
    assert ("'9'" in said) if text is BETWEEN else said.startswith(f"Event {n // 2} "), said


class _Counted:
    """:func:`find_mix`, counting its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, atom: Atom, event: Mapping[str, Any]) -> Any:
        self.calls += 1
        return find_mix(atom, event)


def test_rows_whose_class_hides_no_mix_are_not_looked_into(monkeypatch: Any) -> None:
    counted = _Counted()
    monkeypatch.setattr(notices, "find_mix", counted)
    q = ceql.compile(ROWS)
    # numbers, and events of a type whose atom is unknown but that the FILTER does not read
    fine = _clean(5000) + [{"type": "B"}, {"type": "C", "x": "7"}] * 100
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        assert q.evaluator().feed(fine)
        assert counted.calls == 0
        q.evaluator().feed([*fine, {"type": "A", "x": "7"}])
    assert counted.calls == 1
    assert len(_said(got)) == 1
    # the listener stops once it has warned: nothing more is looked into
    ev = q.evaluator()
    ev.feed([{"type": "A", "x": "7"}])
    ev.feed([{"type": "A", "x": "8"}, {"type": "A"}] * 100)
    assert counted.calls == 2


def test_a_mix_in_a_false_in_range_is_found() -> None:
    # 9 IN RANGE('s', 5): the string bound makes one side unknown, the other is false
    q = ceql.compile("SELECT * FROM S WHERE A AS a FILTER a[x IN RANGE(y, 5)]")
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        assert q.evaluator().feed([{"type": "A", "x": 9, "y": "s"}]) == []
    [said] = _said(got)
    assert said.startswith("Event 0 compares a string with a number in `x IN RANGE(y, 5)`")


VALUES: list[Any] = [None, 0, 3, 2.5, float("nan"), "7", "abc", "2020-01-01", True, b"7",
                     dt.datetime(2020, 1, 1), dt.timedelta(seconds=3)]
ATOMS = ["x > 5", "x = '3'", "x < y", "x * 2 > 5", "-x < 5", "x IN {1, 2}", "x IN {'a'}",
         "x NOT IN {1, 2}", "x IN RANGE(1, 9)", "x IN RANGE(y, 5)", "x IN RANGE(y + 1, x)",
         "x + y > 3", "(x + y) LIKE 'a'", "x >= '2020-01-01'", "x IN {'soon'}",
         "x - y > INTERVAL 1 SECOND"]


@pytest.mark.parametrize("cond", ATOMS)
def test_a_mix_never_hides_behind_a_code_the_row_path_does_not_look_into(cond: str) -> None:
    """What :meth:`ValueTypes.read_row` relies on: an atom with a mix is unknown, or false
    only for an ``IN RANGE`` whose bounds are not literals of one kind."""
    q = ceql.compile(f"SELECT * FROM S WHERE A AS a FILTER a[{cond}]")
    table = AtomTable()
    atom = next(a for a in q.automaton()[0].atoms if not isinstance(a, TypeIs | StreamIs))
    k = table.add(atom)
    seen = set()
    for x, y in itertools.product(VALUES, repeat=2):
        event = {"x": x, "y": y}
        if find_mix(atom, event) is None:
            continue
        code = (table.row_class(event) >> 2 * k) & 3
        seen.add(code)
        assert code != TRUE, (cond, event)
        assert code == UNKNOWN or isinstance(atom, N.InRange), (cond, event)
    assert seen, cond  # the values make it mix
    assert FALSE not in seen or cond == "x IN RANGE(y, 5)" or "y + 1" in cond


def test_the_classes_remembered_are_capped(monkeypatch: Any) -> None:
    monkeypatch.setattr(notices, "CLASSES_CAP", 2)
    q = ceql.compile("SELECT * FROM S WHERE A AS a FILTER a[x > 5] AND a[y > 5] AND a[z > 5]")
    ev = q.evaluator()
    rows = [{"type": "A", "x": i % 9, "y": i % 7, "z": i % 5} for i in range(200)]
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        ev.feed([*rows, {"type": "A", "x": 1, "y": 1, "z": "7"}])
    [said] = _said(got)
    assert said.startswith("Event 200 compares a string with a number in `z > 5`"), said
    mixed = ev._ev.mixed  # the evaluation's state
    assert len(mixed.plain) + len(mixed.suspects) <= 2
