"""``ceql run`` and ``ceql explain`` of MATCH_RECOGNIZE text (issue 30.1): found as such (or
``--language mr``), run by the Python engine over the input's rows, written as the CLI writes
rows; the options that only mean something for CEQL are refused."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import ceql
from ceql.cli import main
from ceql.cli.query import looks_like_mr

ROOT = Path(__file__).resolve().parents[1]
PRICES = [12, 17, 19, 21, 25, 12, 15, 20, 24, 25, 19, 15, 25, 25, 14, 12, 14, 24, 23, 22]
TICKER = "symbol,day,price\n" + "".join(f"ACME,{d},{p}\n" for d, p in enumerate(PRICES, 1)) + \
    "".join(f"XYZ,{d},{p}\n" for d, p in enumerate([5, 4, 6], 1))
BODY = """PARTITION BY symbol ORDER BY day
    MEASURES STRT.day AS start_day, LAST(DOWN.day) AS bottom_day, LAST(UP.day) AS end_day
    AFTER MATCH SKIP TO LAST UP
    PATTERN (STRT DOWN+ UP+)
    DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price)"""
QUERY = f"SELECT * FROM ticker MATCH_RECOGNIZE (\n    {BODY}\n) AS v"
#: docs/python.md's answer, and XYZ's
V_SHAPES = [{"symbol": "ACME", "start_day": 5, "bottom_day": 6, "end_day": 10},
            {"symbol": "ACME", "start_day": 10, "bottom_day": 12, "end_day": 13},
            {"symbol": "ACME", "start_day": 14, "bottom_day": 16, "end_day": 18},
            {"symbol": "XYZ", "start_day": 1, "bottom_day": 2, "end_day": 3}]


@pytest.fixture()
def ticker(tmp_path: Path) -> Path:
    path = tmp_path / "ticker.csv"
    path.write_text(TICKER, encoding="utf-8")
    return path


def cli(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.ExitStack() as stack:
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        if stdin is not None:
            stack.enter_context(pytest.MonkeyPatch.context()).setattr(
                sys, "stdin", io.StringIO(stdin))
        status = main(list(args))
    return status, out.getvalue(), err.getvalue()


def rows(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines()]


# ---------------------------------------------------------------- what is MATCH_RECOGNIZE

@pytest.mark.parametrize("text", [
    BODY, QUERY, QUERY.lower(), f"({BODY})", f"MATCH_RECOGNIZE ({BODY})",
    "-- the V\n/* shape */ PATTERN (A B+)", "ALL ROWS PER MATCH PATTERN (A)",
    "SELECT * FROM t /* x */ MATCH_RECOGNIZE(PATTERN (A))",
])
def test_match_recognize_text_is_found(text: str) -> None:
    assert looks_like_mr(text)


def test_ceql_text_is_not_match_recognize() -> None:
    queries = [p.read_text(encoding="utf-8") for p in (ROOT / "examples").rglob("*.ceql")]
    assert len(queries) >= 5
    queries += ["SELECT * FROM S WHERE A FILTER A[x = 'MATCH_RECOGNIZE (']",
                "SELECT * FROM S WHERE A -- MATCH_RECOGNIZE (\n PARTITION BY [x]",
                "SELECT * FROM S WHERE `MATCH_RECOGNIZE (` ; B PARTITION BY [x]",
                "SELECT * FROM MATCH_RECOGNIZE_TABLE WHERE A"]
    for q in queries:
        assert not looks_like_mr(q), q


# ---------------------------------------------------------------- ceql run

def test_a_body_given_as_text_runs_on_the_input(ticker: Path) -> None:
    status, out, err = cli("run", BODY, "-i", str(ticker))
    assert status == 0, err
    assert rows(out) == V_SHAPES
    want = ceql.match_recognize(BODY).run(pacsv.read_csv(ticker))
    assert rows(out) == want
    assert err == "ceql: 23 rows read, 4 rows written in " + err.split(" in ")[1]
    assert err.endswith(" s\n")


def test_a_query_from_a_file_or_standard_input(ticker: Path, tmp_path: Path) -> None:
    path = tmp_path / "v.sql"
    path.write_text(QUERY, encoding="utf-8")
    status, out, err = cli("run", str(path), "-i", str(ticker), "-q")
    assert (status, err) == (0, "")
    assert rows(out) == V_SHAPES
    status, out, _ = cli("run", "-", "-i", str(ticker), "-q", stdin=QUERY)
    assert rows(out) == V_SHAPES


def test_all_rows_per_match(ticker: Path) -> None:
    body = ("PARTITION BY symbol ORDER BY day MEASURES CLASSIFIER() AS cls, MATCH_NUMBER() AS m "
            "ALL ROWS PER MATCH PATTERN (A B) DEFINE A AS price > 20, B AS price < PREV(price)")
    status, out, err = cli("run", body, "-i", str(ticker), "-q")
    assert status == 0, err
    assert rows(out) == [
        {"symbol": "ACME", "day": 5, "cls": "A", "m": 1, "price": 25},
        {"symbol": "ACME", "day": 6, "cls": "B", "m": 1, "price": 12},
        {"symbol": "ACME", "day": 10, "cls": "A", "m": 2, "price": 25},
        {"symbol": "ACME", "day": 11, "cls": "B", "m": 2, "price": 19},
        {"symbol": "ACME", "day": 14, "cls": "A", "m": 3, "price": 25},
        {"symbol": "ACME", "day": 15, "cls": "B", "m": 3, "price": 14},
        {"symbol": "ACME", "day": 18, "cls": "A", "m": 4, "price": 24},
        {"symbol": "ACME", "day": 19, "cls": "B", "m": 4, "price": 23},
    ]


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
def test_output_files(fmt: str, ticker: Path, tmp_path: Path) -> None:
    out_path = tmp_path / f"v.{fmt}"
    status, out, err = cli("run", BODY, "-i", str(ticker), "-o", str(out_path), "-q")
    assert (status, out, err) == (0, "", "")
    if fmt == "csv":
        assert out_path.read_text(encoding="utf-8").splitlines() == [
            "symbol,start_day,bottom_day,end_day", "ACME,5,6,10", "ACME,10,12,13",
            "ACME,14,16,18", "XYZ,1,2,3"]
    elif fmt == "parquet":
        assert pq.read_table(out_path).to_pylist() == V_SHAPES
    else:
        assert rows(out_path.read_text(encoding="utf-8")) == V_SHAPES
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_csv_to_standard_output(ticker: Path) -> None:
    status, out, _ = cli("run", BODY, "-i", str(ticker), "--output-format", "csv", "-q")
    assert status == 0
    assert out.splitlines()[:2] == ["symbol,start_day,bottom_day,end_day", "ACME,5,6,10"]


def test_the_language_option_decides(ticker: Path, tmp_path: Path) -> None:
    status, out, _ = cli("run", "--language", "mr", BODY, "-i", str(ticker), "-q")
    assert (status, rows(out)) == (0, V_SHAPES)
    # read as CEQL, MATCH_RECOGNIZE text is a CEQL syntax error
    status, out, err = cli("run", "--language", "ceql", QUERY, "-i", str(ticker), "-q")
    assert (status, out) == (2, "")
    assert err.startswith("ceql: error: <query>: ")
    # and a CEQL query read as MATCH_RECOGNIZE is MATCH_RECOGNIZE's syntax error
    ceql_query = "SELECT * FROM S WHERE A ; B"
    status, _, err = cli("run", "-l", "mr", ceql_query, "-i", str(ticker), "-q")
    assert status == 2 and err.startswith("ceql: error: <query>: ")
    with pytest.raises(ceql.CeqlError) as exc:
        ceql.match_recognize(ceql_query)
    assert err == f"ceql: error: <query>: {exc.value}\n"


def test_a_ceql_query_still_runs_as_ceql(ticker: Path) -> None:
    status, out, err = cli("run", "SELECT * FROM t WHERE ACME", "-i", str(ticker),
                           "--type-col", "symbol", "-q")
    assert status == 0, err
    assert len(rows(out)) == 20 and rows(out)[0]["positions"] == [0]


# ---------------------------------------------------------------- errors

def test_a_syntax_error_exits_2_with_the_caret(ticker: Path) -> None:
    bad = "PATTERN (A B+ DEFINE B AS price > PREV(price)"
    with pytest.raises(ceql.CeqlSyntaxError) as exc:
        ceql.match_recognize(bad)
    for command in (["run", bad, "-i", str(ticker)], ["explain", bad]):
        status, out, err = cli(*command)
        assert (status, out) == (2, "")
        assert err == f"ceql: error: <query>: {exc.value}\n"
        assert "^" in err


def test_an_unknown_column_exits_2(ticker: Path) -> None:
    status, out, err = cli("run", "PATTERN (A) DEFINE A AS prce > 1", "-i", str(ticker))
    assert (status, out) == (2, "")
    assert err.startswith("ceql: error: <query>: No column 'prce' in the input")


def test_values_that_do_not_combine_exit_1(ticker: Path) -> None:
    status, out, err = cli("run", "PATTERN (A) DEFINE A AS symbol > 1", "-i", str(ticker))
    assert (status, out) == (1, "")
    assert err.startswith(f"ceql: error: {ticker}: ")


def test_a_missing_input_exits_1(tmp_path: Path) -> None:
    status, _, err = cli("run", BODY, "-i", str(tmp_path / "nope.csv"))
    assert (status, err) == (1, f"ceql: error: cannot read {tmp_path / 'nope.csv'}: No such "
                                "file or directory\n")


@pytest.mark.parametrize(("option", "flag"), [
    (["--time", "day"], "--time"), (["--sort", "--time", "day"], "--time"),
    (["--variables"], "--variables"), (["--fields"], "--fields"),
    (["--type-col", "symbol"], "--type-col"), (["--stream-col", "s"], "--stream-col"),
    (["--time-unit", "ms"], "--time-unit"),
])
def test_options_of_ceql_are_refused(option: list[str], flag: str, ticker: Path) -> None:
    status, out, err = cli("run", BODY, "-i", str(ticker), *option)
    assert (status, out) == (2, "")
    assert err.startswith(f"ceql: error: {flag} is for CEQL queries: ")


def test_the_spark_engine_is_refused(ticker: Path) -> None:
    status, _, err = cli("run", BODY, "-i", str(ticker), "--engine", "spark")
    assert status == 2
    assert "MATCH_RECOGNIZE runs on the local engine in ceql run" in err


# ---------------------------------------------------------------- ceql explain

def test_explain_prints_the_query_as_ceql_reads_it() -> None:
    status, out, _ = cli("explain", QUERY)
    assert status == 0
    assert out == str(ceql.match_recognize(QUERY)) + "\n"
    assert out.startswith("MATCH_RECOGNIZE (\n  PARTITION BY symbol")
    status, out2, _ = cli("explain", "-", stdin=BODY)
    assert (status, out2) == (0, out)
    status, _, err = cli("explain", "--dot", BODY)
    assert status == 2 and "--dot draws a CEQL query's automaton" in err
