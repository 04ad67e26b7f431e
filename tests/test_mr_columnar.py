"""The columnar MATCH_RECOGNIZE engine (ceql.mr.columnar, ceql.mr.vectors): which queries it
runs, its output against the brute-force reference on random bodies of its subset, fed in
pieces with snapshots and watermarks against the whole run, its refusals and snapshots."""

from __future__ import annotations

import datetime
import random
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

import ceql
from ceql.errors import CeqlInputError
from ceql.frontends.mr import ast as A
from ceql.frontends.mr.errors import MatchSkipError
from ceql.mr import MatchRecognizeQuery, MrValueError
from ceql.mr.columnar import ColumnarEvaluator
from ceql.mr.evaluator import MatchRecognizeEvaluator
from mr_strategies import columnar_bodies, columnar_rows
from reference_mr import evaluate

Rows = list[dict[str, object]]


def _schema(rows: Rows) -> pa.Schema:
    zoned = bool(rows) and getattr(rows[0]["ts"], "tzinfo", None) is not None
    return pa.schema([("k", pa.int64()), ("ts", pa.timestamp("us", "UTC" if zoned else None)),
                      ("x", pa.int64()), ("y", pa.string()), ("f", pa.float64())])


def _table(rows: Rows) -> pa.Table:
    return pa.Table.from_pylist(rows, _schema(rows))


def _columnar(body: A.MatchRecognize, rows: Rows) -> bool:
    q = MatchRecognizeQuery(body)
    return isinstance(q.evaluator(schema=_schema(rows)), ColumnarEvaluator)


def _outcome(f: Callable[[], Rows]) -> str:
    try:
        return repr([list(r.items()) for r in f()])
    except (MatchSkipError, MrValueError) as e:
        return type(e).__name__


# ---------------------------------------------------------------- against the reference

@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow],
          max_examples=2 * settings.default.max_examples)
@given(columnar_bodies(), columnar_rows())
def test_the_columnar_engine_gives_the_references_output(body: A.MatchRecognize,
                                                         rows: Rows) -> None:
    q = MatchRecognizeQuery(body)
    assert _outcome(lambda: q.run(_table(rows))) == _outcome(lambda: evaluate(body, rows))


def _reads(body: A.MatchRecognize, what: Callable[[A.Expr], bool]) -> bool:
    exprs = [*(d.condition for d in body.defines), *(m.expr for m in body.measures)]
    return any(what(n) for e in exprs for n in A.walk(e))


_DRAWS: dict[str, Callable[[A.MatchRecognize, Rows], bool]] = {
    "columnar_with_within": lambda b, r: b.within is not None and len(r) > 3,
    "columnar_with_prev": lambda b, r: _reads(
        b, lambda n: isinstance(n, A.Navigation) and n.kind == "PREV"),
    "columnar_with_next": lambda b, r: _reads(
        b, lambda n: isinstance(n, A.Navigation) and n.kind == "NEXT"),
    "columnar_with_first_last_in_define": lambda b, r: any(
        isinstance(n, A.Navigation) and n.kind in ("FIRST", "LAST")
        for d in b.defines for n in A.walk(d.condition)),
    "columnar_with_double_arithmetic": lambda b, r: _reads(
        b, lambda n: isinstance(n, A.Binary) and n.op in ("+", "*")),
    "columnar_with_text": lambda b, r: _reads(
        b, lambda n: isinstance(n, A.Column) and n.name == "y"),
    "columnar_skip_to_last": lambda b, r: b.skip.kind == "TO LAST",
    "columnar_skip_to_first": lambda b, r: b.skip.kind == "TO FIRST",
    "columnar_match_number": lambda b, r: any(isinstance(m.expr, A.MatchNumber)
                                              for m in b.measures),
    "columnar_subset": lambda b, r: bool(b.subsets),
    "columnar_zoned_times": lambda b, r: bool(r) and r[0]["ts"].tzinfo is not None,
    "columnar_nan": lambda b, r: any(v != v for row in r for v in row.values()),
    "columnar_no_order_by": lambda b, r: not b.order_by and len(r) > 2,
    "columnar_two_partitions": lambda b, r: bool(b.partition_by) and len(
        {row["k"] for row in r}) == 2 and len(evaluate(b, r)) > 1,
}


@pytest.mark.parametrize("what", sorted(_DRAWS))
def test_the_columnar_generator_draws(what: str) -> None:
    def seen(case: tuple[A.MatchRecognize, Rows]) -> bool:
        body, rows = case
        try:
            return _columnar(body, rows) and _DRAWS[what](body, rows)
        except ceql.CeqlError:
            return False
    found = find(st.tuples(columnar_bodies(), columnar_rows()), seen,
                 settings=settings(max_examples=3000, phases=[Phase.generate], database=None))
    assert _columnar(*found)


def test_most_drawn_bodies_run_on_the_columnar_engine() -> None:
    counts = {"columnar": 0, "rows": 0}

    @settings(max_examples=200, database=None, phases=[Phase.generate], deadline=None)
    @given(columnar_bodies())
    def count(body: A.MatchRecognize) -> None:
        counts["columnar" if _columnar(body, []) else "rows"] += 1
    count()
    assert counts["columnar"] > 0.6 * sum(counts.values()), counts
    assert counts["rows"] > 0, counts  # the fallback is drawn too (a skip to the first row)


# ---------------------------------------------------------------- in pieces

class _Play:
    """Feeds rows as Arrow batches of random sizes to the evaluator chosen for their schema,
    with a watermark after some batches and a snapshot restored at random points."""

    def __init__(self, body: A.MatchRecognize, rows: Rows, rnd: random.Random) -> None:
        self.body, self.rows, self.rnd = body, rows, rnd
        self.restores = 0
        self.advanced = 0

    def __call__(self) -> Rows:
        rnd, rows = self.rnd, self.rows
        q = MatchRecognizeQuery(self.body)
        schema = _schema(rows)
        ev: Any = q.evaluator(schema=schema)
        out: Rows = []
        i = 0
        while i < len(rows):
            n = rnd.randint(1, 4)
            out += ev.feed(pa.Table.from_pylist(rows[i:i + n], schema))
            i += n
            if self.body.within is not None and rnd.random() < 0.5:
                rest = [r["ts"] for r in rows[i:]]
                bound = min(rest) if rest else rows[-1]["ts"] + datetime.timedelta(days=1)
                due = ev.waiting_until()
                if due is not None and due <= bound:
                    assert ev.advance(due) == []
                out += ev.advance(bound - datetime.timedelta(seconds=rnd.choice([0, 1, 3])))
                self.advanced += 1
            if rnd.random() < 0.4:
                self.restores += 1
                kind = type(ev)
                ev = ceql.match_recognize(q.text).restore(ev.snapshot())
                assert type(ev) is kind
        out += ev.close()
        assert ev.close() == []
        return out


def _by_partition(body: A.MatchRecognize, out: Rows) -> str:
    """Each partition's rows in order (partitions interleave as rows become final), as text
    (NaN measures compare by their text)."""
    got: dict[object, list[object]] = {}
    for row in out:
        got.setdefault(row["k"] if body.partition_by else None, []).append(list(row.items()))
    return repr(sorted(got.items(), key=lambda kv: repr(kv[0])))


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow],
          max_examples=2 * settings.default.max_examples)
@given(columnar_bodies(), columnar_rows(14), st.randoms(use_true_random=False))
def test_fed_in_pieces_with_restores_and_watermarks_it_gives_runs_output(
        body: A.MatchRecognize, rows: Rows, rnd: random.Random) -> None:
    play = _Play(body, rows, rnd)
    try:
        want: object = _by_partition(body, MatchRecognizeQuery(body).run(rows))
    except (MatchSkipError, MrValueError) as e:
        want = type(e).__name__
    try:
        got: object = _by_partition(body, play())
    except (MatchSkipError, MrValueError) as e:
        got = type(e).__name__
    assert got == want


def test_the_play_restores_and_advances_a_columnar_evaluator() -> None:
    def seen(case: tuple[A.MatchRecognize, Rows, random.Random]) -> bool:
        body, rows, rnd = case
        if not _columnar(body, rows):
            return False
        play = _Play(body, rows, rnd)
        play()
        return play.restores > 1 and play.advanced > 1 and len(rows) > 8
    find(st.tuples(columnar_bodies(), columnar_rows(14), st.randoms(use_true_random=False)),
         seen, settings=settings(max_examples=3000, phases=[Phase.generate], database=None))


# ---------------------------------------------------------------- which engine

_PAIR = ("PARTITION BY k ORDER BY ts MEASURES A.x AS ax, B.x AS bx, MATCH_NUMBER() AS n "
         "PATTERN (A B) DEFINE A AS A.y = 'a', B AS B.x > A.x AND B.f * 2 >= PREV(f)")


@pytest.mark.parametrize("text, columnar", [
    (_PAIR, True),
    ("ORDER BY ts AFTER MATCH SKIP TO LAST B PATTERN (A (B C){2}) DEFINE B AS x > PREV(x)",
     True),
    ("ORDER BY ts PATTERN (A B) WITHIN INTERVAL '5' SECOND DEFINE B AS NEXT(x) IS NULL", True),
    ("ORDER BY ts PATTERN (A B+) DEFINE B AS x > PREV(x)", False),  # not one labelling
    ("ORDER BY ts ALL ROWS PER MATCH PATTERN (A B)", False),
    ("ORDER BY ts PATTERN (A B) DEFINE B AS B.x + A.x > 3", False),  # integers may grow
    ("ORDER BY ts PATTERN (A B) DEFINE B AS ABS(x) > 3", False),
    ("ORDER BY ts MEASURES SUM(x) AS s PATTERN (A B)", False),
    ("ORDER BY ts PATTERN (A B) DEFINE B AS x > 'a'", False),  # the row engine raises
    ("ORDER BY ts AFTER MATCH SKIP TO FIRST A PATTERN (A B)", False),  # the standard's error
    ("ORDER BY x PATTERN (A B) WITHIN INTERVAL '5' SECOND", False),  # WITHIN on a number
])
def test_the_columnar_engine_runs_what_it_can(text: str, columnar: bool) -> None:
    q = ceql.match_recognize(text)
    schema = _schema([])
    assert isinstance(q.evaluator(schema=schema), ColumnarEvaluator) is columnar
    assert type(q.evaluator()) is MatchRecognizeEvaluator  # without a schema: rows


def _pair_rows() -> Rows:
    t0 = datetime.datetime(2024, 1, 1)
    return [{"k": k, "ts": t0 + datetime.timedelta(seconds=i), "x": x, "y": y, "f": f}
            for i, (k, x, y, f) in enumerate([(1, 1, "a", 1.0), (2, 0, "a", 2.0),
                                              (1, 3, "b", 1.0), (2, 1, "b", 0.5),
                                              (1, 2, "a", 9.0), (1, 5, "c", 5.0)])]


def test_the_pair_on_both_engines() -> None:
    q = ceql.match_recognize(_PAIR)
    rows = _pair_rows()
    want = [{"k": 1, "ax": 1, "bx": 3, "n": 1}, {"k": 1, "ax": 2, "bx": 5, "n": 2}]
    assert q.run(rows) == want  # the row engine (mappings)
    assert q.run(_table(rows)) == want  # the columnar engine
    assert evaluate(q.body, rows) == want


# ---------------------------------------------------------------- refusals

def test_rows_out_of_order_and_late_rows_are_refused_as_the_row_engine_refuses_them() -> None:
    q = ceql.match_recognize(_PAIR)
    rows = _pair_rows()
    bad = [rows[0], rows[2], {**rows[4], "ts": rows[1]["ts"]}]
    messages = []
    for ev, batch in ((q.evaluator(), bad), (q.evaluator(schema=_schema(rows)), _table(bad))):
        with pytest.raises(CeqlInputError) as info:
            ev.feed(batch)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "Row 2 of the input" in messages[0] and "partition k=1" in messages[0]
    # the columnar engine takes none of a refused batch: the same batch, sorted, goes in
    ev = q.evaluator(schema=_schema(rows))
    assert isinstance(ev, ColumnarEvaluator)
    with pytest.raises(CeqlInputError):
        ev.feed(_table(bad))
    assert ev.rows_seen == 0
    # late rows
    late = []
    for ev, batch in ((q.evaluator(), rows[:1]), (q.evaluator(schema=_schema(rows)),
                                                   _table(rows[:1]))):
        ev.advance(rows[3]["ts"])
        with pytest.raises(CeqlInputError) as info:
            ev.feed(batch)
        late.append(str(info.value))
    assert late[0] == late[1] and "before" in late[0]


def test_a_batch_of_other_columns_or_types_is_refused() -> None:
    q = ceql.match_recognize(_PAIR)
    rows = _pair_rows()
    ev = q.evaluator(schema=_schema(rows))
    with pytest.raises(CeqlInputError, match="column"):
        ev.feed(_table(rows).append_column("extra", pa.array([1] * len(rows))))
    with pytest.raises(CeqlInputError, match="Column y is"):
        ev.feed(_table(rows).set_column(3, "y", pa.array([[1]] * len(rows))))
    assert ev.feed([]) == []
    # mappings are taken by the schema
    assert ev.feed(rows) + ev.close() == q.run(rows)


# ---------------------------------------------------------------- snapshots

def test_snapshots_restore_on_the_engine_that_took_them() -> None:
    q = ceql.match_recognize(_PAIR)
    rows = _pair_rows()
    ev = q.evaluator(schema=_schema(rows))
    out = ev.feed(_table(rows[:3]))
    data = ev.snapshot()
    again = q.restore(data)
    assert isinstance(again, ColumnarEvaluator)
    assert again.live() == ev.live() and again.rows_seen == 3
    out += again.feed(_table(rows[3:])) + again.close()
    assert out == q.run(rows)
    # the row engine's evaluator refuses the columnar state, naming it
    with pytest.raises(CeqlInputError, match="damaged"):
        MatchRecognizeEvaluator.restore(q, data)
    # a snapshot of another query
    other = ceql.match_recognize(_PAIR.replace("'a'", "'b'"))
    with pytest.raises(CeqlInputError, match="another"):
        other.restore(data)
    # damaged bytes
    with pytest.raises(CeqlInputError):
        q.restore(data[:-5] + b"xxxxx")


def test_the_kept_rows_stay_few_per_partition() -> None:
    q = ceql.match_recognize(_PAIR.replace("PREV(f)", "PREV(f, 2)"))
    t0 = datetime.datetime(2024, 1, 1)
    ev = q.evaluator(schema=_schema([]))
    for b in range(20):
        rows = [{"k": i % 3, "ts": t0 + datetime.timedelta(seconds=b * 50 + i), "x": i % 7,
                 "y": "ab"[i % 2], "f": float(i % 5)} for i in range(50)]
        ev.feed(_table(rows))
        # per partition: PREV's two rows back, the start not decided yet, the last row
        assert ev.held_rows() <= 3 * 3
    assert ev.rows_seen == 1000


def test_run_sorts_by_each_keys_null_placement_as_the_row_engine() -> None:
    t0 = datetime.datetime(2024, 1, 1)
    rows = [{"k": 1, "ts": None if i % 4 == 0 else t0 + datetime.timedelta(seconds=i % 3),
             "x": i % 3 or None, "y": "a", "f": 1.0} for i in range(12)]
    for order in ("ts, x DESC", "ts NULLS LAST, x NULLS FIRST", "x, ts DESC NULLS LAST"):
        q = ceql.match_recognize(f"PARTITION BY k ORDER BY {order} MEASURES A.x AS ax, "
                                 "B.x AS bx AFTER MATCH SKIP TO NEXT ROW PATTERN (A B) "
                                 "DEFINE B AS B.x >= A.x OR B.x IS NULL")
        assert isinstance(q.evaluator(schema=_schema(rows)), ColumnarEvaluator)
        assert q.run(_table(rows)) == q.run(rows) == evaluate(q.body, rows)


def test_times_with_and_without_a_zone_are_an_error_naming_both() -> None:
    zoned = datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)
    plain = datetime.datetime(2024, 1, 2)
    q = ceql.match_recognize("ORDER BY ts PATTERN (A B) WITHIN INTERVAL '5' SECOND "
                             "DEFINE B AS B.ts > A.ts")
    with pytest.raises(MrValueError, match="one time has a zone and the other has none"):
        q.run([{"ts": zoned}, {"ts": plain}])
    ev = q.evaluator()
    ev.feed([{"ts": zoned}])
    with pytest.raises(MrValueError, match="one time has a zone"):
        ev.advance(plain)
    ev = q.evaluator()
    ev.feed([{"ts": zoned}])
    with pytest.raises(MrValueError, match="one time has a zone"):
        ev.feed([{"ts": plain}])
