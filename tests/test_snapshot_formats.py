"""Snapshots as data: ceql's own encoding (no pickle), a checksum, and the formats before it.

A snapshot crosses a trust boundary (Spark's state store, checkpoints): restoring one runs no
code, damage is an error and never another evaluation, and snapshots written by the previous
format (pickles, ``tests/data/snapshots/format2/``) still restore and continue exactly.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import pickle
import random
import sys
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ceql
from ceql.runtime.codec import MAX_DEPTH, Malformed, Unencodable, decode, encode, int_column
from ceql.runtime.snapshot import MAGIC
from strategies import PROFILE

DATA = Path(__file__).parent / "data" / "snapshots"
sys.path.insert(0, str(DATA))
from cases import CASES  # noqa: E402

sys.path.remove(str(DATA))


def _keys(ms: list[ceql.Match]) -> list[tuple[Any, ...]]:
    return [(m.end_position, m.start_position, m.positions, m.partition, m.start_time,
             m.end_time, tuple(sorted(m.variables.items()))) for m in ms]


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_format_2_snapshot_restores_and_continues_exactly(name: str) -> None:
    text, opts, rows, cut = CASES[name]
    assert json.loads((DATA / "format2" / "index.json").read_text())[name]["query"] == text
    q = ceql.compile(text)
    whole = q.evaluator(**opts)
    before = _keys(whole.feed(rows[:cut]))
    after = _keys(whole.feed(rows[cut:]) + whole.close())
    old = (DATA / "format2" / f"{name}.snap").read_bytes()
    assert old[len(MAGIC):][:1] == b"\x80"  # a pickle: the format before this one
    ev = ceql.Evaluator.restore(q, old)
    assert _keys(ev.feed(rows[cut:]) + ev.close()) == after
    assert before or after  # each case has matches to compare
    again = ceql.Evaluator.restore(q, _resaved(q, old))  # saved anew: format 3
    assert _keys(again.feed(rows[cut:]) + again.close()) == after


def _resaved(q: ceql.Query, old: bytes) -> bytes:
    data = ceql.Evaluator.restore(q, old).snapshot()
    assert data[len(MAGIC):len(MAGIC) + 2] == b"\x00\x03"
    return data


def test_a_snapshot_holds_no_pickle() -> None:
    text, opts, rows, cut = CASES["trailing_not"]
    data = ceql.compile(text).evaluator(**opts)
    data.feed(rows[:cut])
    body = data.snapshot()[len(MAGIC) + 18:]
    with pytest.raises(Exception):  # noqa: B017 (whatever pickle says, it is not one)
        pickle.loads(body)
    assert decode(body)["format"] == 3


def test_a_crafted_pickle_runs_no_code(tmp_path: Path) -> None:
    """A format 2 snapshot is read by an unpickler that can name only a snapshot's types."""
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self) -> tuple[Any, ...]:
            return (os.system, (f"touch {marker}",))

    q = ceql.compile("SELECT * FROM S WHERE A ; B")
    for payload in (Evil(), {"format": 2, "x": Evil()}):
        data = MAGIC + pickle.dumps(payload, protocol=2)
        with pytest.raises(ceql.CeqlInputError, match=r"damaged .*(posix|os)\.system is not "
                                                      r"part of a ceql snapshot"):
            ceql.Evaluator.restore(q, data)
    # reaching code through getattr on an allowed class is refused too
    sneaky = (b"\x80\x02cbuiltins\ngetattr\ncdatetime\ndatetime\nX\t\x00\x00\x00__class__"
              b"\x86R.")
    with pytest.raises(ceql.CeqlInputError, match="'__class__' is not part of a ceql snapshot"):
        ceql.Evaluator.restore(q, MAGIC + sneaky)
    assert not marker.exists()


def test_every_bit_flip_is_an_error_never_another_evaluation() -> None:
    """600 single-bit flips of a snapshot: each one a CeqlInputError (magic, format, checksum
    or contents), never a restore that continues differently, never a raw exception."""
    text, opts, rows, cut = CASES["correlated_last"]
    q = ceql.compile(text)
    ev = q.evaluator(**opts)
    ev.feed(rows[:cut])
    data = ev.snapshot()
    rnd = random.Random(7)
    for _ in range(600):
        i = rnd.randrange(len(data) * 8)
        flipped = bytearray(data)
        flipped[i // 8] ^= 1 << (i % 8)
        with pytest.raises(ceql.CeqlInputError):
            ceql.Evaluator.restore(q, bytes(flipped))


def test_a_value_a_snapshot_cannot_hold_is_named() -> None:
    class Key:
        def __hash__(self) -> int:
            return 1

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Key)

    ev = ceql.compile("SELECT * FROM S WHERE A ; B PARTITION BY [k]").evaluator()
    ev.feed([{"type": "A", "k": Key()}])
    with pytest.raises(ceql.CeqlInputError, match=r"it holds a value of type "
                                                  r"test_snapshot_formats\..*Key"):
        ev.snapshot()


# ---------------------------------------------------------------------- the encoding

_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(),
    st.binary(), st.fractions(), st.decimals(allow_nan=False),
    st.datetimes(timezones=st.one_of(st.none(), st.timezones(), st.just(dt.UTC),
                                     st.builds(dt.timezone, st.timedeltas(
                                         min_value=dt.timedelta(hours=-23),
                                         max_value=dt.timedelta(hours=23))))),
    st.dates(), st.times(), st.timedeltas(), st.timezones())
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(st.one_of(st.text(max_size=3), st.integers()), inner, max_size=4),
        st.frozensets(st.one_of(st.integers(), st.text(max_size=3)), max_size=4),
        st.sets(st.integers(), max_size=4)),
    max_leaves=20)


@PROFILE
@given(_VALUES)
def test_the_encoding_gives_back_what_it_was_given(v: Any) -> None:
    got = decode(encode(v))
    assert got == v
    assert type(got) is type(v)


def test_special_values_round_trip() -> None:
    nan = decode(encode(float("nan")))
    assert nan != nan
    for v in (float("inf"), -0.0, 1 << 200, -(1 << 70), Fraction(-3, 7), Decimal("1.50"),
              dt.datetime(2026, 3, 29, 2, 30, tzinfo=ZoneInfo("Europe/Paris"), fold=1),
              pa.RecordBatch.from_pylist([{"a": 1, "t": dt.datetime(2026, 1, 1)}])):
        got = decode(encode(v))
        assert got.equals(v) if isinstance(v, pa.RecordBatch) else got == v
    assert str(decode(encode(-0.0))) == "-0.0"
    for values in ([1, -5], [300, -2], [70_000], [1 << 40, -(1 << 40)]):
        col = int_column(values)
        assert decode(encode(col)) == col and list(col) == values
        assert col.itemsize == {1: 1, 300: 2, 70_000: 4, 1 << 40: 8}[values[0]]
    assert int_column([True, 2]) == [True, 2] and int_column([1 << 64]) == [1 << 64]


@PROFILE
@given(st.binary(max_size=64))
def test_random_bytes_are_malformed_never_another_error(data: bytes) -> None:
    try:
        decode(data)
    except Malformed:
        pass


def test_nesting_is_bounded_and_unencodable_values_are_named() -> None:
    deep = b"l\x01\x00\x00\x00" * (MAX_DEPTH + 1) + b"N"
    with pytest.raises(Malformed, match="nested deeper"):
        decode(deep)
    with pytest.raises(Malformed, match="items in"):
        decode(b"l\xff\xff\xff\xff")
    with pytest.raises(Unencodable, match=r"builtins\.object"):
        encode([1, object()])
    long = list(range(100_000))
    assert decode(encode(long)) == long  # long containers cost no recursion
