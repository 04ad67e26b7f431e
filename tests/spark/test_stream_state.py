"""A stream's state forgets (issue 28 item 2): many short-lived keys leave no state entry once
the watermark has passed their window, as Spark's own state metrics show, and keys that come
back after going idle, across a restart from the checkpoint, get the batch ``match_id``s."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import pytest

import ceql.spark

pytestmark = pytest.mark.spark

SCHEMA = "seq long, type string, name string, price long, ts timestamp"
T0 = dt.datetime(2026, 3, 2, 8, 0, tzinfo=dt.UTC)
QUERY = ("SELECT * FROM S WHERE S AS s ; B AS b FILTER b[price > s.price] "
         "PARTITION BY [name] WITHIN 2 SECONDS")
KEYS = 240


def _events() -> list[dict[str, Any]]:
    """Key ``k<i>`` lives for a second from ``i/4`` s on (a sale, two buys: two matches at
    ties of equal time); every fifth key comes back 30 s later, long idle, for one match more."""
    out: list[dict[str, Any]] = []
    for i in range(KEYS):
        t = i / 4
        name = f"k{i}"
        out += [{"type": "S", "name": name, "price": 5, "t": t},
                {"type": "B", "name": name, "price": 6, "t": t + 1},
                {"type": "B", "name": name, "price": 7, "t": t + 1}]
        if i % 5 == 0:
            out += [{"type": "S", "name": name, "price": 1, "t": t + 30},
                    {"type": "B", "name": name, "price": 2, "t": t + 30.5}]
    out.sort(key=lambda e: e["t"])
    return [{**e, "seq": n} for n, e in enumerate(out)]


def _land(folder: Path, index: int, rows: list[dict[str, Any]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".part-{index:03d}.tmp"
    lines = (json.dumps({**{k: v for k, v in e.items() if k != "t"},
                         "ts": (T0 + dt.timedelta(seconds=e["t"])).isoformat()}) + "\n"
             for e in rows)
    tmp.write_text("".join(lines), encoding="utf-8")
    os.utime(tmp, (1_700_000_000 + index, 1_700_000_000 + index))
    tmp.rename(folder / f"part-{index:03d}.json")


def _run(spark: Any, folder: Path, checkpoint: Path, out: Path) -> list[dict[str, Any]]:
    """The stream over the files landed so far (one a micro-batch) into Parquet; its progress
    reports."""
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(folder))
    matches = ceql.spark.match(df, QUERY, watermark="1 second", tie_break="seq", buckets=0)
    q = (matches.writeStream.format("parquet").option("path", str(out))
         .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    q.awaitTermination()
    assert q.exception() is None
    return list(q.recentProgress)


def _state_rows(progress: dict[str, Any]) -> int:
    return sum(int(s["numRowsTotal"]) for s in progress["stateOperators"])


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((r["match_id"], r["name"], r["match_start"], r["match_end"],
                   tuple(e["seq"] for e in r["s"]), tuple(e["seq"] for e in r["b"]))
                  for r in df.collect())


def test_short_lived_keys_leave_no_state_and_ids_survive_a_restart(spark: Any,
                                                                     tmp_path: Path) -> None:
    events = _events()
    pieces = [events[i:i + 100] for i in range(0, len(events), 100)]
    end = {"seq": 10**6, "type": "Z", "name": "Z", "price": 0, "t": events[-1]["t"] + 3600}
    folder, ck, out = tmp_path / "in", tmp_path / "ck", tmp_path / "out"
    half = len(pieces) // 2
    for i, piece in enumerate(pieces[:half]):
        _land(folder, i, piece)
    first = _run(spark, folder, ck, out)
    for i, piece in enumerate([*pieces[half:], [end]], start=half):
        _land(folder, i, piece)
    second = _run(spark, folder, ck, out)
    # every key of the stream has gone idle but Z (one row held, one timer): nothing is left of
    # the 240 others — before issue 28 each kept an entry (its match counter), 240 rows
    progress = [p for p in [*first, *second] if p["stateOperators"]]
    assert max(_state_rows(p) for p in progress) > 5  # live keys do hold state
    assert _state_rows(progress[-1]) <= 2, progress[-1]["stateOperators"]
    got = spark.read.parquet(str(out))
    batch = ceql.spark.match(spark.read.schema(SCHEMA).json(str(folder)), QUERY,
                             tie_break="seq")
    want = _rows(batch)
    assert len(want) == 2 * KEYS + KEYS // 5
    assert _rows(got) == want  # the batch match_ids, across the restart and the keys' idling
    assert len({r[0] for r in want}) == len(want)
