"""Exactly once through a crash: ``examples/streaming.py`` tails a directory, its driver is
killed (SIGKILL, the JVM with it) mid-stream, more files land, and the program started again
from its checkpoint finishes the job; the Parquet it wrote holds each alert once — the same
complex events, with the same ``match_id``s, as the engine gives over every trade (issue 13,
item 3)."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import ceql
from ceql.spark import match_ids

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
import streaming  # noqa: E402


def _start(*args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    return subprocess.Popen([sys.executable, str(ROOT / "examples" / "streaming.py"), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)


def _commits(checkpoint: Path) -> int:
    folder = checkpoint / "commits"
    return len([p for p in folder.iterdir() if p.name.isdigit()]) if folder.is_dir() else 0


def _wait(what: Any, proc: subprocess.Popen[bytes], timeout: float = 240) -> None:
    end = time.monotonic() + timeout
    while not what():
        assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
        assert time.monotonic() < end, "the stream made no progress"
        time.sleep(0.5)


def _expected(trades: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
    """(match_id, name, first and last time) of every alert, from the engine without Spark:
    per ticker, ids by ``match_ids`` over its rows."""
    q = ceql.compile(streaming.QUERY)
    out = set()
    for name in sorted({t["name"] for t in trades}):
        rows = [{**t, "ts": dt.datetime.fromisoformat(t["ts"])} for t in trades
                if t["name"] == name]
        ms = list(q.run(rows, time="ts"))
        for m, mid in zip(ms, match_ids((name,), ms, rows), strict=True):
            out.add((mid, name, rows[m.start_position]["ts"], rows[m.end_position]["ts"]))
    return out


def _utc(v: Any) -> dt.datetime:
    """A time read back from Spark's Parquet (INT96: naive, in UTC) as an aware datetime."""
    v = v.to_pydatetime() if hasattr(v, "to_pydatetime") else v
    return v if v.tzinfo is not None else v.replace(tzinfo=dt.UTC)


def test_killed_driver_restarts_from_checkpoint_exactly_once(tmp_path: Path) -> None:
    folder, checkpoint, output = tmp_path / "in", tmp_path / "ck", tmp_path / "out"
    folder.mkdir()
    trades = streaming.demo_trades(360, seed=4)
    last = dt.datetime.fromisoformat(trades[-1]["ts"])
    end = {"type": "QUOTE", "name": "ZZZZ", "price": 0.0,  # moves the watermark past the rest
           "ts": (last + dt.timedelta(minutes=5)).isoformat()}
    files = [trades[i:i + 60] for i in range(0, len(trades), 60)] + [[end]]
    for i in (0, 1):
        streaming._land(folder, i, files[i])
    run = _start("--input", str(folder), "--checkpoint", str(checkpoint),
                 "--output", str(output))
    try:
        _wait(lambda: _commits(checkpoint) >= 1, run)
        for i in (2, 3):
            streaming._land(folder, i, files[i])
        _wait(lambda: _commits(checkpoint) >= 2 and output.is_dir(), run)
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
    for i in range(4, len(files)):
        streaming._land(folder, i, files[i])
    again = _start("--input", str(folder), "--checkpoint", str(checkpoint),
                   "--output", str(output), "--once")
    out, _ = again.communicate(timeout=300)
    assert again.returncode == 0, out.decode()
    table = pq.read_table(output)
    got = {(r["match_id"], r["name"], _utc(r["match_start"]), _utc(r["match_end"]))
           for r in table.select(["match_id", "name", "match_start", "match_end"]).to_pylist()}
    assert table.num_rows == len(got)  # no alert twice
    assert got == _expected(trades)
