"""``ceql run --engine spark`` in this process, on the shared session: what the local engine
gives, positions included, where Spark cannot tell events apart by their times. (Starting a
JVM per run is what tests/e2e/test_cli.py checks once; here the runs reuse one.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import ceql.spark
from ceql.cli.arguments import main

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
STOCK = ROOT / "examples" / "stock.csv"
QUERIES = ROOT / "examples" / "queries"


class _Kept:
    """The shared session, which the command's ``stop()`` at its end must not stop."""

    def __init__(self, spark: Any) -> None:
        self._spark = spark

    def stop(self) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._spark, name)


@pytest.fixture
def run(spark: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
        ) -> Any:
    monkeypatch.setattr(ceql.spark, "local_session", lambda **conf: _Kept(spark))

    def ceql_run(*args: str | Path, engine: str) -> str:
        argv = ["run", *map(str, args), "--engine", engine]
        if engine == "spark":
            argv += ["--spark-log", "ERROR"]  # Spark's log on stderr, not a file through fd 2
        capsys.readouterr()
        status = main(argv)
        out, err = capsys.readouterr()
        assert status == 0, err
        return out

    return ceql_run


def _lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_partition_by_gives_the_local_lines(run: Any) -> None:
    """q3 partitions by volume: one engine per volume in Spark's tasks."""
    args = [QUERIES / "q3.ceql", "-i", STOCK, "--time", "ts", "--time-unit", "us"]
    local = run(*args, engine="local")
    assert len(_lines(local)) == 15
    assert run(*args, engine="spark") == local


def test_kleene_and_variables_to_parquet(run: Any, tmp_path: Path) -> None:
    files = {engine: tmp_path / f"{engine}.parquet" for engine in ("local", "spark")}
    for engine, out in files.items():
        run(QUERIES / "q7.ceql", "-i", STOCK, "--time", "ts", "--time-unit", "us",
            "--variables", "-o", out, engine=engine)
    assert pq.read_table(files["spark"]).equals(pq.read_table(files["local"]))
    assert pq.read_table(files["spark"]).num_rows == 78


def test_positions_with_equal_times(run: Any, tmp_path: Path) -> None:
    """Four events a time in two partitions: the interval's ends of a match that SELECT leaves
    out, which times alone cannot tell apart, still come out as the local engine gives them,
    with and without a time window, in file order and after --sort."""
    rows = [{"type": "ABCAACBBCCAB"[i % 12] if i % 5 else "CAB"[i % 3],
             "k": "xy"[(i // 3) % 2], "ts": i // 4} for i in range(48)]
    tied, shuffled = tmp_path / "tied.csv", tmp_path / "shuffled.csv"
    pacsv.write_csv(pa.Table.from_pylist(rows), tied)
    pacsv.write_csv(pa.Table.from_pylist(rows[20:] + rows[:20]), shuffled)
    projected = tmp_path / "projected.ceql"
    projected.write_text("SELECT mid FROM S WHERE A AS x ; B AS mid ; C AS z\n"
                         "PARTITION BY [k] WITHIN 6 EVENTS\n")
    every = tmp_path / "every.ceql"
    every.write_text("SELECT * FROM S WHERE A AS x ; B+ AS mid ; C AS z\n"
                     "PARTITION BY [k] WITHIN 2 SECONDS\n")
    timed = tmp_path / "timed.ceql"  # MATCH_CEQL gets the real times: a window reads them
    timed.write_text("SELECT mid FROM S WHERE A AS x ; B AS mid ; C AS z\n"
                     "PARTITION BY [k] WITHIN 3 SECONDS\n")
    runs = [(projected, tied, []), (projected, shuffled, ["--sort"]),
            (every, shuffled, ["--sort"]), (timed, tied, []), (timed, shuffled, ["--sort"])]
    for query, path, extra in runs:
        args = [query, "-i", path, "--time", "ts", "--variables", *extra]
        local = run(*args, engine="local")
        assert _lines(local), (query.name, extra)
        assert run(*args, engine="spark") == local, (query.name, extra)
        if query in (projected, timed) and not extra:
            # some match starts after an event of its own partition and time, and some ends
            # before one: the rows at a match's times do not say where it starts and ends
            first: dict[tuple[Any, Any], int] = {}
            last: dict[tuple[Any, Any], int] = {}
            for i, r in enumerate(rows):
                first.setdefault((r["ts"], r["k"]), i)
                last[r["ts"], r["k"]] = i
            found = _lines(local)
            assert any(first[rows[m["start"]]["ts"], rows[m["start"]]["k"]] != m["start"]
                       for m in found)
            assert any(last[rows[m["end"]]["ts"], rows[m["end"]]["k"]] != m["end"]
                       for m in found)
