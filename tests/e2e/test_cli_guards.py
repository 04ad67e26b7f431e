"""The command line's guards against silent wrong answers, and what it shows (issue 10): the
query as text, FROM over one file, text times (``--time-format``), ``--fields``, variables
in pattern order, and warnings (names never seen, compile-time warnings) as ``ceql:`` lines."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest
from test_cli import STOCK, TIME, ceql_cmd, lines

import ceql

BASE = dt.datetime(2026, 11, 25, 9, 0, 0)
TEXT_FORMAT = "%d/%m/%Y %H:%M:%S"


def _clicks(n: int = 40) -> list[dict[str, Any]]:
    """A click stream: each user logs in, browses, and every other one buys."""
    rows = []
    for i in range(n):
        user = f"u{i % 4}"
        kind = ("login", "cart", "view", "purchase" if (i // 4) % 2 else "view")[(i // 4) % 4]
        rows.append({"type": kind, "user": user, "amount": i,
                     "when": (BASE + dt.timedelta(seconds=i)).strftime(TEXT_FORMAT)})
    return rows


@pytest.fixture(scope="module")
def clicks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("clicks") / "clicks.csv"
    pacsv.write_csv(pa.Table.from_pylist(_clicks()), path)
    return path


FUNNEL = ("SELECT * FROM clicks WHERE login AS l ; cart AS c ; purchase AS p "
          "PARTITION BY [user] WITHIN 30 SECONDS")


def _engine(query: str, rows: list[dict[str, Any]], **kw: Any) -> list[dict[str, Any]]:
    ev = ceql.compile(query).evaluator(**kw)
    return [m.to_dict(fields=kw.get("keep_events", False)) for m in ev.feed(rows)]


# ---------------------------------------------------------------- the query as text

def test_the_query_may_be_given_as_text(clicks: Path) -> None:
    r = ceql_cmd("run", FUNNEL, "-i", clicks, "-t", "when", "--time-format", TEXT_FORMAT)
    assert r.returncode == 0, r.stderr
    expected = _engine(FUNNEL, _clicks(), time="when", time_format=TEXT_FORMAT)
    assert expected and lines(r.stdout) == expected
    e = ceql_cmd("explain", "SELECT * FROM S WHERE A ; B")
    assert e.returncode == 0 and e.stdout == ceql.explain("SELECT * FROM S WHERE A ; B") \
        .rstrip("\n") + "\n"


def test_query_text_errors_say_how(clicks: Path) -> None:
    r = ceql_cmd("run", "SELECT * FROM S WHERE A ;; B", "-i", clicks)
    assert r.returncode == 2
    assert r.stderr == ("ceql: error: <query>: Expected an event type, NOT or '(' after ';', found "
                        "';' (line 1, column 26)\nSELECT * FROM S WHERE A ;; B\n"
                        + " " * 25 + "^\n")
    r = ceql_cmd("run", "login ; purchase", "-i", clicks)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == ("ceql: error: 'login ; purchase' is neither a query file nor a query: "
                        "a query given as text starts with SELECT (e.g. ceql run \"SELECT * "
                        "FROM S WHERE A ; B\" -i events.csv)\n")


def test_query_text_with_a_misspelt_select_gets_the_caret(clicks: Path) -> None:
    r = ceql_cmd("run", "SELCT * FROM S WHERE login ; purchase", "-i", clicks)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == ("ceql: error: <query>: Expected SELECT at the start, found name "
                        "'SELCT' (did you mean SELECT?) (line 1, column 1)\n"
                        "SELCT * FROM S WHERE login ; purchase\n^^^^^\n")
    r = ceql_cmd("run", "login ; purchase WITHIN 5 EVENTS", "-i", clicks)
    assert r.returncode == 2 and r.stderr.startswith(
        "ceql: error: <query>: Expected SELECT at the start")


# ---------------------------------------------------------------- FROM over one file

def test_one_from_name_stands_for_the_file_several_need_a_stream_column(
        clicks: Path, tmp_path: Path) -> None:
    q = "SELECT * FROM anything WHERE login ; purchase PARTITION BY [user] WITHIN 30 SECONDS"
    r = ceql_cmd("run", q, "-i", clicks, "-t", "when", "--time-format", TEXT_FORMAT, "-q")
    assert r.returncode == 0 and lines(r.stdout)
    two = q.replace("FROM anything", "FROM web, app")
    r = ceql_cmd("run", two, "-i", clicks, "-t", "when", "--time-format", TEXT_FORMAT)
    assert (r.returncode, r.stdout) == (2, "")
    assert r.stderr == (f"ceql: error: the query reads FROM web, app, but {clicks} has no "
                        "column 'stream' (--stream-col) saying which of them each event comes "
                        "from; give one FROM name (it stands for the whole input), or add that "
                        "column\n")
    # with a stream column, FROM names are its values: a name no event carries is warned of
    tagged = tmp_path / "tagged.csv"
    pacsv.write_csv(pa.Table.from_pylist([{**e, "stream": "web"} for e in _clicks()]), tagged)
    r = ceql_cmd("run", two.replace("web, app", "web, ap"), "-i", tagged, "-t", "when",
                 "--time-format", TEXT_FORMAT)
    assert r.returncode == 0, r.stderr
    assert ("ceql: warning: The query's stream 'ap' never occurred in the 40 events; streams "
            "seen: 'web'. A misspelt name matches nothing: check it against the data.") \
        in r.stderr.splitlines()


# ---------------------------------------------------------------- text times

def test_time_format_reads_text_times_and_names_a_bad_one(clicks: Path, tmp_path: Path) -> None:
    q = FUNNEL
    r = ceql_cmd("run", q, "-i", clicks, "-t", "when")  # no format: the engine says how
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == (
        f"ceql: error: {clicks}: Event 0 has time '25/11/2026 09:00:00' in column 'when', which "
        "holds strings (string): give --time-format, the strptime format of these strings (e.g. "
        "--time-format '%Y-%m-%d %H:%M:%S'); the event: {'type': 'login', 'user': 'u0', "
        "'amount': 0, 'when': '25/11/2026 09:00:00'}.\n")  # (no reader schema to give)
    rows = _clicks()
    rows[7]["when"] = "25/11/2026 9h07"
    bad = tmp_path / "bad.csv"
    pacsv.write_csv(pa.Table.from_pylist(rows), bad)
    r = ceql_cmd("run", q, "-i", bad, "-t", "when", "--time-format", TEXT_FORMAT)
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr.startswith(f"ceql: error: {bad}: Event 7 has time '25/11/2026 9h07' in "
                               "column 'when', which does not match --time-format "
                               "'%d/%m/%Y %H:%M:%S'")
    assert len(r.stderr.splitlines()) == 1
    r = ceql_cmd("run", q, "-i", clicks, "--time-format", TEXT_FORMAT)
    assert r.returncode == 2 and "--time-format needs --time" in r.stderr


def test_time_format_with_sort(clicks: Path, tmp_path: Path) -> None:
    rows = _clicks()
    shuffled = rows[20:] + rows[:20]  # text order is not time order: 25/11 09:00:20 first
    path = tmp_path / "shuffled.csv"
    pacsv.write_csv(pa.Table.from_pylist(shuffled), path)
    r = ceql_cmd("run", FUNNEL, "-i", path, "-t", "when", "--time-format", TEXT_FORMAT,
                 "--sort")
    assert r.returncode == 0, r.stderr
    q = ceql.compile(FUNNEL)
    expected = [m.to_dict() for m in q.run(shuffled, time="when", time_format=TEXT_FORMAT,
                                           sort=True)]
    assert expected and lines(r.stdout) == expected


# ---------------------------------------------------------------- what a match shows

def test_fields_print_times_and_events(clicks: Path, tmp_path: Path) -> None:
    r = ceql_cmd("run", FUNNEL, "-i", clicks, "-t", "when", "--time-format", TEXT_FORMAT,
                 "--fields", "--variables")
    assert r.returncode == 0, r.stderr
    got = lines(r.stdout)
    expected = _engine(FUNNEL, _clicks(), time="when", time_format=TEXT_FORMAT,
                       keep_events=True)
    assert [{k: v for k, v in d.items() if k != "variables"} for d in got] == expected
    first = got[0]
    assert list(first) == ["start", "end", "positions", "partition", "variables", "start_time",
                           "end_time", "events"]
    assert first["start_time"] == "2026-11-25T09:00:00"  # ISO 8601
    assert first["events"][0] == {"type": "login", "user": "u0", "amount": 0,
                                  "when": "25/11/2026 09:00:00"}
    assert list(first["variables"]) == ["l", "c", "p"]  # pattern order, no repeated types
    r = ceql_cmd("run", FUNNEL, "-i", clicks, "-t", "when", "--time-format", TEXT_FORMAT,
                 "--fields", "-o", tmp_path / "m.csv")
    assert r.returncode == 2
    assert r.stderr == ("ceql: error: --fields writes JSON lines (each event with its own "
                        "fields), not csv: write to standard output or a .jsonl file\n")


def test_variables_follow_the_pattern_not_the_events(tmp_path: Path) -> None:
    path = tmp_path / "ab.csv"
    pacsv.write_csv(pa.Table.from_pylist([{"type": "SELL", "ts": 1}, {"type": "BUY", "ts": 2}]),
                    path)
    r = ceql_cmd("run", "SELECT * FROM S WHERE (BUY AS b OR SELL AS s)+ WITHIN 5 EVENTS", "-i",
                 path, "--variables", "-q")
    found = [d["variables"] for d in lines(r.stdout)]
    assert [list(v) for v in found] == [["s"], ["b"], ["b", "s"]]  # b before s, as written


# ---------------------------------------------------------------- warnings

def test_an_event_type_never_seen_is_warned_of_once() -> None:
    q = "SELECT * FROM S WHERE SELL AS a ; BYU AS b PARTITION BY [name] WITHIN 1 SECONDS"
    r = ceql_cmd("run", q, "-i", STOCK, *TIME)
    assert (r.returncode, r.stdout) == (0, "")
    warned = [ln for ln in r.stderr.splitlines() if ln.startswith("ceql: warning:")]
    assert warned == ["ceql: warning: The query's event type 'BYU' never occurred in the 5,000 "
                      "events; event types seen: 'BUY', 'SELL' (did you mean 'BUY'?). A "
                      "misspelt name matches nothing: check it against the data."]
    quiet = ceql_cmd("run", q, "-i", STOCK, *TIME, "--quiet")
    assert quiet.stderr == ""


def test_compile_warnings_are_ceql_lines() -> None:
    r = ceql_cmd("run", "SELECT * FROM S WHERE SELL ; BUY FILTER BUY[name LIKE 'MS%']", "-i",
                 STOCK, *TIME)
    assert r.returncode == 0, r.stderr
    said = r.stderr.splitlines()
    assert "Warning" not in r.stderr.replace("ceql: warning:", "")  # no Python warning lines
    assert sum(ln.startswith("ceql: warning: This query has neither WITHIN nor PARTITION BY")
               for ln in said) == 1
    assert any(ln.startswith("ceql: warning:") and "LIKE" in ln for ln in said)


# ---------------------------------------------------------------- the Spark engine

@pytest.mark.spark
@pytest.mark.e2e
def test_spark_engine_text_times_fields_and_unseen_names(clicks: Path) -> None:
    """The same lines as the local engine: matches with --time-format, --fields and
    --variables, and the warning about a type no event carries."""
    pytest.importorskip("pyspark")
    q = ("SELECT * FROM clicks WHERE login AS l ; (cart OR crat) AS c ; purchase AS p "
         "PARTITION BY [user] WITHIN 30 SECONDS")
    args = ["run", q, "-i", clicks, "-t", "when", "--time-format", TEXT_FORMAT, "--fields",
            "--variables"]
    local = ceql_cmd(*args)
    assert local.returncode == 0, local.stderr
    assert lines(local.stdout)
    spark = ceql_cmd(*args, "--engine", "spark", timeout=900)
    assert spark.returncode == 0, spark.stderr
    assert spark.stdout == local.stdout
    warning = ("ceql: warning: The query's event type 'crat' never occurred in the 40 events; "
               "event types seen: 'cart', 'login', 'purchase', 'view' (did you mean 'cart'?). "
               "A misspelt name matches nothing: check it against the data.")
    assert warning in local.stderr.splitlines()
    assert warning in spark.stderr.splitlines()


@pytest.mark.spark
@pytest.mark.e2e
def test_spark_engine_bad_data_in_a_task_says_ceqls_message(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    path = tmp_path / "back.csv"
    pacsv.write_csv(pa.Table.from_pylist([{"type": "A", "ts": 1, "v": 5},
                                          {"type": "B", "ts": 2, "v": 3}]), path)
    q = "SELECT * FROM S WHERE A ; B WITHIN 10 [v]"
    r = ceql_cmd("run", q, "-i", path, "-t", "ts", "--engine", "spark", timeout=900)
    assert (r.returncode, r.stdout) == (1, "")
    assert len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith(f"ceql: error: {path}: Event 1 is out of order: 'v' goes back "
                               "from 5 to 3")
    assert "Spark's log" not in r.stderr
