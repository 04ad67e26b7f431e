"""MATCH_CEQL through Spark Connect: two local Connect servers started here (one with ceql's
settings, ``ceql.spark.server_conf()``, one with none of them, like a hosted server), and
clients that have no JVM. Every spelling the server can run gives the engine's matches;
``enable`` registers what a bare server lacks and says what needs a restart; the inline syntax
on a bare server is told in ceql's words; streams run; the Connect notebook runs.

PySpark marks a process as a Connect client in its environment (``SPARK_CONNECT_MODE_ENABLED``,
which makes ``pyspark.sql.functions`` build Connect columns); the fixture restores it, so that
classic sessions of later tests in the same process work as before.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyspark
import pytest

import ceql
import ceql.spark as cs
from ceql.spark import match_ids

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "connect.ipynb"
KERNEL = "ceql-connect-test"
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
START_TIMEOUT = 240  # seconds: two JVMs starting at once on a busy 2-core machine
_CLIENT_ENV = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")

BASE = dt.datetime(2024, 1, 1, 9, 0, 0)
STOCK_SCHEMA = "seq long, type string, name string, price double, ts timestamp"
QUERY = ("SELECT * FROM stock WHERE SELL AS a ; (BUY OR SELL)+ AS m ; BUY AS b "
         "FILTER b[price > a.price] PARTITION BY [name] WITHIN 6 SECONDS")
VARIABLES = ("a", "m", "b")


def _stock(n: int, seed: int) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    return [{"seq": i, "type": rnd.choice(["SELL", "SELL", "BUY"]), "name": rnd.choice("XYZ"),
             "price": float(rnd.randint(1, 9)), "ts": BASE + dt.timedelta(seconds=i)}
            for i in range(n)]


ROWS = _stock(60, seed=4)

Found = list[tuple[int, tuple[Any, ...], tuple[tuple[str, tuple[int, ...]], ...]]]


def _engine(query: str, rows: Sequence[dict[str, Any]]) -> Found:
    """The engine's matches per ``name``, rows in (ts, seq) order: (match_id, key, the seqs
    of each variable)."""
    q = ceql.compile(query)
    out: Found = []
    for name in sorted({r["name"] for r in rows}):
        group = sorted((r for r in rows if r["name"] == name), key=lambda r: (r["ts"], r["seq"]))
        ms = list(q.run(group, time="ts"))
        for m, mid in zip(ms, match_ids((name,), ms, group), strict=True):
            bound = tuple(sorted((v, tuple(group[p]["seq"] for p in ps))
                                 for v, ps in m.variables.items() if v in VARIABLES))
            out.append((mid, (name,), bound))
    return sorted(out, key=repr)


def _found(rows: Any) -> Found:
    out: Found = [(r["match_id"], (r["name"],),
                   tuple(sorted((v, tuple(e["seq"] for e in r[v])) for v in VARIABLES if r[v])))
                  for r in rows]
    return sorted(out, key=repr)


WANT = _engine(QUERY, ROWS)


# ---------------------------------------------------------------- servers


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(log: Path, *, ceql_settings: bool) -> tuple[subprocess.Popen[bytes], int]:
    """A Connect server on loopback (local[2]); with ceql's settings, or with none of them
    (its workers still run this Python, which imports ceql, as a hosted server's would)."""
    from ceql.spark.session.quiet import LOG4J2

    port = _free_port()
    conf = {
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        # C1 only: a short-lived server spends less CPU compiling than C2 would save it
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={LOG4J2.as_uri()} "
                                         "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        "spark.pyspark.python": sys.executable,
    }
    if ceql_settings:
        conf.update(cs.server_conf())
    home = Path(pyspark.__file__).resolve().parent  # pip's pyspark is a Spark home
    submit = home / "bin" / "spark-submit"
    cmd = [str(submit), "--class", SERVER_CLASS, "--master", "local[2]",
           *[a for k, v in conf.items() for a in ("--conf", f"{k}={v}")]]
    env = {k: v for k, v in os.environ.items() if k not in _CLIENT_ENV}
    env.update(SPARK_HOME=str(home), PYSPARK_PYTHON=sys.executable, SPARK_CONNECT_MODE="0")
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                stdin=subprocess.DEVNULL)
    return proc, port


def _wait(proc: subprocess.Popen[bytes], port: int, log: Path, deadline: float) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the Connect server ended ({proc.returncode}):\n"
                                 + log.read_text(errors="replace")[-3000:])
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.5)
    raise AssertionError("the Connect server did not listen in time:\n"
                         + log.read_text(errors="replace")[-3000:])


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """``{"full": url, "bare": url}``: both servers, started at once, stopped at the end."""
    tmp = tmp_path_factory.mktemp("connect")
    saved = {k: os.environ.get(k) for k in _CLIENT_ENV}
    started: list[subprocess.Popen[bytes]] = []
    try:
        urls = {}
        waits = []
        for name in ("full", "bare"):
            log = tmp / f"{name}.log"
            proc, port = _start(log, ceql_settings=name == "full")
            started.append(proc)
            waits.append((proc, port, log))
            urls[name] = f"sc://127.0.0.1:{port}"
        deadline = time.monotonic() + START_TIMEOUT
        for proc, port, log in waits:
            _wait(proc, port, log, deadline)
        yield urls
    finally:
        for proc in started:
            _stop(proc)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _session(url: str) -> Any:
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.remote(url).create()
    spark.createDataFrame([tuple(r[c] for c in ("seq", "type", "name", "price", "ts"))
                           for r in ROWS], STOCK_SCHEMA).createOrReplaceTempView("stock")
    return spark


@pytest.fixture(scope="module")
def full(servers: dict[str, str]) -> Iterator[Any]:
    spark = _session(servers["full"])
    yield spark
    spark.stop()


@pytest.fixture(scope="module")
def bare(servers: dict[str, str]) -> Iterator[Any]:
    spark = _session(servers["bare"])
    yield spark
    spark.stop()


# ---------------------------------------------------------------- a server with ceql


def test_every_spelling_through_connect_gives_the_engines_matches(full: Any) -> None:
    assert type(full).__module__ == "pyspark.sql.connect.session"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the server has everything: nothing to say
        assert cs.enable(full) is full
    q = QUERY.replace("'", "\\'")
    table_query = QUERY.replace(" PARTITION BY [name]", "")
    spellings = {
        "inline": f"SELECT * FROM MATCH_CEQL( {QUERY} )",
        "literal": f"SELECT * FROM MATCH_CEQL('{q}')",
        "table": f"SELECT * FROM MATCH_CEQL(TABLE(stock) PARTITION BY name ORDER BY (ts), "
                 f"query => '{table_query}')",
    }
    assert WANT  # the query has matches on these rows
    for name, sql in spellings.items():
        assert _found(full.sql(sql).collect()) == WANT, name
    df = full.table("stock")
    assert _found(cs.match(df, table_query, partition_by="name").collect()) \
        == WANT
    assert _found(cs.run(full, QUERY).collect()) == WANT


def test_a_stream_through_connect_gives_the_batch_answer_and_counts_late_rows(
        full: Any, tmp_path: Path) -> None:
    """``match_stream`` runs on the server (transformWithStateInPandas through Connect); the
    late count reads Connect's progress with :func:`ceql.spark.late_rows`."""
    folder = tmp_path / "in"
    folder.mkdir()
    late = {**ROWS[3], "seq": 999}  # older than the watermark once the first file is read
    end = {"seq": 10**6, "type": "END", "name": "X", "price": 0.0,
           "ts": ROWS[-1]["ts"] + dt.timedelta(hours=1)}
    for i, piece in enumerate([ROWS[:30], [late, *ROWS[30:], end]]):
        path = folder / f"part-{i}.json"
        path.write_text("".join(json.dumps({**r, "ts": r["ts"].isoformat()}) + "\n"
                                for r in piece))
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))
    df = (full.readStream.schema(STOCK_SCHEMA).option("maxFilesPerTrigger", 1)
          .json(str(folder)))
    matches = cs.match(df, QUERY, watermark="2 seconds", tie_break="seq")
    q = (matches.writeStream.format("memory").queryName("connect_alerts")
         .outputMode("append").option("checkpointLocation", str(tmp_path / "ck"))
         .trigger(availableNow=True).start())
    q.awaitTermination()
    assert q.exception() is None
    assert _found(full.table("connect_alerts").collect()) == WANT
    assert sum(cs.late_rows(p) for p in q.recentProgress) == 1


MR_BODY = ("PARTITION BY name ORDER BY ts MEASURES FIRST(A.seq) AS first_seq, COUNT(*) AS n, "
           "LAST(B.price) AS top AFTER MATCH SKIP PAST LAST ROW PATTERN (A B+) "
           "DEFINE A AS lower(type) = 'sell', B AS B.price > PREV(B.price)")


def test_match_recognize_through_connect_gives_the_engines_rows(full: Any) -> None:
    """MATCH_RECOGNIZE on the server: ``match_recognize`` (a Connect Python UDTF, its
    row-local parts computed by the server's Spark) and MATCH_RECOGNIZE_TABLE in SQL
    (registered by the server's extension) give the Python engine's rows."""
    want = sorted(map(repr, ceql.match_recognize(MR_BODY).run(ROWS)))
    assert len(want) >= 3  # a body with matches
    df = full.table("stock")
    assert sorted(repr(r.asDict()) for r in cs.match_recognize(df, MR_BODY).collect()) == want
    body = MR_BODY.replace("'", "\\'")
    sql = f"SELECT * FROM MATCH_RECOGNIZE_TABLE(TABLE(stock), body => '{body}')"
    assert sorted(repr(r.asDict()) for r in full.sql(sql).collect()) == want


SPASEQ = """PREFIX : <http://example/>
SELECT ?c ?p1 ?p2 ?p3 WITHIN 10 SECONDS
FROM STREAM S1 <http://example/prices>
WHERE { SEQ (A, B ; C)
  DEFINE GPM A ON S1 { ?c :price ?p1 }
  DEFINE GPM B ON S1 { ?c :price ?p2 . FILTER (?p2 > ?p1) }
  DEFINE GPM C ON S1 { ?c :price ?p3 . FILTER (?p3 < ?p2) } }"""


def test_match_spaseq_through_connect_gives_the_local_matches(full: Any) -> None:
    """SPAseq on the server: ``match_spaseq`` (a Connect Python UDTF) and MATCH_SPASEQ in
    SQL (registered by the server's extension) give ``ceql.spaseq``'s matches."""
    import ceql.spaseq as sp

    prices = [10, 12, 11, 9, 14, 15, 13, 16, 12]
    events = [{"stream": "S1", "time": t,  # company H trades at odd times only
               "graph": " ".join(f"<http://example/{c}> <http://example/price> {p + i} ."
                                 for i, c in enumerate(("G", "H")[: 1 + t % 2]))}
              for t, p in enumerate(prices, start=1)]
    want = [(list(m.positions), {v: str(x) for v, x in m.bindings.items()})
            for m in sp.compile(SPASEQ).run(events)]
    assert len(want) >= 3  # a query with matches
    df = full.createDataFrame([(e["stream"], e["time"], e["graph"]) for e in events],
                              "stream string, time bigint, graph string")
    df.createOrReplaceTempView("prices")

    def got(result: Any) -> list[tuple[list[int], dict[str, str]]]:
        return [(list(r.positions), {v: r[v] for v in ("c", "p1", "p2", "p3")})
                for r in result.collect()]

    assert got(cs.match_spaseq(df, SPASEQ)) == want
    q = SPASEQ.replace("'", "\\'")
    assert got(full.sql(f"SELECT * FROM MATCH_SPASEQ(TABLE(prices), query => '{q}')")) == want


def _kernel_env(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """This interpreter as the Jupyter kernel (a kernel spec in a temporary ``JUPYTER_PATH``,
    which the client looks in too); the kernel's environment, without this process's Connect
    marks."""
    spec = tmp / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "ceql test (this Python)", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp / "jupyter"))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp / "ipython"))
    return {k: v for k, v in os.environ.items() if k not in _CLIENT_ENV}


def test_the_connect_notebook_runs_against_a_server_with_ceql(
        servers: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    env = _kernel_env(tmp_path, monkeypatch)
    env["SPARK_REMOTE"] = servers["full"]
    client = NotebookClient(nb, kernel_name=KERNEL, timeout=120,
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute(env=env)

    code = [c for c in nb.cells if c.cell_type == "code"]
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]

    def out(marker: str) -> dict[str, Any]:
        (cell,) = [c for c in code if marker in c.source]
        got: dict[str, Any] = {}
        for o in cell.outputs:
            got.update(o.get("data", {}))
            if o.output_type == "stream" and o.name == "stdout":  # PySpark logs on stderr
                got["stream"] = got.get("stream", "") + o.text
        return got

    assert out("getOrCreate()")["text/plain"] == "'pyspark.sql.connect.session'"
    inline = out("FROM MATCH_CEQL( {QUERY} )")["text/html"]
    assert "<table" in inline and "ana" in inline and "35.0" in inline
    assert "<table" in out("MATCH_CEQL(TABLE(clicks)")["text/html"]
    assert out("assert local == remote")["stream"] == "4 matches, the same on both sides\n"
    assert out("ceql.spark.unwrap(e)")["stream"].startswith(
        "MATCH_CEQL: Unknown attribute 'amout' in FILTER")


# ---------------------------------------------------------------- a server without ceql


def test_a_server_without_ceql(bare: Any) -> None:
    """The DataFrame API needs nothing; the SQL table function needs ``enable``, which says
    what needs a restart; the inline syntax is refused in ceql's words."""
    from pyspark.errors import AnalysisException, ParseException

    table_query = QUERY.replace(" PARTITION BY [name]", "")
    df = bare.table("stock")
    assert _found(cs.match(df, table_query, partition_by="name").collect()) \
        == WANT
    assert _found(cs.run(bare, QUERY).collect()) == WANT
    table_sql = f"SELECT * FROM MATCH_CEQL(TABLE(stock), query => '{QUERY}')"
    with pytest.raises(AnalysisException) as unregistered:
        bare.sql(table_sql).collect()
    assert str(cs.unwrap(unregistered.value)).startswith(
        "MATCH_CEQL is not a function of this session: call ceql.spark.enable(spark)")

    with pytest.warns(UserWarning) as said:
        assert cs.enable(bare) is bare
    assert [str(w.message) for w in said] == [
        "ceql: MATCH_CEQL(TABLE(t), query => '…') is registered in this Spark Connect session "
        "(ceql's Python table function). The server has no ceql extension, so MATCH_CEQL( "
        "<CEQL> ) written inline and MATCH_CEQL('<CEQL>') need the server restarted with "
        "ceql's jar and extension (ceql.spark.server_conf())."]
    assert said[0].filename == __file__
    assert _found(bare.sql(table_sql).collect()) == WANT
    # ceql's Python UDTF partitions as the query says: TABLE(t) PARTITION BY is the shim's
    with pytest.raises(AnalysisException) as partitioned:
        bare.sql(f"SELECT * FROM MATCH_CEQL(TABLE(stock) PARTITION BY name ORDER BY (ts), "
                 f"query => '{table_query}')").collect()
    assert str(cs.unwrap(partitioned.value)) == (
        "MATCH_CEQL without ceql's extension (the Python table function ceql.spark.enable "
        "registers in a Spark Connect session) partitions and orders its input as the query "
        "says: drop the table argument's PARTITION BY and ORDER BY, and write PARTITION BY "
        "[column] in the CEQL query (the time column: time => 'column'), e.g. "
        "MATCH_CEQL(TABLE(t), query => 'SELECT * FROM t WHERE … PARTITION BY [user]', "
        "time => 'ts').")

    # what a stream needs (the docs' table) is a session setting there
    provider = cs.server_conf()["spark.sql.streaming.stateStore.providerClass"]
    bare.conf.set("spark.sql.streaming.stateStore.providerClass", provider)
    assert bare.conf.get("spark.sql.streaming.stateStore.providerClass") == provider

    with pytest.raises(ParseException) as inline:
        bare.sql(f"SELECT * FROM MATCH_CEQL( {QUERY} )").collect()
    assert str(cs.unwrap(inline.value)) == (
        "MATCH_CEQL( <CEQL> ) with the query written inline needs ceql's extension where Spark "
        "parses the statement (for Spark Connect: in the server), and this session's parser "
        "read the query as SQL. Start Spark with ceql.spark.configure(builder) (a Spark Connect "
        "server with the settings of ceql.spark.server_conf()), keeping "
        "spark.ceql.parser.enabled true; or write MATCH_CEQL(TABLE(t), query => '<CEQL>') after "
        "ceql.spark.enable(spark).")


def test_match_recognize_on_a_stream_through_connect(full: Any, tmp_path: Path) -> None:
    """``match_recognize`` on a streaming DataFrame of a Connect client runs the stream
    operator on the server: the engine's rows over the same rows, each once; a late row
    counted (:func:`ceql.spark.late_rows`)."""
    body = MR_BODY.replace("PATTERN (A B+)", "PATTERN (A B+) WITHIN INTERVAL '5' SECOND")
    want = sorted(map(repr, ceql.match_recognize(body).run(ROWS)))
    assert len(want) >= 3  # a body with matches
    folder = tmp_path / "in"
    folder.mkdir()
    late = {**ROWS[3], "seq": 999}  # older than the watermark once the first file is read
    end = {"seq": 10**6, "type": "END", "name": "END", "price": 0.0,
           "ts": ROWS[-1]["ts"] + dt.timedelta(hours=1)}
    for i, piece in enumerate([ROWS[:30], [late, *ROWS[30:], end]]):
        path = folder / f"part-{i}.json"
        path.write_text("".join(json.dumps({**r, "ts": r["ts"].isoformat()}) + "\n"
                                for r in piece))
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))
    df = (full.readStream.schema(STOCK_SCHEMA).option("maxFilesPerTrigger", 1)
          .json(str(folder)).withWatermark("ts", "2 seconds"))
    q = (cs.match_recognize(df, body).writeStream.format("memory").queryName("connect_mr")
         .outputMode("append").option("checkpointLocation", str(tmp_path / "ck"))
         .trigger(availableNow=True).start())
    q.awaitTermination()
    assert q.exception() is None
    assert sorted(repr(r.asDict()) for r in full.table("connect_mr").collect()) == want
    assert sum(cs.late_rows(p) for p in q.recentProgress) == 1
