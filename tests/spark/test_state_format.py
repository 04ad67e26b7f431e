"""A stream key's state in Spark's state store (``ceql.spark.stream.state_codec``): format 1 round
trips exactly and runs no code on reading; checkpoints of earlier ceql versions (pickles) still
continue exactly; damage and crafted entries are named errors, never another evaluation."""

from __future__ import annotations

import hashlib
import os
import pickle
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType

from ceql.runtime import codec
from ceql.spark.errors import MatchCeqlError
from ceql.spark.stream.keystate import TIME_US, CeqlEngine, KeyState, StreamPlan, stream_plan
from ceql.spark.stream.state_codec import FORMAT, MAGIC, dump_state, load_state
from ceql.spark.udtf.call import CallInfo
from ceql.spark.udtf.ceql_plan import plan_match
from ceql.spark.udtf.runner import MatchRunner

pytestmark = pytest.mark.spark

DATA = Path(__file__).resolve().parents[1] / "data" / "keystate"
QUERY = ("SELECT * FROM S WHERE SELL AS s ; BUY AS b FILTER b[price > s.price] "
         "PARTITION BY [name] WITHIN 10 SECONDS")
FIRST = [("SELL", 10, 0), ("BUY", 12, 3), ("SELL", 9, 4), ("BUY", 8, 20)]
LATER = [("SELL", 7, 6), ("BUY", 11, 9)]


def _plan() -> StreamPlan:
    schema = StructType([StructField("name", StringType()), StructField("type", StringType()),
                         StructField("price", LongType()), StructField("t", LongType())])
    spec = plan_match(schema, {"query": QUERY, "time": "t", "tie_break": "price"}, CallInfo())
    return stream_plan(spec, "ALL", timestamp=False, tie_break=("price",))


def _rows(trades: list[tuple[str, int, int]], us: bool = True) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(
        [{"name": "A", "type": k, "price": p, "t": t, **({TIME_US: t * 10**6} if us else {})}
         for k, p, t in trades])


def _out(batches: Any) -> list[dict[str, Any]]:
    return [r for b in batches for r in b.to_pylist()]


def _first_state(plan: StreamPlan) -> tuple[KeyState, list[dict[str, Any]]]:
    ks = KeyState()
    ks.accept(plan, _rows(FIRST), 0)
    out = _out(ks.release(plan, 5000))
    ks.reschedule(plan)
    return ks, out


def _later(plan: StreamPlan, ks: KeyState) -> list[dict[str, Any]]:
    ks.accept(plan, _rows(LATER), 5000)
    return _out(ks.release(plan, 30000))


def _batch(plan: StreamPlan) -> list[dict[str, Any]]:
    rows = sorted([*FIRST, *LATER], key=lambda r: r[2])
    assert isinstance(plan.engine, CeqlEngine)
    return _out(MatchRunner(plan.engine.spec).feed(_rows(rows, us=False)))


def _by_end(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (r["match_end"], r["match_start"], r["match_id"]))


def test_the_worked_state_round_trips_and_continues_exactly() -> None:
    plan = _plan()
    ks, first = _first_state(plan)
    assert ks.runner is not None and ks.held is not None and ks.timers
    data = dump_state(ks)
    assert data.startswith(MAGIC) and data[len(MAGIC)] == FORMAT
    body = codec.decode(data[len(MAGIC) + 1 + 32:])  # plain data all through
    assert set(body) >= {"held", "runner", "timers"} and isinstance(body["runner"]["engine"],
                                                                     bytes)
    again = load_state(data, plan)
    assert dump_state(again) == data
    want = _batch(plan)
    assert len(want) == 4 and first == want[:1]
    assert _later(plan, again) == want[1:]


@pytest.mark.parametrize("name", ["format2_era", "format3_era"])
def test_a_pickled_checkpoint_of_an_earlier_ceql_continues_exactly(name: str) -> None:
    plan = _plan()
    old = load_state((DATA / f"{name}.pickle").read_bytes(), plan)
    assert old.timers and old.held is not None and old.held.num_rows == 1
    want = _batch(plan)[1:]
    resaved = load_state(dump_state(old), plan)  # written back in format 1
    # The old state continues on the register runs that took it, a fresh run on the join engine:
    # matches with the same end come in either engine's order (SEMANTICS: not specified).
    assert _by_end(_later(plan, old)) == _by_end(want)
    assert _by_end(_later(plan, resaved)) == _by_end(want)


def test_a_crafted_pickle_runs_no_code(tmp_path: Path) -> None:
    flag = tmp_path / "ran"

    class Evil:
        def __reduce__(self) -> tuple[Any, ...]:
            return (os.system, (f"touch {flag}",))

    with pytest.raises(MatchCeqlError, match=r"posix.system is not part of a ceql key state"
                       r"|os.system is not part of a ceql key state"):
        load_state(pickle.dumps(Evil()), _plan())
    assert not flag.exists()
    with pytest.raises(MatchCeqlError, match="holds a dict, not a key state"):
        load_state(pickle.dumps({"runner": None}), _plan())


def test_damage_is_named_never_another_evaluation() -> None:
    plan = _plan()
    ks, _ = _first_state(plan)
    data = dump_state(ks)
    rnd = random.Random(7)
    for pos in rnd.sample(range(len(data)), 300):
        bad = bytearray(data)
        bad[pos] ^= 1 << rnd.randrange(8)
        with pytest.raises(MatchCeqlError, match=r"damaged|format"):
            load_state(bytes(bad), plan)
    for cut in (0, 5, len(MAGIC) + 10, len(data) - 1):
        with pytest.raises(MatchCeqlError, match="damaged"):
            load_state(data[:cut], plan)


def test_a_well_formed_body_of_the_wrong_shape_is_damaged() -> None:
    plan = _plan()

    def framed(body: Any) -> bytes:
        raw = codec.encode(body)
        return MAGIC + bytes((FORMAT,)) + hashlib.sha256(raw).digest() + raw

    ks, _ = _first_state(plan)
    good = codec.decode(dump_state(ks)[len(MAGIC) + 1 + 32:])
    for key, junk in [("timers", ("x",)), ("held", b"not arrow"), ("late", 1.5),
                      ("runner", {"engine": "text"})]:
        with pytest.raises(MatchCeqlError, match="damaged"):
            load_state(framed({**good, key: junk}), plan)
    with pytest.raises(MatchCeqlError, match="damaged"):
        load_state(framed([1, 2]), plan)


def test_a_newer_format_says_which_version_to_use() -> None:
    ks, _ = _first_state(_plan())
    data = bytearray(dump_state(ks))
    data[len(MAGIC)] = FORMAT + 1
    with pytest.raises(MatchCeqlError, match=f"format {FORMAT + 1}, and this ceql reads "
                                             f"format {FORMAT}"):
        load_state(bytes(data), _plan())


def test_the_state_of_another_query_is_refused() -> None:
    plan = _plan()
    ks, _ = _first_state(plan)
    data = dump_state(ks)
    schema = StructType([StructField("name", StringType()), StructField("type", StringType()),
                         StructField("price", LongType()), StructField("t", LongType())])
    other = plan_match(schema, {"query": QUERY.replace(">", "<"), "time": "t"}, CallInfo())
    with pytest.raises(MatchCeqlError, match="cannot continue the query"):
        load_state(data, stream_plan(other, "ALL", timestamp=False))
