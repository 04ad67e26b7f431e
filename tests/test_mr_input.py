"""The MATCH_RECOGNIZE engines' input: Arrow read as pyarrow's own rows (ceql.mr.arrow_rows),
and the quick ORDER BY check (ceql.mr.partitions.order_check) against the exact one."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ceql.frontends.mr import ast as A
from ceql.mr import arrow_rows
from ceql.mr.partitions import order_check, out_of_order

_DIV = {"s": 10**6, "ms": 10**3, "us": 1}


@pytest.mark.parametrize("zone", ["UTC", "Etc/UTC", "GMT", "America/New_York", "Europe/Paris",
                                  "Asia/Kolkata", "+00:00", "+05:30", "-03:00"])
@pytest.mark.parametrize("unit", ["s", "ms", "us"])
def test_zoned_timestamps_read_as_pyarrow_reads_them(zone: str, unit: str) -> None:
    # every hour over two years on both sides of the epoch (DST changes included), NULLs too
    micros = [h * 3_600_000_000 + 123_456 for h in range(-9000, 9000, 7)] + [None]
    values = [None if m is None else m // _DIV[unit] for m in micros]
    table = pa.table({"k": list(range(len(values))),
                      "t": pa.array(values, pa.timestamp(unit, zone)), "s": ["x"] * len(values)})
    for data in (table, table.to_batches()[0]):
        want, got = data.to_pylist(), arrow_rows(data)
        assert got == want
        for g, w in zip(got, want, strict=True):
            assert list(g) == list(w)  # the columns' order
            a, b = g["t"], w["t"]
            if isinstance(a, dt.datetime) and isinstance(b, dt.datetime):
                assert (a.replace(tzinfo=None), a.utcoffset(), a.tzinfo, a.fold) == (
                    b.replace(tzinfo=None), b.utcoffset(), b.tzinfo, b.fold)
            else:
                assert a is None and b is None


def test_other_columns_are_pyarrows() -> None:
    table = pa.table({"t": pa.array([1, None], pa.timestamp("ns", "UTC")),
                      "n": pa.array([1, None], pa.timestamp("us")), "d": [Decimal("1.5"), None]})
    assert arrow_rows(table) == table.to_pylist()


_VALUES = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from([-0.5, 0.0, 1.0, float("nan")]),
                    st.sampled_from(["a", "b", True, False, Decimal("0.5"),
                                     dt.datetime(2024, 1, 1), dt.timedelta(1)]))


@given(st.lists(st.tuples(st.booleans(), st.sampled_from([None, True, False])), min_size=1,
                max_size=3).flatmap(lambda keys: st.tuples(
                    st.just(keys), st.lists(_VALUES, min_size=len(keys), max_size=len(keys)),
                    st.lists(_VALUES, min_size=len(keys), max_size=len(keys)))))
def test_the_quick_order_check_is_the_exact_one(case: Any) -> None:
    flags, before, after = case
    keys = tuple(A.SortKey("c", desc, nulls) for desc, nulls in flags)

    def outcome(f: Any) -> object:
        try:
            return f(before, after)
        except Exception as e:  # the same refusal of values that do not compare
            return type(e)
    assert outcome(order_check(keys)) == outcome(lambda b, a: out_of_order(b, a, keys))
