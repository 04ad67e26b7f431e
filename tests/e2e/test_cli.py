"""End-to-end tests of the ``ceql`` command line, run as a subprocess like a shell user would."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import ceql

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
STOCK = EXAMPLES / "stock.csv"
QUERIES = EXAMPLES / "queries"
TIME = ["--time", "ts", "--time-unit", "us"]
SUMMARY = (r"ceql: [\d,]+ events? read, [\d,]+ match(es)? in \d+\.\d\d s "
           r"\(\d+(\.\d)?( [kM])? events/s\)")


def ceql_cmd(*args: str | Path, stdin: bytes | None = None,
             timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``python -m ceql ARGS`` from the repository root."""
    return subprocess.run([sys.executable, "-m", "ceql", *map(str, args)], cwd=ROOT,
                          input=stdin.decode() if stdin is not None else None,
                          capture_output=True, text=True, timeout=timeout)


def engine_dicts(query_file: Path, table: pa.Table, **kw: Any) -> list[dict[str, Any]]:
    """What the engine itself finds (the input then ends), as ``Match.to_dict()``s in output
    order."""
    q = ceql.compile(query_file.read_text())
    ev = q.evaluator(**(kw or {"time": "ts", "time_unit": "us"}))
    return [m.to_dict() for m in ev.feed(table) + ev.close()]


def lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


@pytest.fixture(scope="module")
def stock() -> pa.Table:
    return pacsv.read_csv(STOCK)


# ---------------------------------------------------------------------------- matches

@pytest.mark.parametrize("name", ["p3", "q3", "q4", "q7", "no_resale", "unanswered_sale"])
def test_run_csv_gives_the_engines_matches(name: str, stock: pa.Table) -> None:
    query = QUERIES / f"{name}.ceql"
    r = ceql_cmd("run", query, "--input", STOCK, *TIME, "--engine", "local")
    assert r.returncode == 0, r.stderr
    expected = engine_dicts(query, stock)
    assert expected  # the example queries all match something on the sample
    assert lines(r.stdout) == expected
    assert "Traceback" not in r.stderr


def test_run_parquet_and_jsonl_inputs(tmp_path: Path, stock: pa.Table) -> None:
    query = QUERIES / "q6.ceql"
    expected = engine_dicts(query, stock)
    parquet = tmp_path / "stock.parquet"
    pq.write_table(stock, parquet, row_group_size=1000)
    jsonl = tmp_path / "stock.jsonl"
    jsonl.write_text("".join(json.dumps(row) + "\n" for row in stock.to_pylist()))
    for path in (parquet, jsonl):
        r = ceql_cmd("run", query, "-i", path, *TIME)
        assert r.returncode == 0, r.stderr
        assert lines(r.stdout) == expected, path.name


def test_state_carries_across_batches(tmp_path: Path, stock: pa.Table) -> None:
    """A CSV of several read blocks gives what the engine gives on the whole table at once."""
    n = stock.num_rows
    parts = []
    for k in range(8):  # ≈1.9 MB: several 1 MiB blocks; ts stays increasing
        ts = pa.array([t + k * 10**10 for t in stock.column("ts").to_pylist()])
        parts.append(stock.set_column(5, "ts", ts).set_column(
            1, "id", pa.array(range(k * n, (k + 1) * n))))
    big = pa.concat_tables(parts)
    path = tmp_path / "big.csv"
    pacsv.write_csv(big, path)
    assert path.stat().st_size > 1.5 * (1 << 20)
    query = QUERIES / "q7.ceql"
    r = ceql_cmd("run", query, "-i", path, *TIME)
    assert r.returncode == 0, r.stderr
    assert lines(r.stdout) == engine_dicts(query, big)
    assert f"ceql: {big.num_rows:,} events read" in r.stderr


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_output_formats_round_trip(fmt: str, tmp_path: Path, stock: pa.Table) -> None:
    query = QUERIES / "q3.ceql"  # PARTITION BY [volume]: a partition column too
    expected = engine_dicts(query, stock)
    out = tmp_path / f"matches.{fmt}"
    r = ceql_cmd("run", query, "-i", STOCK, *TIME, "--output", out)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    if fmt == "jsonl":
        got = lines(out.read_text())
    else:
        if fmt == "csv":
            table = pacsv.read_csv(out, convert_options=pacsv.ConvertOptions(
                column_types={"positions": pa.string()}))
            assert table.column_names == ["start", "end", "positions", "volume"]
            rows = [dict(r, positions=[int(p) for p in r["positions"].split(";")])
                    for r in table.to_pylist()]
        else:
            table = pq.read_table(out)
            assert table.schema.field("positions").type == pa.list_(pa.int64())
            assert table.schema.field("volume").type == stock.schema.field("volume").type
            rows = table.to_pylist()
        got = [{"start": r["start"], "end": r["end"], "positions": r["positions"],
                "partition": [r["volume"]]} for r in rows]
    assert got == expected
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no temporary file left


def test_variables_column(tmp_path: Path, stock: pa.Table) -> None:
    query = QUERIES / "q7.ceql"
    q = ceql.compile(query.read_text())
    expected = [{v: list(m.variables[v]) for v in q.variables if m.variables.get(v)}
                for m in q.evaluator(time="ts", time_unit="us").feed(stock)]
    r = ceql_cmd("run", query, "-i", STOCK, *TIME, "--variables")
    assert [d["variables"] for d in lines(r.stdout)] == expected
    assert list(expected[0]) == ["SELL", "msft", "BUY", "qqq", "amat"]  # in pattern order
    out = tmp_path / "m.parquet"
    ceql_cmd("run", query, "-i", STOCK, *TIME, "--variables", "-o", out)
    got = [{k: v for k, v in row} for row in pq.read_table(out).column("variables").to_pylist()]
    assert got == expected


def test_csv_to_stdout_and_unknown_output_extension(tmp_path: Path) -> None:
    r = ceql_cmd("run", QUERIES / "p3.ceql", "-i", STOCK, *TIME, "--output-format", "csv")
    assert r.returncode == 0
    assert r.stdout.splitlines()[0] == "start,end,positions"
    r = ceql_cmd("run", QUERIES / "p3.ceql", "-i", STOCK, *TIME, "-o", tmp_path / "m.txt")
    assert r.returncode == 2
    assert r.stderr == (f"ceql: error: cannot tell the output format of "
                        f"'{tmp_path / 'm.txt'}': name it .jsonl, .csv or .parquet, or give "
                        "--output-format\n")
    assert not list(tmp_path.iterdir())


def test_sort_option_orders_by_time_first(tmp_path: Path, stock: pa.Table) -> None:
    rows = stock.to_pylist()
    shuffled = rows[2500:] + rows[:2500]
    path = tmp_path / "shuffled.csv"
    pacsv.write_csv(pa.Table.from_pylist(shuffled), path)
    query = QUERIES / "q4.ceql"
    q = ceql.compile(query.read_text())
    expected = [m.to_dict() for m in q.run(shuffled, time="ts", time_unit="us", sort=True)]
    r = ceql_cmd("run", query, "-i", path, *TIME, "--sort")
    assert r.returncode == 0, r.stderr
    assert lines(r.stdout) == expected


# ---------------------------------------------------------------------------- messages

def test_summary_line_and_quiet() -> None:
    r = ceql_cmd("run", QUERIES / "p3.ceql", "-i", STOCK, *TIME)
    assert r.stderr.splitlines() == [r.stderr.strip()]
    assert re.fullmatch(SUMMARY, r.stderr.strip()), r.stderr
    assert r.stderr.startswith("ceql: 5,000 events read, 371 matches in ")
    assert "\r" not in r.stderr  # no progress bar when standard error is not a terminal
    q = ceql_cmd("run", QUERIES / "p3.ceql", "-i", STOCK, *TIME, "--quiet")
    assert q.returncode == 0 and q.stderr == "" and q.stdout == r.stdout


def test_progress_bar_on_a_terminal() -> None:
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "ceql", "run", str(QUERIES / "p3.ceql"),
                             "-i", str(STOCK), *TIME],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    proc.wait(10)
    text = seen.decode()
    assert "ceql [" in text and "100%" in text and "\r" in text, text
    assert "5,000 events read, 371 matches" in text


def test_a_time_window_needs_a_time_column() -> None:
    r = ceql_cmd("run", QUERIES / "p3.ceql", "-i", STOCK)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == ("ceql: error: the query's window (WITHIN) is a length of time, but no "
                        "--time column was given: name the column holding each event's time "
                        "with --time COL (without one, events have positions, not times)\n")
    r = ceql_cmd("run", QUERIES / "p3.ceql", "-i", STOCK, "--time", "ts")
    assert "looks like microseconds since 1970" in r.stderr
    assert "--time-unit us" in r.stderr


def test_explain() -> None:
    query = QUERIES / "q7.ceql"
    r = ceql_cmd("explain", query)
    assert r.returncode == 0
    assert r.stdout == ceql.explain(query.read_text()).rstrip("\n") + "\n"
    d = ceql_cmd("explain", "--dot", query)
    assert d.returncode == 0 and d.stdout.lstrip().startswith("digraph")
    s = ceql_cmd("explain", "-", stdin=query.read_bytes())
    assert s.stdout == r.stdout


BAD = "SELECT * FROM Stock\nWHERE SELL AS a ;; BUY AS b\nWITHIN 10 SECONDS\n"


@pytest.mark.parametrize("command", ["run", "explain"])
def test_bad_query_exits_2_with_the_caret_message(command: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.ceql"
    path.write_text(BAD)
    with pytest.raises(ceql.CeqlSyntaxError) as exc:
        ceql.compile(BAD)
    args = ["-i", str(STOCK)] if command == "run" else []
    r = ceql_cmd(command, path, *args)
    assert r.returncode == 2
    assert r.stderr == f"ceql: error: {path}: {exc.value}\n"
    assert r.stderr.splitlines()[1:] == ["WHERE SELL AS a ;; BUY AS b", " " * 17 + "^"]
    assert r.stdout == ""


def test_attribute_unknown_to_the_input_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "typo.ceql"
    path.write_text((QUERIES / "p3.ceql").read_text().replace("e1[name", "e1[nmae"))
    r = ceql_cmd("run", path, "-i", STOCK, *TIME)
    assert r.returncode == 2
    assert r.stderr.startswith(f"ceql: error: {path}: Unknown attribute 'nmae'")
    assert "did you mean 'name'?" in r.stderr and "^^^^" in r.stderr


def test_missing_files_exit_1(tmp_path: Path) -> None:
    missing = tmp_path / "nope.csv"
    r = ceql_cmd("run", QUERIES / "p3.ceql", "-i", missing, *TIME)
    assert (r.returncode, r.stderr) == (1, f"ceql: error: cannot read {missing}: No such file "
                                           "or directory\n")
    r = ceql_cmd("run", tmp_path / "nope.ceql", "-i", STOCK)
    assert (r.returncode, r.stderr) == (1, f"ceql: error: cannot read query file "
                                           f"{tmp_path / 'nope.ceql'}: No such file or "
                                           "directory\n")
    r = ceql_cmd("run", QUERIES / "p3.ceql", "-i", STOCK, *TIME, "-o", tmp_path / "no" / "m.csv")
    assert (r.returncode, r.stderr) == (1, f"ceql: error: cannot write {tmp_path / 'no' / 'm.csv'}"
                                           ": No such file or directory\n")


def test_unknown_columns_exit_1() -> None:
    r = ceql_cmd("run", QUERIES / "p3.ceql", "-i", STOCK, "--time", "tz")
    assert r.returncode == 1
    assert r.stderr == (f"ceql: error: {STOCK} has no column 'tz' for --time; its columns are "
                        "type, id, name, volume, price, ts\n")
    r = ceql_cmd("run", QUERIES / "p3.ceql", "-i", STOCK, *TIME, "--type-col", "kind")
    assert r.returncode == 1
    assert "has no column 'kind' for the event type (--type-col)" in r.stderr


def test_out_of_order_times_exit_1(tmp_path: Path, stock: pa.Table) -> None:
    rows = stock.to_pylist()
    rows[10], rows[11] = rows[11], rows[10]
    path = tmp_path / "swapped.csv"
    pacsv.write_csv(pa.Table.from_pylist(rows), path)
    r = ceql_cmd("run", QUERIES / "p3.ceql", "-i", path, *TIME)
    assert r.returncode == 1
    assert len(r.stderr.splitlines()) == 1
    assert r.stderr.startswith(f"ceql: error: {path}: Event 11 is out of order")
    assert "--sort" in r.stderr and "Traceback" not in r.stderr


def test_unreadable_input_exits_1(tmp_path: Path) -> None:
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"not parquet at all")
    r = ceql_cmd("run", QUERIES / "p3.ceql", "-i", path, *TIME)
    assert r.returncode == 1
    assert r.stderr.startswith(f"ceql: error: cannot read {path}: ")
    assert len(r.stderr.splitlines()) == 1
    bad = tmp_path / "ragged.csv"
    bad.write_text("type,ts\nSELL,1\nBUY,2,3\n")
    r = ceql_cmd("run", QUERIES / "p3.ceql", "-i", bad, "--time", "ts")
    assert r.returncode == 1 and r.stderr.startswith(f"ceql: error: cannot read {bad}: ")


def test_interrupt_exits_130_quietly(stock: pa.Table) -> None:
    events = pa.concat_tables([stock.set_column(5, "ts", pa.array(
        [t + k * 10**10 for t in stock.column("ts").to_pylist()])) for k in range(6)])
    data = pa.BufferOutputStream()
    pacsv.write_csv(events, data)  # ≈1.4 MB: more than one read block
    proc = subprocess.Popen([sys.executable, "-m", "ceql", "run", str(QUERIES / "p3.ceql"),
                             "-i", "-", "--input-format", "csv", *TIME, "--progress"],
                            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.write(data.getvalue().to_pybytes())  # and keep standard input open
    proc.stdin.flush()
    seen = b""
    deadline = time.monotonic() + 120
    while b"events" not in seen and time.monotonic() < deadline:  # the first batch is done
        ready, _, _ = select.select([proc.stderr], [], [], 1)
        if ready:
            seen += os.read(proc.stderr.fileno(), 4096)
    assert b"events" in seen, seen
    proc.send_signal(signal.SIGINT)
    # standard input stays open until it has exited: only the signal can end it (closing it
    # first would race the signal with the end of input, which exits 0)
    proc.wait(timeout=60)
    err = proc.stderr.read()
    proc.stdin.close()
    assert proc.returncode == 130
    assert err.strip(b"\r\x1b[K") == b""  # the bar is erased, nothing else is said


def test_closed_pipe_stops_quietly(tmp_path: Path) -> None:
    query = tmp_path / "all.ceql"  # P3 with every match: tens of thousands of lines
    query.write_text((QUERIES / "p3.ceql").read_text().replace("CONSUME BY ANY", ""))
    proc = subprocess.Popen([sys.executable, "-m", "ceql", "run", str(query), "-i", str(STOCK),
                             *TIME], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    assert json.loads(first)["positions"]
    proc.stdout.close()
    err = proc.stderr.read()
    proc.wait(60)
    assert proc.returncode == 141
    assert b"Traceback" not in err and b"Exception" not in err


def test_help_everywhere_and_console_script() -> None:
    for args in ([], ["run"], ["explain"]):
        r = ceql_cmd(*args, "--help")
        assert r.returncode == 0 and r.stdout.startswith("usage: ceql"), args
    assert "--time-unit" in ceql_cmd("run", "--help").stdout
    script = Path(sys.executable).parent / "ceql"
    if not script.exists():
        pytest.skip("the ceql console script is not installed next to this Python")
    r = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == f"ceql {ceql.__version__}"


def test_bad_arguments_exit_2() -> None:
    r = ceql_cmd("run", QUERIES / "p3.ceql")  # no --input
    assert r.returncode == 2 and "required: -i/--input" in r.stderr
    r = ceql_cmd("run", QUERIES / "p3.ceql", "-i", STOCK, "--time-unit", "h")
    assert r.returncode == 2 and "invalid choice: 'h'" in r.stderr
    r = ceql_cmd("run", QUERIES / "p3.ceql", "-i", STOCK, "--sort")
    assert r.returncode == 2 and "--sort needs --time" in r.stderr
    r = ceql_cmd("frobnicate")
    assert r.returncode == 2


# ---------------------------------------------------------------------------- Spark
# --engine spark as a subprocess: tests/e2e/test_quiet_spark.py (what it prints),
# test_cli_guards.py (text times, warnings, a task's error); its answers on more queries, in
# this process on one JVM: tests/spark/test_cli_spark.py
