"""Atoms, 3-valued logic, guards, and the agreement of row and batch classification."""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import logging
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ceql.errors import CeqlValidationError
from ceql.ir import nodes as A
from ceql.predicates import (
    AtomTable,
    GAnd,
    GAtom,
    GNot,
    GOr,
    GTrue,
    GuardTree,
    StreamIs,
    TypeIs,
    guard_fn,
    guard_from_pred,
    tri_state,
)
from ceql.predicates import arrow as column_path
from ceql.predicates import row as row_path
from ceql.predicates.atoms import attr_names

# ---------------------------------------------------------------- helpers


def _column_path_failures(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.get_records("call") if r.name.startswith("ceql.predicates")]


@pytest.fixture(autouse=True)
def _strict_column_path(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Column-path exceptions other than the planned fallbacks (logged) fail the tests."""
    caplog.set_level(logging.WARNING, logger="ceql.predicates")
    yield
    if failures := _column_path_failures(caplog):
        pytest.fail("column path failed:\n" + "\n".join(
            logging.Formatter().format(r) for r in failures), pytrace=False)


def attr(name: str) -> A.Attr:
    return A.Attr(name)


def lit(v: Any) -> A.Literal:
    return A.Literal(v)


def cmp(op: str, left: Any, right: Any) -> A.Compare:
    return A.Compare(op, _e(left), _e(right))


def _e(x: Any) -> A.Expr:
    if isinstance(x, (A.Attr, A.Literal, A.Neg, A.Arith)):
        return x
    return lit(x)


def truth(atom: Any, event: Mapping[str, Any]) -> bool | None:
    """3-valued value of one atom on one event, through the row path."""
    t = AtomTable()
    k = t.add(atom)
    return tri_state(GAtom(k), t.row_class(event))


def batch_truths(atom: Any, table: pa.Table) -> list[bool | None]:
    t = AtomTable()
    k = t.add(atom)
    return [tri_state(GAtom(k), int(c)) for c in t.batch_classes(table)]


def _table(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Rows as a table; keys missing from some rows are NULL there (``_`` keeps the length)."""
    keys = dict.fromkeys(k for r in rows for k in r)
    cols = {k: pa.array([r.get(k) for r in rows]) for k in keys}
    return pa.table({**cols, "_": pa.nulls(len(rows))})


def both(atom: Any, rows: Sequence[Mapping[str, Any]], table: pa.Table | None = None,
         ) -> list[bool | None]:
    """Row results, after checking that the batch path gives the same classes."""
    if table is None:
        table = _table(rows)
    t = AtomTable()
    t.add(atom)
    assert [int(c) for c in t.batch_classes(table)] == [t.row_class(r) for r in rows]
    return [truth(atom, r) for r in rows]


# ---------------------------------------------------------------- comparisons


@pytest.mark.parametrize(("op", "expected"), [
    ("=", [False, True, False]), ("!=", [True, False, True]), ("<", [True, False, False]),
    ("<=", [True, True, False]), (">", [False, False, True]), (">=", [False, True, True]),
    ("==", [False, True, False]), ("<>", [True, False, True]),
])
def test_numeric_operators(op: str, expected: list[bool]) -> None:
    rows = [{"x": 1}, {"x": 2}, {"x": 3}]
    assert both(cmp(op, attr("x"), 2), rows) == expected
    assert both(cmp(op, attr("x"), 2.0), rows) == expected
    rows_f = [{"x": 1.5}, {"x": 2.0}, {"x": 2.5}]
    assert both(cmp(op, attr("x"), 2), rows_f) == expected


def test_string_operators_and_order() -> None:
    rows = [{"s": "a"}, {"s": "ab"}, {"s": "b"}, {"s": "é"}, {"s": ""}]
    assert both(cmp("<", attr("s"), "ab"), rows) == [True, False, False, False, True]
    assert both(cmp("=", attr("s"), "ab"), rows) == [False, True, False, False, False]
    assert both(cmp(">", "b", attr("s")), rows) == [True, True, False, False, True]
    # code-point order (= UTF-8 byte order): 'é' sorts after 'b'
    assert both(cmp(">", attr("s"), "b"), rows) == [False, False, False, True, False]


def test_booleans_are_not_numbers() -> None:
    rows = [{"b": True}, {"b": False}]
    assert both(cmp("=", attr("b"), True), rows) == [True, False]
    assert both(cmp("<", attr("b"), True), rows) == [False, True]
    assert both(cmp("=", attr("b"), 1), rows) == [None, None]
    assert both(cmp("=", attr("x"), True), [{"x": 1}, {"x": 1.0}]) == [None, None]
    assert both(A.Compare("=", A.Arith("+", attr("b"), lit(1)), lit(2)), rows) == [None, None]


def test_null_missing_and_type_clash_are_unknown() -> None:
    rows: list[dict[str, Any]] = [{"x": None}, {}, {"x": "5"}, {"x": 5}]
    assert [truth(cmp("=", attr("x"), 5), r) for r in rows] == [None, None, None, True]
    assert [truth(cmp("!=", attr("x"), 5), r) for r in rows] == [None, None, None, False]
    table = pa.table({"x": pa.array(["5", None, "6"])})
    assert batch_truths(cmp("<", attr("x"), 5), table) == [None, None, None]
    assert batch_truths(cmp("<", attr("nope"), 5), table) == [None, None, None]
    assert batch_truths(cmp("=", attr("nope"), attr("nope")), table) == [None, None, None]


def test_nan_is_null() -> None:
    rows = [{"x": math.nan}, {"x": 1.0}]
    assert both(cmp("!=", attr("x"), 1), rows) == [None, False]
    assert both(cmp("=", attr("x"), math.nan), rows) == [None, None]
    inf = math.inf  # inf - inf is NaN: unknown
    assert both(cmp("=", A.Arith("-", attr("x"), attr("y")), 0),
                [{"x": inf, "y": inf}, {"x": 1.0, "y": 1.0}]) == [None, True]
    assert truth(cmp("=", attr("x"), 1), {"x": np.float64("nan")}) is None


def test_exact_int_float_comparisons() -> None:
    big = 2**53 + 1
    rows = [{"x": big}, {"x": 2**53}, {"x": 2**63 - 1}, {"x": -(2**63)}]
    assert both(cmp(">", attr("x"), 2.0**53), rows) == [True, False, True, False]
    assert both(cmp("=", attr("x"), 2.0**53), rows) == [False, True, False, False]
    assert both(cmp("<", attr("x"), 2**70), rows) == [True] * 4
    assert both(cmp("=", attr("x"), 9.223372036854775807e18), rows) == [False] * 4
    assert both(cmp("<", attr("x"), 2.5), rows) == [False, False, False, True]
    assert both(cmp("=", attr("x"), attr("f")),
                [{"x": big, "f": float(big)}, {"x": 2**53, "f": 2.0**53}],
                ) == [False, True]
    floats = [{"f": 2.0**60}, {"f": 1.5}, {"f": math.inf}]
    assert both(cmp("<", attr("f"), 2**60 + 1), floats) == [True, True, False]
    assert both(cmp(">=", attr("f"), 10**400), floats) == [False, False, True]


def test_arithmetic() -> None:
    r = {"a": 7, "b": -2, "z": 0, "f": 2.5, "s": "x"}
    expect: dict[A.Expr, float] = {
        A.Arith("+", attr("a"), attr("b")): 5,
        A.Arith("-", attr("a"), attr("b")): 9,
        A.Arith("*", attr("a"), attr("b")): -14,
        A.Arith("/", attr("a"), attr("b")): -3.5,  # true division
        A.Arith("%", attr("a"), attr("b")): -1,  # Python modulo: sign of the divisor
        A.Arith("%", A.Neg(attr("a")), lit(3)): 2,
        A.Arith("%", attr("f"), lit(-1)): -0.5,
        A.Neg(attr("f")): -2.5,
    }
    for e, v in expect.items():
        assert truth(A.Compare("=", e, lit(v)), r) is True, e
        assert both(A.Compare("=", e, lit(v)), [r]) == [True]
    for e in (A.Arith("/", attr("a"), attr("z")), A.Arith("%", attr("a"), attr("z")),
              A.Arith("/", attr("f"), lit(0.0)), A.Arith("%", attr("f"), lit(-0.0)),
              A.Arith("+", attr("s"), attr("s")), A.Neg(attr("s"))):
        assert both(A.Compare("=", e, lit(0)), [r]) == [None], e
        assert both(A.Compare("!=", e, lit(0)), [r]) == [None], e


def test_int64_overflow_is_exact() -> None:
    rows = [{"x": 2**62, "y": 4}, {"x": -(2**63), "y": 1}, {"x": 3, "y": 5}]
    table = pa.table({"x": pa.array([2**62, -(2**63), 3]), "y": pa.array([4, 1, 5])})
    assert both(cmp(">", A.Arith("*", attr("x"), attr("y")), 2**63), rows, table) == [
        True, False, False]
    assert both(cmp("=", A.Neg(attr("x")), 2**63), rows, table) == [False, True, False]
    assert both(cmp("=", A.Arith("-", attr("x"), attr("y")), -(2**63) - 1), rows, table) == [
        False, True, False]
    assert both(cmp("=", A.Arith("/", attr("x"), lit(3)), 2**62 / 3), rows, table)[0] is True


# ---------------------------------------------------------------- IN, RANGE, LIKE


def test_in_set() -> None:
    rows: list[dict[str, Any]] = [{"x": 1}, {"x": 2.0}, {"x": 3}, {"x": None}, {"x": "1"}, {}]
    values = (lit(1), lit(2))
    assert [truth(A.InSet(attr("x"), values), r) for r in rows] == [
        True, True, False, None, None, None]
    assert [truth(A.InSet(attr("x"), values, negated=True), r) for r in rows] == [
        False, False, True, None, None, None]
    # mixed literal kinds: IN is an OR of equalities, so "no match" is only FALSE
    # when x is comparable with every literal
    mixed = (lit(1), lit("a"))
    assert [truth(A.InSet(attr("x"), mixed), r) for r in rows] == [
        True, None, None, None, None, None]
    assert truth(A.InSet(attr("x"), (lit("1"), lit("a"))), {"x": "1"}) is True
    assert truth(A.InSet(attr("x"), (lit(True),)), {"x": 1}) is None
    assert truth(A.InSet(attr("x"), ()), {"x": None}) is False
    assert truth(A.InSet(attr("x"), (), negated=True), {"x": 5}) is True
    table = pa.table({"x": pa.array([1, 2, 3, None])})
    assert batch_truths(A.InSet(attr("x"), values, negated=True), table) == [
        False, False, True, None]
    s_table = pa.table({"x": pa.array(["a", None, "b"])})
    assert batch_truths(A.InSet(attr("x"), (lit("a"),), negated=True), s_table) == [
        False, None, True]
    assert batch_truths(A.InSet(attr("x"), (lit("a"), lit(1))), s_table) == [True, None, None]


def test_not_of_unknown_is_not_satisfied() -> None:
    t = AtomTable()
    p = A.PNot(A.InSet(attr("x"), (lit(1), lit(2)), negated=True))
    g = guard_from_pred(p, t)
    f = guard_fn(g)
    assert not f(t.row_class({"x": None}))
    assert not guard_fn(guard_from_pred(A.InSet(attr("x"), (lit(1),), negated=True), t))(
        t.row_class({"x": None}))
    assert f(t.row_class({"x": 1}))
    assert not guard_fn(guard_from_pred(A.PNot(cmp("=", attr("y"), 1)), t))(t.row_class({}))


def test_in_range() -> None:
    rng = A.InRange(attr("x"), lit(1), lit(3))
    rows: list[dict[str, Any]] = [{"x": 1}, {"x": 3.0}, {"x": 0}, {"x": 3.5}, {"x": None}]
    assert both(rng, rows) == [True, True, False, False, None]
    # x < lo is FALSE even when hi is unknown
    r2 = A.InRange(attr("x"), lit(1), attr("hi"))
    assert [truth(r2, {"x": 0}), truth(r2, {"x": 2}), truth(r2, {"x": 2, "hi": 2})] == [
        False, None, True]


def test_like_partial_match() -> None:
    rows: list[dict[str, Any]] = [{"s": "xxINTCxx"}, {"s": "INTEL"}, {"s": None}, {"s": 5}]
    assert [truth(A.Like(attr("s"), "INT[CE]"), r) for r in rows] == [True, True, None, None]
    assert [truth(A.Like(attr("s"), "^INTC$"), r) for r in rows] == [False, False, None, None]
    table = pa.table({"s": pa.array(["xxINTCxx", "INTEL", None])})
    for col in (table, table.cast(pa.schema([("s", pa.large_string())])),
                pa.table({"s": table.column("s").dictionary_encode()})):
        assert batch_truths(A.Like(attr("s"), "INT[CE]"), col) == [True, True, None]
        assert batch_truths(A.Like(attr("s"), "^INTC$"), col) == [False, False, None]
    assert batch_truths(A.Like(attr("s"), "a"), pa.table({"s": [1, 2]})) == [None, None]


def test_like_catastrophic_pattern_is_linear() -> None:
    s = "a" * 50_000 + "b"
    assert truth(A.Like(attr("s"), "(a+)+$"), {"s": s}) is False
    assert truth(A.Like(attr("s"), "(a+)+b$"), {"s": s}) is True
    assert batch_truths(A.Like(attr("s"), "(a+)+$"), pa.table({"s": [s, "aaa", s + "a"]})) == [
        False, True, True]


def test_like_bad_regex_is_a_validation_error() -> None:
    with pytest.raises(CeqlValidationError, match="regular expression"):
        AtomTable().add(A.Like(attr("s"), "(a)\\1", span=A.Span(2, 5)))


def test_like_row_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    real = pc.match_substring_regex

    def counting(arr: Any, pattern: str) -> Any:
        calls.append(arr)
        return real(arr, pattern=pattern)
    monkeypatch.setattr(row_path, "LIKE_CACHE_SIZE", 4)
    monkeypatch.setattr(pc, "match_substring_regex", counting)
    t = AtomTable()
    t.add(A.Like(attr("s"), "a"))
    calls.clear()  # add() checks the pattern once
    for _ in range(100):
        assert tri_state(GAtom(0), t.row_class({"s": "xa"})) is True
    assert len(calls) == 1  # one evaluation per distinct value
    for i in range(10):
        assert tri_state(GAtom(0), t.row_class({"s": f"b{i}"})) is False
    t.row_class({"s": "xa"})
    assert len(calls) == 12  # evicted by the 4-entry LRU, so evaluated again


# ---------------------------------------------------------------- structural atoms, dedup


def test_type_and_stream() -> None:
    t = AtomTable(type_key="kind", stream_key="src")
    k_type, k_stream = t.add(TypeIs("SELL")), t.add(StreamIs("S"))
    rows: list[dict[str, Any]] = [
        {"kind": "SELL", "src": "S"}, {"kind": "BUY", "src": "T"}, {"src": None}, {}]
    classes = [t.row_class(r) for r in rows]
    assert [tri_state(GAtom(k_type), c) for c in classes] == [True, False, False, False]
    assert [tri_state(GAtom(k_stream), c) for c in classes] == [True, False, True, True]
    table = pa.table({"kind": ["SELL", "BUY", None, None], "src": ["S", "T", None, None]})
    assert [int(c) for c in t.batch_classes(table)] == classes
    dict_table = pa.table({name: table.column(name).dictionary_encode()
                           for name in table.schema.names})
    assert [int(c) for c in t.batch_classes(dict_table)] == classes
    assert [int(c) for c in t.batch_classes(pa.table({"x": [1, 2, 3, 4]}))] == [
        t.row_class({}) for _ in range(4)]
    assert [int(c) for c in t.batch_classes(pa.table({"kind": [1, None], "src": [1, None]}))] == [
        t.row_class({"kind": 1, "src": 1}), t.row_class({})]


def test_dedup_is_structural() -> None:
    t = AtomTable()
    k = t.add(cmp("=", attr("x"), 1))
    spanned = A.Compare("=", A.Attr("x", span=A.Span(3, 4)), A.Literal(1), span=A.Span(3, 1))
    assert t.add(spanned) == k
    assert t.add(cmp("=", attr("x"), 1.0)) != k
    assert t.add(cmp("=", attr("x"), True)) not in (k, k + 1)
    assert t.add(TypeIs("A")) == t.add(TypeIs("A")) != t.add(StreamIs("A"))
    assert len(t) == len(t.atoms) == 5


# ---------------------------------------------------------------- guards


def test_guard_three_valued_logic() -> None:
    t = AtomTable()
    p, q = t.add(cmp("=", attr("p"), 1)), t.add(cmp("=", attr("q"), 1))
    cases: list[tuple[GuardTree, dict[tuple[Any, Any], bool | None]]] = [
        (GAnd((GAtom(p), GAtom(q))), {(None, 0): False, (None, 1): None, (1, 1): True}),
        (GOr((GAtom(p), GAtom(q))), {(None, 1): True, (None, 0): None, (0, 0): False}),
        (GNot(GAtom(p)), {(None, 0): None, (0, 0): True, (1, 0): False}),
        (GNot(GOr((GAtom(p), GNot(GAtom(q))))), {(0, 1): True, (None, 1): None, (1, None): False}),
        (GTrue(), {(None, None): True}),
        (GAnd(()), {(None, None): True}),
        (GOr(()), {(None, None): False}),
    ]
    for g, table in cases:
        f = guard_fn(g)
        for (pv, qv), expected in table.items():
            c = t.row_class({"p": pv, "q": qv})
            assert tri_state(g, c) is expected, (g, pv, qv)
            assert f(c) is (expected is True), (g, pv, qv)


def test_deep_guard() -> None:
    t = AtomTable()
    k = t.add(cmp("=", attr("p"), 1))
    g: GuardTree = GAtom(k)
    for _ in range(301):
        g = GNot(GAnd((g, GTrue())))
    f = guard_fn(g)
    assert f(t.row_class({"p": 0})) and not f(t.row_class({"p": 1}))
    assert not f(t.row_class({}))


def test_guard_from_pred_flattens() -> None:
    t = AtomTable()
    a, b, c = (cmp("=", attr(n), 1) for n in "abc")
    g = guard_from_pred(A.PAnd(A.PAnd(a, b), A.POr(c, A.PNot(a))), t)
    assert g == GAnd((GAtom(0), GAtom(1), GOr((GAtom(2), GNot(GAtom(0))))))


# ---------------------------------------------------------------- Arrow column kinds


def _check_table(atoms: Sequence[Any], table: pa.Table,
                 rows: Sequence[Mapping[str, Any]] | None = None,
                 chunk_sizes: Sequence[int] = (1, 2, 3)) -> None:
    t = AtomTable()
    for a in atoms:
        t.add(a)
    if rows is None:
        rows = table.to_pylist()
    expected = [t.row_class(r) for r in rows]
    assert [int(c) for c in t.batch_classes(table)] == expected
    for size in chunk_sizes:
        chunked = pa.Table.from_batches(table.to_batches(max_chunksize=size), table.schema)
        assert [int(c) for c in t.batch_classes(chunked)] == expected
    for rb in table.to_batches()[:1]:
        assert [int(c) for c in t.batch_classes(rb)] == expected[:rb.num_rows]


def test_string_column_variants() -> None:
    values = ["INTC", None, "MSFT", "", "INTC", "é"]
    atoms = [cmp("=", attr("s"), "INTC"), cmp("<", attr("s"), "J"), cmp(">=", "INTC", attr("s")),
             A.InSet(attr("s"), (lit("MSFT"), lit(""))), A.Like(attr("s"), "^I"),
             cmp("=", attr("s"), attr("s2")), cmp("=", attr("s"), 1), TypeIs("INTC")]
    plain = pa.array(values)
    for arr in (plain, plain.cast(pa.large_string()), plain.cast(pa.string_view()),
                plain.dictionary_encode(), pa.array(values, pa.dictionary(pa.int8(), pa.string()))):
        table = pa.table({"s": arr, "s2": pa.array(list(reversed(values)), pa.large_string()),
                          "type": arr})
        _check_table(atoms, table, [
            {"s": v, "s2": w, "type": v} for v, w in zip(values, reversed(values), strict=True)])


@pytest.mark.parametrize("width", [1, 2, 3, 4, 5, 8, 9])
def test_fixed_width_strings(width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Columns whose strings all have one byte length take a byte-matrix path."""
    monkeypatch.setattr(column_path, "FIXED_MIN_ROWS", 1)
    pool = ["".join(p) for p in itertools.product("ab", repeat=width)][:6]
    if width >= 2:
        pool.append("é" + "a" * (width - 2))  # 'é' is two bytes
    values = [pool[(i * 7) % len(pool)] for i in range(40)]
    lits = [*pool[:3], "zz"[:width] + "q" * max(0, width - 2), "a" * (width + 1), "é", ""]
    atoms: list[Any] = [TypeIs(pool[0]), StreamIs(pool[1])]
    for v in lits:
        atoms += [cmp("=", attr("s"), v), cmp("!=", v, attr("s")), cmp("<", attr("s"), v)]
    for k in (1, 2, 5, 7):
        atoms += [A.InSet(attr("s"), tuple(map(lit, lits[:k])), neg) for neg in (False, True)]
    plain = pa.array(values)
    # NULLs whose slots keep their bytes (Arrow allows it): still one width
    validity = pa.array([i % 5 != 3 for i in range(len(values))]).buffers()[1]
    masked = pa.Array.from_buffers(pa.string(), len(values), [validity, *plain.buffers()[1:]])
    for arr in (plain, plain.cast(pa.large_string()), masked, plain.slice(3, 30),
                masked.slice(5, 21), pa.array([*values[:5], None])):
        table = pa.table({"s": arr, "type": arr, "stream": arr})
        _check_table(atoms, table, [{"s": v, "type": v, "stream": v} for v in arr.to_pylist()],
                     chunk_sizes=(7,))


def test_numeric_column_variants() -> None:
    atoms = [cmp(">", attr("x"), 2), cmp("=", attr("x"), 2.5), cmp("<", attr("x"), attr("y")),
             cmp("=", A.Arith("%", attr("x"), attr("y")), 1),
             A.InSet(attr("x"), (lit(3), lit(2.5))),
             A.InRange(A.Arith("/", attr("x"), attr("y")), lit(0.5), lit(2))]
    xs = [1, 2, None, 3, 0]
    ys = [2, 0, 1, None, 3]
    for xt in (pa.int8(), pa.int32(), pa.uint16(), pa.uint64(), pa.float32(), pa.float64(),
               pa.decimal128(10, 2), pa.decimal128(10, 0)):
        table = pa.table({"x": pa.array(xs, xt), "y": pa.array(ys, pa.int64())})
        _check_table(atoms, table)
    table = pa.table({"x": pa.array([0, 2**64 - 1, 2**63, None], pa.uint64()),
                      "y": pa.array([1, 2, 3, 4], pa.int64())})
    _check_table([*atoms, cmp(">", attr("x"), 2**63)], table)


def test_decimal_values_follow_their_exponent() -> None:
    vals = [decimal.Decimal("1.10"), decimal.Decimal("-0.05"), decimal.Decimal("123456.78"), None]
    table = pa.table({"d": pa.array(vals, pa.decimal128(8, 2))})
    _check_table([cmp("=", attr("d"), 1.1), cmp("<", attr("d"), 0), cmp("=", attr("d"), 123456.78)],
                 table, [{"d": v} for v in vals])
    assert truth(cmp("=", attr("d"), 1.1), {"d": decimal.Decimal("1.1")}) is True
    assert truth(cmp("=", attr("d"), 2**60 + 1), {"d": decimal.Decimal(2**60 + 1)}) is True
    assert truth(cmp("=", attr("d"), 1), {"d": decimal.Decimal("NaN")}) is None


def test_temporal_columns() -> None:
    utc = dt.UTC
    plus5 = dt.timezone(dt.timedelta(hours=5))
    t0 = dt.datetime(2024, 1, 1, 12)
    rows: list[dict[str, Any]] = [
        {"a": t0, "b": t0 + dt.timedelta(seconds=1), "z": t0.replace(tzinfo=utc),
         "w": t0.replace(tzinfo=utc).astimezone(plus5), "d": t0.date(), "e": dt.date(2024, 1, 2)},
        {"a": t0, "b": t0, "z": None, "w": t0.replace(tzinfo=plus5), "d": None,
         "e": dt.date(2023, 1, 2)},
    ]
    table = pa.table({
        "a": pa.array([r["a"] for r in rows], pa.timestamp("us")),
        "b": pa.array([r["b"] for r in rows], pa.timestamp("ms")),
        "z": pa.array([r["z"] for r in rows], pa.timestamp("us", "UTC")),
        "w": pa.array([r["w"] for r in rows], pa.timestamp("s", "+05:00")),
        "d": pa.array([r["d"] for r in rows], pa.date32()),
        "e": pa.array([r["e"] for r in rows], pa.date64()),
    })
    atoms = [cmp("<", attr("a"), attr("b")), cmp("=", attr("z"), attr("w")),
             cmp("<", attr("w"), attr("z")), cmp("=", attr("a"), attr("z")),
             cmp("<", attr("d"), attr("e")), cmp("=", attr("d"), attr("a")),
             cmp("=", attr("a"), "2024-01-01"), cmp(">", attr("a"), 0),
             A.InSet(attr("a"), (lit("x"),)), cmp("=", A.Arith("-", attr("b"), attr("a")), 1)]
    _check_table(atoms, table, rows)
    assert both(cmp("<", attr("a"), attr("b")), rows, table) == [True, False]
    assert both(cmp("=", attr("z"), attr("w")), rows, table) == [True, None]
    assert both(cmp("=", attr("a"), attr("z")), rows, table) == [None, None]
    # a time compares with ISO 8601 text of its kind (a date with a date's), else unknown
    assert both(cmp("=", attr("a"), "2024-01-01"), rows, table) == [False, False]
    assert both(cmp("=", attr("a"), "2024-01-01T12:00"), rows, table) == [True, True]
    assert both(cmp("<", attr("z"), "2024-01-01T13:00+01:00"), rows, table) == [False, None]
    assert both(cmp("=", attr("z"), "2024-01-01T12:00"), rows, table) == [True, None]  # UTC
    assert both(cmp("=", attr("a"), "2024-01-01T12:00Z"), rows, table) == [None, None]
    assert both(cmp("=", attr("d"), "2024-01-01"), rows, table) == [True, None]
    assert both(cmp("=", attr("d"), "2024-01-01 00:00"), rows, table) == [None, None]
    assert both(cmp("<", attr("a"), "soon"), rows, table) == [None, None]
    # times subtract to a duration, which compares with seconds; ± seconds shifts a time
    assert both(cmp("=", A.Arith("-", attr("b"), attr("a")), 1), rows, table) == [True, False]
    assert both(cmp("<", A.Arith("-", attr("e"), attr("d")), 86400.5), rows, table) == [
        True, None]
    assert both(cmp("=", A.Arith("+", attr("a"), lit(1)), attr("b")), rows, table) == [True, False]
    assert both(cmp("=", A.Arith("-", attr("a"), attr("z")), 0), rows, table) == [None, None]
    assert both(cmp("=", A.Arith("+", attr("a"), attr("b")), 0), rows, table) == [None, None]


def test_odd_columns() -> None:
    empty_dict = pa.DictionaryArray.from_arrays(pa.array([None, None], pa.int8()),
                                                pa.array([], pa.string()))
    many = pa.array([str(i) for i in range(200)] + [None]).dictionary_encode()
    structural_overflow = pa.array([2**64 - 1, None, 3], pa.uint64())
    atoms = [cmp("=", attr("s"), "x"), A.Like(attr("s"), "x"), A.InSet(attr("s"), (lit("1"),)),
             cmp("=", attr("m"), "150"), cmp("<", attr("m"), "2"), TypeIs("A"), StreamIs("S")]
    _check_table(atoms, pa.table({"s": empty_dict, "type": empty_dict}))
    _check_table(atoms, pa.table({"m": many, "stream": many}))
    _check_table(atoms, pa.table({"stream": structural_overflow, "type": structural_overflow}))


def test_other_columns_are_unknown() -> None:
    table = pa.table({"b": pa.array([b"a", None]), "l": pa.array([[1], [2]])})
    atoms = [cmp("=", attr("b"), "a"), cmp("=", attr("l"), 1), cmp("=", attr("b"), attr("b")),
             A.InSet(attr("b"), ()), A.Like(attr("b"), "a")]
    _check_table(atoms, table)
    assert truth(cmp("=", attr("b"), attr("b")), {"b": b"a"}) is None


def test_many_atoms_give_python_ints() -> None:
    t = AtomTable()
    for i in range(40):
        t.add(cmp(">", attr("x"), i))
    table = pa.table({"x": [0, 20, 39, None]})
    classes = t.batch_classes(table)
    assert classes.dtype == object
    assert list(classes) == [t.row_class(r) for r in table.to_pylist()]
    assert t.row_class({"x": 39}).bit_length() > 64
    small = AtomTable()
    small.add(cmp(">", attr("x"), 1))
    assert small.batch_classes(table).dtype == np.uint64
    assert small.batch_classes(table.slice(0, 0)).dtype == np.uint64
    assert len(AtomTable().batch_classes(table)) == 4


def test_column_path_bug_falls_back_and_is_logged(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """An unplanned column-path error costs speed, not results; it is logged once per atom."""
    def broken(ctx: column_path.BatchContext, name: str) -> Any:
        raise RuntimeError("column path bug")
    monkeypatch.setattr(column_path.BatchContext, "column", broken)
    t = AtomTable()
    t.add(cmp(">", attr("x"), 1))
    t.add(TypeIs("a"))
    rows: list[dict[str, Any]] = [{"x": 0, "type": "a"}, {"x": 2, "type": "b"}, {}]
    for _ in range(2):
        assert [int(c) for c in t.batch_classes(_table(rows))] == [t.row_class(r) for r in rows]
    failures = _column_path_failures(caplog)
    assert [r.exc_info[0] if r.exc_info else None for r in failures] == [RuntimeError] * 2
    caplog.clear()  # seen: not a failure of this test


def test_constant_atoms() -> None:
    rows: list[dict[str, Any]] = [{}, {"x": 1}]
    assert both(cmp("=", A.Arith("+", lit(1), lit(2)), 3), rows) == [True, True]
    assert both(cmp("=", A.Arith("/", lit(1), lit(0)), 3), rows) == [None, None]
    assert both(cmp("<", attr("x"), A.Arith("*", lit(2**40), lit(2**40))), rows) == [None, True]
    assert both(cmp("<", A.Arith("+", attr("x"), lit(2**70)), 2**71), rows) == [None, True]


# ---------------------------------------------------------------- grid: row == batch on edge values

_INF, _NAN = math.inf, math.nan
_EDGE: dict[str, tuple[list[Any], pa.DataType]] = {
    "i": ([0, 1, -1, 2, 7, -7, 3, 2**53, 2**53 + 1, -(2**53) - 1, 2**62, 2**63 - 1, -(2**63),
           None], pa.int64()),
    "j": ([0, 2, -3, 5, None], pa.int16()),
    "u": ([0, 3, 2**63, 2**64 - 1, None], pa.uint64()),
    "f": ([0.0, -0.0, 0.5, 2.5, -1.5, 7.0, 1e308, _INF, -_INF, _NAN, 2.0**53, 2.0**63, 9.3e18,
           -2.0**63, 1e-300, None], pa.float64()),
    "f32": ([0.5, -2.0, 3.25, float(np.float32(1e30)), None], pa.float32()),
    "dec": ([decimal.Decimal(v) for v in ("0.50", "-2.00", "7.25", "1e-2")] + [None],
            pa.decimal128(6, 2)),
    "s": (["", "a", "ab", "b", "é", "A", None], pa.string()),
    "sd": (["a", "b", "", None], pa.dictionary(pa.int32(), pa.string())),
    "b": ([True, False, None], pa.bool_()),
    "t": ([dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 2), None], pa.timestamp("us")),
    "d": ([dt.date(2024, 1, 1), dt.date(2023, 5, 1), None], pa.date32()),
    "n": ([None], pa.null()),
    # aligned pairs where int64 -> float64 rounding ties matter
    "ip": ([2**53 + 1, 2**53, 2**60 + 1, -(2**60) - 1, 5, None], pa.int64()),
    "fp": ([2.0**53, 2.0**53, 2.0**60, -(2.0**60), 5.0, 1.0], pa.float64()),
}
_TAME: dict[str, tuple[list[Any], pa.DataType]] = {
    "i": ([0, 1, -1, 2, 7, -7, 3, 10**6, None], pa.int64()),
    "u": ([0, 3, 2**40, None], pa.uint64()),
}
_EDGE_LITS: list[Any] = [0, 1, -1, 2, 7, 3, 2**53, 2**53 + 1, 2**63 - 1, -(2**63), 2**63, 2**64,
                         -(2**70), 10**400, 0.0, -0.0, 0.5, 2.5, -1.5, 7.0, 1e308, _INF, -_INF,
                         _NAN, 2.0**53, 2.0**63, 9.3e18, -2.0**63, "", "a", "ab", "é", True,
                         False]


def _edge_rows(n: int = 48, tame: bool = False) -> tuple[list[dict[str, Any]], pa.Table]:
    """Rows pairing the edge values of every column in many combinations.

    ``tame`` swaps in int columns without int64 overflow, so that arithmetic on them stays
    column-wise instead of falling back to the row path.
    """
    rows: list[dict[str, Any]] = [{} for _ in range(n)]
    arrays = {}
    columns = {**_EDGE, **_TAME} if tame else _EDGE
    for c, (name, (values, typ)) in enumerate(columns.items()):
        stride = 1 if name in ("ip", "fp") else 2 * c + 3
        col = [values[(r * stride + c * (name not in ("ip", "fp"))) % len(values)]
               for r in range(n)]
        for row, v in zip(rows, col, strict=True):
            row[name] = v
        arrays[name] = pa.array(col, typ)
    for row in rows:
        row["type"], row["stream"] = row["s"], row["sd"]
    arrays["type"], arrays["stream"] = arrays["s"], arrays["sd"]
    return rows, pa.table(arrays)


def _grid_atoms() -> list[Any]:
    names = [*_EDGE, "missing"]
    ops = ["=", "!=", "<", "<=", ">", ">="]
    atoms: list[Any] = []
    for name in names:
        for v in _EDGE_LITS:
            atoms.extend(cmp(op, attr(name), v) for op in ops)
        atoms.append(cmp("<", A.Neg(attr(name)), 0))
        atoms.append(A.Like(attr(name), "a"))
        atoms.append(A.InRange(attr(name), lit(-1), lit(2.5)))
        for values in ((1, 2.5), (0.0,), ("a", ""), (True,), (2**53 + 1, 2**63 - 1, -0.0),
                       (1, "a"), (_NAN, 7), ()):
            for neg in (False, True):
                atoms.append(A.InSet(attr(name), tuple(map(lit, values)), neg))
        for other in names:
            atoms.extend(cmp(op, attr(name), attr(other)) for op in ("=", "<", ">="))
            for aop in "+-*/%":
                e = A.Arith(aop, attr(name), attr(other))
                atoms.extend(cmp(op, e, v) for op, v in (
                    ("=", 0), ("<", 2.5), ("<", 2**62), ("=", -0.5), ("=", 2)))
    atoms.extend(TypeIs(v) for v in ("a", "b", ""))
    atoms.extend(StreamIs(v) for v in ("a", "b", ""))
    return atoms


@pytest.mark.parametrize("path", ["threads", "encoding"])
def test_grid_through_threads_and_encoding(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny thresholds send small batches down the paths meant for big ones."""
    if path == "threads":
        monkeypatch.setattr(column_path, "PARALLEL_MIN_ROWS", 2)
        monkeypatch.setattr(column_path, "BATCH_THREADS", 3)
    else:
        monkeypatch.setattr(column_path, "ENCODE_MIN_ROWS", 1)
        monkeypatch.setattr(column_path, "ENCODE_AT", 1)
    rows, table = _edge_rows(tame=True)
    strings = {"s", "sd"}
    _run_grid(rows, table, [a for a in _grid_atoms()
                            if isinstance(a, (TypeIs, StreamIs)) or attr_names(a) & strings])
    test_string_column_variants()


@pytest.mark.parametrize("tame", [False, True])
def test_grid_of_edge_values(tame: bool) -> None:
    rows, table = _edge_rows(tame=tame)
    _run_grid(rows, table, _grid_atoms())


def _run_grid(rows: list[dict[str, Any]], table: pa.Table, atoms: list[Any]) -> None:
    chunked = _split(table, [5, 17, 18, 40])
    bad: list[tuple[Any, ...]] = []
    for start in range(0, len(atoms), 32):
        t = AtomTable()
        for a in atoms[start:start + 32]:
            t.add(a)
        expected = [t.row_class(r) for r in rows]
        for tab in (table, chunked):
            got = [int(c) for c in t.batch_classes(tab)]
            if got != expected:
                before = len(bad)
                for k, a in enumerate(t.atoms):
                    for r, (g, e) in enumerate(zip(got, expected, strict=True)):
                        if (g >> 2 * k) & 3 != (e >> 2 * k) & 3:
                            bad.append((a, rows[r], (g >> 2 * k) & 3, (e >> 2 * k) & 3))
                if len(bad) == before:  # the classes differ outside every atom's two bits
                    bad.append(("classes", got, expected))
    assert not bad, f"{len(bad)} mismatches, e.g. {bad[:3]}"


# ---------------------------------------------------------------- property: row == batch

_INTS = st.one_of(
    st.integers(-10, 10),
    st.integers(-3, 3),
    st.sampled_from([2**53, 2**53 + 1, -(2**53) - 1, 2**62, 2**63 - 1, -(2**63), 10**15]),
    st.integers(-(2**63), 2**63 - 1),
)
_FLOATS = st.one_of(
    st.sampled_from([0.0, -0.0, 0.5, 2.5, -1.5, 1e308, math.inf, -math.inf, math.nan, 2.0**53,
                     2.0**63, 9.3e18, 1e-300]),
    st.floats(-20, 20).map(lambda f: round(f, 1)),
    st.floats(allow_nan=True, allow_infinity=True),
)
_STRS = st.sampled_from(["", "a", "ab", "b", "ba", "é", "aaa", "A"])
_T0 = dt.datetime(2024, 1, 1)
_DTS = st.integers(0, 4).map(lambda i: _T0 + dt.timedelta(hours=i))
_DATES = st.integers(0, 4).map(lambda i: dt.date(2024, 1, 1 + i))
_DURS = st.sampled_from([0, 1, -1, 3600, 86400, 0.5, 1e-6]).map(lambda s: dt.timedelta(seconds=s))
_DECS = st.integers(-10**6, 10**6).map(lambda i: decimal.Decimal(i).scaleb(-2))
_F32 = st.floats(-1e6, 1e6, width=32)

# name -> (value strategy, Arrow type, dictionary-encode?)
_COLUMNS: dict[str, tuple[st.SearchStrategy[Any], pa.DataType, bool]] = {
    "i": (_INTS, pa.int64(), False),
    "j": (st.integers(-5, 5), pa.int32(), False),
    "f": (_FLOATS, pa.float64(), False),
    "s": (_STRS, pa.string(), False),
    "sd": (_STRS, pa.string(), True),
    "sl": (_STRS, pa.large_string(), False),
    "b": (st.booleans(), pa.bool_(), False),
    "n": (st.none(), pa.null(), False),
    "t": (_DTS, pa.timestamp("us"), False),
    "tz": (_DTS.map(lambda t: t.replace(tzinfo=dt.UTC)), pa.timestamp("ms", "UTC"), False),
    "d": (_DATES, pa.date32(), False),
    "du": (_DURS, pa.duration("us"), False),
    "dec": (_DECS, pa.decimal128(12, 2), False),
    "f32": (_F32, pa.float32(), False),
}
_NAMES = [*_COLUMNS, "missing"]

_LITS = st.one_of(
    _INTS, _FLOATS, _STRS, st.booleans(), st.sampled_from([2**64, -(2**70), 10**400]),
    _DURS, st.sampled_from(["2024-01-01", "2024-01-01T02:00", "2024-01-02T00:00+00:00"]),
).map(A.Literal)


def _exprs() -> st.SearchStrategy[A.Expr]:
    leaves = st.one_of(st.sampled_from(_NAMES).map(A.Attr), _LITS)
    return st.recursive(
        leaves,
        lambda sub: st.one_of(
            sub.map(A.Neg),
            st.builds(A.Arith, st.sampled_from("+-*/%"), sub, sub),
        ),
        max_leaves=4,
    )


_EXPRS = _exprs()
_PATTERNS = st.sampled_from(["a", "^a", "b$", "a|é", "", ".", "^(a+)+$", "[ab]{2}", "A"])

_ATOMS = st.one_of(
    st.builds(A.Compare, st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), _EXPRS, _EXPRS),
    st.builds(A.Compare, st.sampled_from(["=", "<", ">="]), st.sampled_from(_NAMES).map(A.Attr),
              _LITS),
    st.builds(A.Like, _EXPRS, _PATTERNS),
    st.builds(A.InSet, _EXPRS, st.lists(_LITS, max_size=4).map(tuple), st.booleans()),
    st.builds(A.InRange, _EXPRS, _EXPRS, _EXPRS),
    st.sampled_from(["", "a", "ab", "b"]).map(TypeIs),
    st.sampled_from(["a", "b", ""]).map(StreamIs),
)


@st.composite
def _tables(draw: st.DrawFn) -> tuple[list[dict[str, Any]], pa.Table]:
    n = draw(st.integers(0, 7))
    cols = [name for name in _COLUMNS if draw(st.integers(0, 9))]  # usually every column
    rows: list[dict[str, Any]] = [{} for _ in range(n)]
    arrays = {}
    for name in cols:
        values_st, typ, dict_encode = _COLUMNS[name]
        values = draw(st.lists(st.one_of(st.none(), values_st), min_size=n, max_size=n))
        for row, v in zip(rows, values, strict=True):
            if v is not None or draw(st.booleans()):
                row[name] = v  # else: the key is missing, which is also NULL
        arr = pa.array(values, typ)
        arrays[name] = arr.dictionary_encode() if dict_encode else arr
    for row in rows:  # the type/stream columns reuse string values
        if "s" in row:
            row["type"] = row["s"]
        if "sl" in row:
            row["stream"] = row["sl"]
    if "s" in arrays:
        arrays["type"] = arrays["s"]
    if "sl" in arrays:
        arrays["stream"] = arrays["sl"]
    if not arrays:
        return rows, pa.table({"_": pa.array([None] * n)})
    return rows, pa.table(arrays)


def _split(table: pa.Table, cuts: list[int]) -> pa.Table:
    """The same rows as several chunks (with non-zero offsets)."""
    bounds = sorted({0, table.num_rows, *(c % (table.num_rows + 1) for c in cuts)})
    parts = [table.slice(a, b - a) for a, b in itertools.pairwise(bounds)]
    return pa.concat_tables(parts) if parts else table


_SETTINGS = settings(max_examples=200, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@_SETTINGS
@given(data=_tables(), atoms=st.lists(_ATOMS, min_size=1, max_size=6),
       cuts=st.lists(st.integers(0, 10), max_size=3))
def test_batch_classes_equal_row_classes(data: tuple[list[dict[str, Any]], pa.Table],
                                         atoms: list[Any], cuts: list[int]) -> None:
    rows, table = data
    t = AtomTable()
    for a in atoms:
        t.add(a)
    expected = [t.row_class(r) for r in rows]
    got = t.batch_classes(table)
    assert got.dtype == np.uint64
    assert [int(c) for c in got] == expected
    assert [int(c) for c in t.batch_classes(_split(table, cuts))] == expected
    for rb in table.to_batches():  # a single RecordBatch too
        assert [int(c) for c in t.batch_classes(rb)] == expected[:rb.num_rows]
        break


_TIME_NAMES = st.sampled_from(["t", "tz", "d", "du"]).map(A.Attr)
_SECONDS = st.one_of(st.sampled_from([0, 1, -1, 3600, 7200.5, 86400, 1e-6, 2**70, math.inf]),
                     _DURS).map(A.Literal)
_TIME_EXPRS = st.one_of(
    st.builds(A.Arith, st.sampled_from("-+"), _TIME_NAMES, st.one_of(_TIME_NAMES, _SECONDS)),
    st.builds(A.Arith, st.sampled_from("+-*/%"), _SECONDS, _TIME_NAMES),
    st.builds(A.Arith, st.sampled_from("*/"), _TIME_NAMES, _SECONDS),
    _TIME_NAMES.map(A.Neg),
)
_TIME_ATOMS = st.one_of(
    st.builds(A.Compare, st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), _TIME_EXPRS,
              st.one_of(_SECONDS, _TIME_NAMES, _TIME_EXPRS, _LITS)),
    st.builds(A.InRange, _TIME_EXPRS, _SECONDS, st.one_of(_SECONDS, _TIME_NAMES)),
)


@_SETTINGS
@given(data=_tables(), atoms=st.lists(_TIME_ATOMS, min_size=1, max_size=4),
       cuts=st.lists(st.integers(0, 10), max_size=3))
def test_time_arithmetic_batch_equals_row(data: tuple[list[dict[str, Any]], pa.Table],
                                          atoms: list[Any], cuts: list[int]) -> None:
    """Times subtract to durations, shift by seconds or durations: both paths alike."""
    rows, table = data
    t = AtomTable()
    for a in atoms:
        t.add(a)
    expected = [t.row_class(r) for r in rows]
    assert [int(c) for c in t.batch_classes(table)] == expected
    assert [int(c) for c in t.batch_classes(_split(table, cuts))] == expected


_MIXED = st.one_of(st.integers(-50, 50), st.floats(-50, 50).map(lambda f: round(f, 2)),
                   st.sampled_from([math.nan, math.inf, -0.0]), st.none())


@_SETTINGS
@given(xs=st.lists(_MIXED, max_size=7), atoms=st.lists(_ATOMS, min_size=1, max_size=4))
def test_mixed_int_float_column(xs: list[Any], atoms: list[Any]) -> None:
    """``from_pylist`` turns a mixed int/float column into doubles; rows see the same."""
    table = pa.Table.from_pylist([{"f": x, "i": 3} for x in xs])
    t = AtomTable()
    for a in atoms:
        t.add(a)
    assert [int(c) for c in t.batch_classes(table)] == [
        t.row_class(r) for r in table.to_pylist()]


# ---------------------------------------------------------------- property: row path vs reference


_ROW_VALUES = st.one_of(st.none(), st.integers(-20, 20),
                        st.floats(-20, 20).map(lambda f: round(f, 1)),
                        st.sampled_from([math.nan, math.inf, 0.0]), _STRS, st.booleans())
_SAFE_EXPRS = st.recursive(
    st.one_of(st.sampled_from(["a", "b", "c", "missing"]).map(A.Attr),
              st.one_of(st.integers(-5, 5), st.sampled_from([0.5, -2.5, 0.0]), _STRS,
                        st.booleans()).map(A.Literal)),
    lambda sub: st.one_of(sub.map(A.Neg), st.builds(A.Arith, st.sampled_from("+-*/%"), sub, sub)),
    max_leaves=3,
)
_SAFE_LITS = st.one_of(st.integers(-5, 5), st.sampled_from([0.5, 2.0]), _STRS, st.booleans()
                       ).map(A.Literal)
_SAFE_ATOMS = st.one_of(
    st.builds(A.Compare, st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), _SAFE_EXPRS,
              _SAFE_EXPRS),
    st.builds(A.Like, _SAFE_EXPRS, st.sampled_from(["a", "^a", "b$", "", "[ab]"])),
    st.builds(A.InSet, _SAFE_EXPRS, st.lists(_SAFE_LITS, max_size=3).map(tuple), st.booleans()),
    st.builds(A.InRange, _SAFE_EXPRS, _SAFE_EXPRS, _SAFE_EXPRS),
)


@_SETTINGS
@given(atom=_SAFE_ATOMS, event=st.fixed_dictionaries(
    {}, optional={"a": _ROW_VALUES, "b": _ROW_VALUES, "c": _ROW_VALUES}))
def test_row_path_agrees_with_reference(atom: Any, event: dict[str, Any]) -> None:
    """Heterogeneous rows: TRUE and FALSE agree with the project's brute-force reference."""
    import reference
    t = AtomTable()
    k = t.add(atom)
    c = t.row_class(event)
    assert guard_fn(GAtom(k))(c) == reference.pred_holds(atom, event)
    assert guard_fn(GNot(GAtom(k)))(c) == reference.pred_holds(A.PNot(atom), event)
    assert guard_fn(GOr((GAtom(k), GNot(GAtom(k)))))(c) == (tri_state(GAtom(k), c) is not None)
