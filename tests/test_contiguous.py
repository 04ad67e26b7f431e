"""The dense engine (``runtime/dense.py``): ``:`` chains of single events on whole columns,
against the brute-force reference, on rows, chunks of rows, Arrow tables cut anywhere
(batches of one row included) and snapshots taken mid-stream; and which queries it runs."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction
from itertools import pairwise
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st

import ceql
from ceql.frontends.ceql import format_query
from ceql.ir import nodes as A
from reference import reference_matches
from strategies import PROFILE, atom_preds, weighted
from test_properties import Key, keys
from test_properties import check_against_reference as _check_against_reference

TYPES = ("A", "B", "C")
VARS = ("x", "y", "z")
BIG = 2 ** 53 + 1  # an integer a float cannot hold: compared exactly, as Python does

# ---------------------------------------------------------------- queries


@st.composite
def chains(draw: st.DrawFn) -> tuple[A.Formula, list[str]]:
    """A ``:`` chain of 1 to 4 events (``T AS v`` or a bare type), unary filters on some
    elements; the names that bind events."""
    k = draw(st.integers(1, 4))
    names: list[str] = []
    parts: list[A.Formula] = []
    for _ in range(k):
        t = draw(st.sampled_from(TYPES))
        f: A.Formula = A.EventType(t)
        if draw(st.integers(0, 3)):
            v = draw(st.sampled_from(VARS))
            f = A.As(f, v)
            names.append(v)
        else:
            names.append(t)
        if draw(st.integers(0, 4)) == 0:
            f = A.Filter(f, A.FilterAtom(names[-1], draw(atom_preds())))
        parts.append(f)
    where = parts[0]
    for p in parts[1:]:
        where = A.Seq(where, p, contiguous=True)
    return where, names


_ATTRS = ("a", "b", "c")


@st.composite
def operands(draw: st.DrawFn, names: list[str]) -> A.Expr:
    """An attribute (plain or of a variable) or a number; now and then arithmetic."""
    kind = draw(weighted((5, st.just("attr")), (2, st.just("lit")), (1, st.just("arith"))))
    if kind == "lit":
        return A.Literal(draw(st.sampled_from([0, 1, 2, 1.5, -1, BIG, float(BIG - 1)])))
    if kind == "arith":
        return A.Arith(draw(st.sampled_from(["+", "-", "*"])), draw(operands(names)),
                       draw(operands(names)))
    var = draw(st.sampled_from([None, *names]))
    return A.Attr(draw(st.sampled_from(_ATTRS)), var=var)


@st.composite
def between(draw: st.DrawFn, names: list[str], depth: int = 2) -> A.Pred:
    """A condition between the chain's events (comparisons under AND, OR, NOT)."""
    if depth <= 0 or draw(st.integers(0, 2)):
        op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]))
        left = draw(operands(names))
        right = A.Attr(draw(st.sampled_from(_ATTRS)), var=draw(st.sampled_from(names)))
        if draw(st.booleans()):
            left, right = right, left
        return A.Compare(op, left, right)
    kind = draw(st.sampled_from(["and", "or", "not"]))
    if kind == "not":
        return A.PNot(draw(between(names, depth - 1)))
    left, right = draw(between(names, depth - 1)), draw(between(names, depth - 1))
    return A.PAnd(left, right) if kind == "and" else A.POr(left, right)


@st.composite
def simple_between(draw: st.DrawFn, names: list[str]) -> A.Pred:
    """A comparison of two variables' attributes, or of one with a number; sometimes under
    NOT, or two of them under AND or OR."""
    def one() -> A.Pred:
        left = A.Attr(draw(st.sampled_from(_ATTRS)), var=draw(st.sampled_from(names)))
        right: A.Expr = (A.Literal(draw(st.sampled_from([0, 1, 1.0, 2, BIG])))
                         if draw(st.integers(0, 3)) == 0 else
                         A.Attr(draw(st.sampled_from(_ATTRS)), var=draw(st.sampled_from(names))))
        return A.Compare(draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="])), left, right)
    negate = draw(st.integers(0, 2)) == 0
    kind = draw(st.sampled_from(["one", "and", "or"]))
    p = one() if kind == "one" else A.PAnd(one(), one()) if kind == "and" else A.POr(one(),
                                                                                    one())
    return A.PNot(p) if negate else p


@st.composite
def contiguous_queries(draw: st.DrawFn) -> A.Query:
    """A query the dense engine runs (mostly: a variable in no element's scope, a type name
    as a variable, ... are the chooser's to judge)."""
    where, names = draw(chains())
    conds: list[A.FilterExpr] = []
    for _ in range(draw(st.integers(0, 2))):
        head = draw(st.sampled_from(names))
        pred = draw(between(names)) if draw(st.integers(0, 3)) else draw(atom_preds())
        conds.append(A.FilterAtom(head, pred))
    if conds:
        cond = conds[0]
        for c in conds[1:]:
            cond = A.FilterAnd(cond, c)
        where = A.Filter(where, cond)
    within: A.Within | None = draw(st.sampled_from([
        None, None, A.Within("events", Fraction(draw(st.integers(0, 4)))),
        A.Within("time", draw(st.sampled_from([Fraction(0), Fraction(1), Fraction(5, 2)]))),
        A.Within("attr", Fraction(draw(st.integers(0, 3))), "ts")]))
    bound = sorted(set(names))
    select = draw(st.sampled_from([None, None, None, (), tuple(bound[:1])]))
    return A.Query(strategy=draw(st.sampled_from(A.STRATEGIES)), select=select,
                   streams=("S",), where=where,
                   partition_by=draw(st.sampled_from([(), (), ("g",), ("g", "h")])),
                   within=within, limit=draw(st.sampled_from([None, None, 1, 2])))


def _nan_free(k: tuple[Any, ...]) -> Key:
    """A key with each NaN of its partition a string (NaN is no value equal to itself)."""
    part = tuple("NaN" if isinstance(v, float) and v != v else v for v in k[3])
    return (k[0], k[1], k[2], part)


def check_against_reference(got: list[Key], ref: Any, limit: int | None) -> None:
    """``test_properties``' check, partitions keyed by NaN included."""
    _check_against_reference([_nan_free(k) for k in got], [_nan_free(tuple(m)) for m in ref],
                             limit)


# ---------------------------------------------------------------- streams

_NUMS = [0, 1, 2, 2, 3, 1.5, 2.0, math.nan, None, BIG, float(BIG - 1)]


@st.composite
def streams(draw: st.DrawFn, arrow: bool) -> list[dict[str, Any]]:
    """Events of types A, B, C (and D, which no query names); numbers with NULL, NaN, equal
    values and integers beyond a float's; on rows also strings among numbers. ``arrow``: one
    type per column (integers, or floats) so that a table holds the same values."""
    n = draw(st.integers(0, 12))  # (the reference takes at most 12 per substream)
    kinds = {a: draw(st.sampled_from(["int", "float"])) for a in _ATTRS}
    ts = 0
    out = []
    for _ in range(n):
        ts += draw(st.sampled_from([0, 1, 1, 2]))
        e: dict[str, Any] = {"type": draw(st.sampled_from([*TYPES, "A", "B", "D"])), "ts": ts}
        for a in _ATTRS:
            if arrow:
                pool: list[Any] = ([0, 1, 2, 3, BIG, -BIG, None] if kinds[a] == "int"
                                   else [0.0, 1.0, 1.5, 2.0, math.nan, float(BIG - 1), None])
            else:
                pool = [*_NUMS, "x", "2", True]
            v = draw(st.sampled_from([*pool, "missing"]))
            if v != "missing":
                e[a] = v
        for p in ("g", "h"):
            v = draw(st.sampled_from([0, 1, 1, None] if arrow else [0, 1, 1.0, None,
                                                                      math.nan]))
            if v is not None:
                e[p] = v
        if draw(st.integers(0, 5)) == 0:
            e["stream"] = draw(st.sampled_from(["S", "T"]))
        out.append(e)
    return out


def _table(events: list[dict[str, Any]]) -> pa.Table:
    names = list(dict.fromkeys(["type", "ts", *(k for e in events for k in e)]))
    return pa.table({k: pa.array([e.get(k) for e in events]) for k in names})


def _cut(data: st.DataObject, n: int) -> list[tuple[int, int]]:
    """Random pieces of ``0..n``, batches of one row among them."""
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=6), label="cuts"))
    if data.draw(st.booleans(), label="ones"):
        cuts = list(range(n + 1))
    bounds = [0, *cuts, n]
    return list(pairwise(bounds))


def _compiled(q: A.Query) -> tuple[ceql.Query, str]:
    text = format_query(q)
    note(f"query:\n{text}")
    return ceql.compile(text), text


def _ref(q: A.Query, events: list[dict[str, Any]], time: str | None) -> Any:
    note(f"events: {events}\ntime={time!r}")
    return reference_matches(q, events, time=time)


def _time(q: A.Query, data: st.DataObject) -> str | None:
    if q.within is not None and q.within.kind == "time":
        return "ts"
    return data.draw(st.sampled_from([None, "ts"]), label="time")


# ---------------------------------------------------------------- the engine equals the reference


@PROFILE
@given(contiguous_queries(), st.data())
def test_rows_equal_reference(q: A.Query, data: st.DataObject) -> None:
    """Rows one by one (``Query.run``) and in chunks, against the reference."""
    compiled, _ = _compiled(q)
    events = data.draw(streams(arrow=False), label="events")
    time = _time(q, data)
    ref = _ref(q, events, time)
    got = keys(compiled.run(events, time=time))
    check_against_reference(got, ref, q.limit)
    ev = compiled.evaluator(time=time)
    fed = []
    for a, b in _cut(data, len(events)):
        out = keys(ev.feed(events[a:b]))
        assert all(a <= k[0] < b for k in out)
        fed += out
    assert fed == got


@PROFILE
@given(contiguous_queries(), st.data())
def test_arrow_equals_reference(q: A.Query, data: st.DataObject) -> None:
    """An Arrow table whole and cut into batches anywhere, against the reference."""
    compiled, _ = _compiled(q)
    events = data.draw(streams(arrow=True), label="events")
    time = _time(q, data)
    table = _table(events)
    ref = _ref(q, events, time)
    got = keys(compiled.evaluator(time=time).feed(table))
    check_against_reference(got, ref, q.limit)
    assert got == keys(compiled.run(events, time=time))
    ev = compiled.evaluator(time=time)
    fed = []
    for a, b in _cut(data, len(events)):
        out = keys(ev.feed(table.slice(a, b - a)))
        assert all(a <= k[0] < b for k in out)
        fed += out
    assert fed == got


def _full(m: ceql.Match) -> tuple[Any, ...]:
    return (m.key(), m.start_time, m.end_time, sorted(m.variables.items()))


@PROFILE
@given(contiguous_queries(), st.data())
def test_snapshot_mid_stream(q: A.Query, data: st.DataObject) -> None:
    """Saved after any piece (rows or Arrow), restored, continued: as one evaluation, and the
    matches carry the same times and variables."""
    compiled, text = _compiled(q)
    arrow = data.draw(st.booleans(), label="arrow")
    events = data.draw(streams(arrow=arrow), label="events")
    time = _time(q, data)
    feed: Any = _table(events) if arrow else events
    want = [_full(m) for m in compiled.evaluator(time=time).feed(feed)]
    ev = compiled.evaluator(time=time)
    got: list[Any] = []
    for a, b in _cut(data, len(events)):
        piece = feed.slice(a, b - a) if arrow else feed[a:b]
        got += [_full(m) for m in ev.feed(piece)]
        ev = ceql.compile(text).restore(ev.snapshot())
    assert got == want


# ---------------------------------------------------------------- what the generator draws


def test_generator_draws_dense_chains() -> None:
    """The generator above draws queries the dense engine is chosen for (``choose`` names
    it), of every length, with conditions between events, windows and partitions."""
    seen: Counter[str] = Counter()

    @settings(max_examples=150, phases=[Phase.generate], database=None, deadline=None,
              derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(contiguous_queries())
    def draw(q: A.Query) -> None:
        compiled = ceql.compile(format_query(q))
        seen["drawn"] += 1
        if compiled.engine().base != "dense":
            return
        seen["dense"] += 1
        seen[f"k={format_query(q).count(':') + 1}"] += 1
        seen["between"] += bool(compiled.automaton()[1].scopes)
        seen[f"within {q.within.kind if q.within else None}"] += 1
        seen["partition"] += bool(q.partition_by)
        seen[q.strategy] += 1

    draw()
    assert seen["dense"] >= 0.9 * seen["drawn"], seen
    for what in ("k=1", "k=2", "k=3", "k=4", "between", "within events", "within time",
                 "within attr", "within None", "partition", "ALL", "NEXT", "MAX", "STRICT"):
        assert seen[what] >= 2, (what, seen)


# ---------------------------------------------------------------- which queries qualify

_PAIR = "SELECT * FROM S WHERE SELL AS a : BUY AS b FILTER b[price > a.price] PARTITION BY [name]"


def test_the_pair_runs_dense() -> None:
    q = ceql.compile(_PAIR)
    assert q.engine().base == "dense"
    assert "engine: a ':' chain on whole columns" in str(ceql.explain(_PAIR))


@pytest.mark.parametrize("text", [
    "SELECT * FROM S WHERE A ; B",
    "SELECT * FROM S WHERE A : B+",
    "SELECT * FROM S WHERE A : (B :+)",
    "SELECT * FROM S WHERE (A OR B) : C",
    "SELECT * FROM S WHERE (A AS x OR B AS y) : C",
    "SELECT * FROM S WHERE A ; NOT B ; C",
    "SELECT * FROM S WHERE A : B WITHIN 3 EVENTS CONSUME BY ANY",
    "SELECT * FROM S WHERE A : B PARTITION BY [g] CONSUME BY PARTITION",
    "SELECT * FROM S WHERE A : B LIMIT 0",
    "SELECT * FROM S WHERE A AS x : B AS y FILTER y[a > PREV(a)]",
    "SELECT * FROM S WHERE A AS x : B AS y FILTER [COUNT(x) > 0]",
    "SELECT * FROM S WHERE (A AS x : B AS y) AND C",
])
def test_other_shapes_keep_their_engines(text: str) -> None:
    assert ceql.compile(text).engine().base != "dense"


@pytest.mark.parametrize("text", [
    "SELECT * FROM S WHERE A",
    "SELECT NEXT x FROM S WHERE A AS x : B AS y : C WITHIN 2 EVENTS LIMIT 1",
    "SELECT MAX * FROM S WHERE A AS x : A AS x FILTER x[a > x.b]",
    "SELECT STRICT * FROM S WHERE A : B FILTER B[a = A.a] WITHIN 2 SECONDS",
])
def test_chains_run_dense(text: str) -> None:
    assert ceql.compile(text).engine().base == "dense"


# ---------------------------------------------------------------- exact values


@pytest.mark.parametrize("values", [
    [BIG, float(BIG - 1)],  # BIG > BIG - 1 exactly; as floats they are equal
    [float(BIG - 1), BIG],
    [-BIG, -float(BIG - 1)],
    [1.0, math.nan],  # NaN is NULL: unknown, so false either way
    [None, 2],
    [2, 2.0],
])
@pytest.mark.parametrize("op", ["<", "<=", "=", "!=", ">", ">="])
def test_values_compare_as_the_row_path(values: list[Any], op: str) -> None:
    """Integers beyond 2**53 against floats, NaN, NULL and equal values: the Arrow batch (one
    or two batches, so the first event is carried) gives what rows give."""
    text = f"SELECT * FROM S WHERE A AS x : B AS y FILTER y[a {op} x.a]"
    events = [{"type": "A", "a": values[0]}, {"type": "B", "a": values[1]}]
    q = ceql.compile(text)
    want = keys(q.run(events))
    ref = reference_matches(ceql.compile(text).ast, events)
    assert want == [tuple(m) for m in ref]
    if all(v is None or type(v) is int for v in values) or all(
            v is None or type(v) is float for v in values):
        # (a table holds BIG only in an integer column: with a float beside it, rows only)
        table = pa.table({"type": pa.array(["A", "B"]), "a": pa.array(values)})
        assert keys(q.evaluator().feed(table)) == want
        ev = q.evaluator()
        assert keys(ev.feed(table.slice(0, 1)) + ev.feed(table.slice(1))) == want


def test_int_column_against_float_column_exactly() -> None:
    """An integer column beyond 2**53 against a float column: decided value by value."""
    table = pa.table({"type": ["A", "B"], "a": pa.array([BIG, None], pa.int64()),
                      "b": pa.array([None, float(BIG - 1)], pa.float64())})
    for op, n in (("<", 0), ("=", 0), (">", 1), (">=", 1), ("!=", 1)):
        q = ceql.compile(f"SELECT * FROM S WHERE A AS x : B AS y FILTER x[a {op} y.b]")
        assert len(list(q.run(table.to_pylist()))) == n
        assert len(q.evaluator().feed(table)) == n
        ev = q.evaluator()
        assert len(ev.feed(table.slice(0, 1)) + ev.feed(table.slice(1))) == n


def test_old_snapshot_is_refused() -> None:
    """A snapshot the register runtime took of a query the dense engine now runs: refused,
    not continued without its runs."""
    from ceql.runtime import snapshot as snap
    from ceql.runtime.stack import RegisterEngine

    q = ceql.compile(_PAIR)
    ev = q.evaluator()
    ev.feed([{"type": "SELL", "name": "X", "price": 1}])
    data = ev.snapshot()
    assert data[len(snap.MAGIC):len(snap.MAGIC) + 2] == b"\x00\x04"
    # the same state as a format-3 payload with a partition in it
    payload = snap.options(q, data)[1]
    payload.pop("dense")
    payload["partitions"] = [(("X",), 0, 1, [], ((), ()))]
    fresh = q.evaluator()
    with pytest.raises(ceql.CeqlInputError, match="another engine"):
        fresh._engine.load(payload)
    assert not isinstance(fresh._engine, RegisterEngine)


def test_memory_is_bounded_by_partitions() -> None:
    """Per partition at most k - 1 rows are kept, and none once a row that is no element
    came."""
    q = ceql.compile("SELECT * FROM S WHERE A : B : C PARTITION BY [g]")
    ev = q.evaluator()
    rows = [{"type": "A", "g": i % 7} for i in range(100)]
    ev.feed(rows)
    ev.feed(pa.Table.from_pylist(rows))
    tails = ev._engine.tails
    assert len(tails) == 7 and all(len(t) <= 2 for t in tails.values())
    ev.feed([{"type": "D", "g": i} for i in range(7)])
    assert not ev._engine.tails


@PROFILE
@given(st.data())
def test_arrow_conditions_equal_rows(data: st.DataObject) -> None:
    """Many candidates per stream: conditions between events on numeric columns (equal
    values, NULL, NaN, integers beyond 2**53, a column in one batch and carried rows), on
    Arrow batches, give what the row path gives (which the tests above hold to the
    reference)."""
    names = ["x", "y", "z"][:data.draw(st.integers(2, 3), label="k")]
    where: A.Formula = A.As(A.EventType("A"), "x")
    for t, v in zip("BA", names[1:], strict=False):
        where = A.Seq(where, A.As(A.EventType(t), v), contiguous=True)
    cond: A.FilterExpr = A.FilterAtom(data.draw(st.sampled_from(names)),
                                      data.draw(simple_between(names)))
    if data.draw(st.integers(0, 3)) == 0:
        cond = A.FilterAnd(cond, A.FilterAtom(data.draw(st.sampled_from(names)),
                                              data.draw(between(names))))
    text = format_query(A.Query("ALL", None, ("S",), A.Filter(where, cond)))
    note(text)
    n = data.draw(st.integers(30, 60), label="n")
    cols: dict[str, Any] = {"type": [data.draw(st.sampled_from("AAAABBBBC")) for _ in range(n)]}
    for a in _ATTRS:
        pool = (data.draw(st.sampled_from([[0, 1, 2, None], [1, BIG, -BIG, None]]))
                if data.draw(st.booleans()) else [0.0, 1.0, 2.0, float(BIG - 1), math.nan, None])
        cols[a] = [data.draw(st.sampled_from(pool)) for _ in range(n)]
    table = pa.table({k: pa.array(v) for k, v in cols.items()})
    q = ceql.compile(text)
    assert q.engine().base == "dense"
    want = keys(q.run(table.to_pylist()))
    assert keys(q.evaluator().feed(table)) == want
    ev = q.evaluator()
    assert [k for a, b in _cut(data, n) for k in keys(ev.feed(table.slice(a, b - a)))] == want


def test_kept_events_across_batches_and_snapshots() -> None:
    """With ``keep_events`` a match whose first events came in earlier batches (rows or
    Arrow, a snapshot after each) still carries them: the carried rows are live."""
    q = ceql.compile("SELECT * FROM S WHERE A AS x : B AS y : C AS z FILTER y[a > x.a] "
                     "PARTITION BY [g]")
    rows = [{"type": t, "a": a, "g": g} for t, a, g in
            [("A", 1, 0), ("A", 1, 1), ("B", 2, 0), ("B", 3, 1), ("C", 0, 0), ("C", 0, 1)]]
    table = pa.Table.from_pylist(rows)
    want = [(m.positions, m.events) for m in q.run(rows)]
    assert [p for p, _ in want] == [(0, 2, 4), (1, 3, 5)]
    ev = q.evaluator(keep_events=True)
    got = []
    for i in range(len(rows)):
        got += ev.feed(table.slice(i, 1) if i % 2 else rows[i:i + 1])
        ev = q.restore(ev.snapshot())
    assert [(m.positions, m.events) for m in got] == want
