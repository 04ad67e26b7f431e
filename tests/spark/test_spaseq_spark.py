"""MATCH_SPASEQ (issue 15.5): SPAseq in Spark SQL and ceql.spark.match_spaseq give what
ceql.spaseq finds locally on the same events — docs/SPASEQ.md's worked examples, an appendix
query with its static dataset, both graph encodings, PARTITION BY, the Python UDTF path
without the shim — and say exactly what is wrong with a bad call, query or row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyoxigraph as ox
import pytest
from pyspark.errors import AnalysisException
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType
from spark_helpers import sql_string

import ceql.spark as cs
import ceql.spaseq as sp
from ceql.constants import ENV_DATASET_ACCESS
from ceql.rdf import StaticDataset
from ceql.spark import match_id
from ceql.spark.udtf.call import CallInfo
from ceql.spark.udtf.spaseq_plan import DatasetAccess, plan_spaseq

pytestmark = pytest.mark.spark

DATA = Path(__file__).resolve().parents[1] / "data" / "spaseq"
EX = "http://example/"
PREFIX = "PREFIX : <http://example/>\n"
STREAMS = "FROM STREAM S1 <http://example/power>\nFROM STREAM S2 <http://example/weather>\n"
A = "DEFINE GPM A ON S1 { ?h :pow ?p . ?h :loc ?l . }"
B = "DEFINE GPM B ON S2 { ?w :value ?v . ?w :loc ?l . }"
TEXT = "stream string, time bigint, graph string"
TRIPLES = "stream string, time bigint, graph array<struct<s: string, p: string, o: string>>"
KB = f"@prefix : <{EX}> . :H1 :owner :john . :H1 :address :paris . :H2 :owner :smith ."

Event = dict[str, Any]


def query(select: str, within: int, seq: str, gpms: str = f"{A}\n{B}") -> str:
    return (f"{PREFIX}SELECT {select} WITHIN {within} SECONDS\n{STREAMS}"
            f"WHERE {{ SEQ ({seq})\n{gpms} }}")


def house(t: int, n: int, loc: int) -> Event:
    return {"stream": "S1", "time": t,
            "graph": f"@prefix : <{EX}> . :H{n} :pow :Pw{n} . :H{n} :loc :L{loc} ."}


def weather(t: int, n: int, v: str, loc: int) -> Event:
    return {"stream": "S2", "time": t,
            "graph": f"@prefix : <{EX}> . :W{n} :value :{v} . :W{n} :loc :L{loc} ."}


def price(t: int, p: int) -> Event:
    return {"stream": "S1", "time": t, "graph": f"<{EX}G> <{EX}price> {p} ."}


EX2 = [house(10, 1, 1), house(25, 2, 2), weather(10, 1, "Vl1", 1), weather(20, 2, "V12", 1)]
EX3 = [house(10, 1, 1), house(15, 2, 1), weather(15, 1, "Vl1", 2), weather(20, 1, "Vl1", 1),
       weather(25, 2, "V12", 1)]
EX4 = [house(10, 1, 1), house(25, 2, 2), weather(15, 1, "Vl1", 1), weather(20, 2, "V12", 1)]
EX6 = [{"stream": "S1", "time": 10, "graph": f"@prefix : <{EX}> . :H1 :pow :Pw1 . :H1 :loc :L1 ."
        " :H3 :pow :Pw3 . :H3 :loc :L3 ."}, weather(20, 1, "Vl1", 1), weather(30, 3, "Vl3", 3)]
EX8 = [price(t, p) for t, p in zip(range(1, 6), (10, 12, 11, 9, 14), strict=True)]
GPMS8 = ("DEFINE GPM A ON S1 { ?c :price ?p1 }\n"
         "DEFINE GPM B ON S1 { ?c :price ?p2 . FILTER (?p2 > ?p1) }\n"
         "DEFINE GPM C ON S1 { ?c :price ?p3 . FILTER (?p3 < ?p2) }")


def triples(text: str) -> list[dict[str, str]]:
    """An event's Turtle as triples with N-Triples terms (the array<struct> encoding)."""
    return [{"s": str(t.subject), "p": str(t.predicate), "o": str(t.object)}
            for t in ox.parse(text, ox.RdfFormat.TURTLE)]


def frame(spark: Any, events: list[Event], encoding: str = "text", key: str | None = None
          ) -> Any:
    rows = [(e["stream"], e["time"], e["graph"] if encoding == "text" else triples(e["graph"]),
             *((e[key],) if key else ())) for e in events]
    schema = TEXT if encoding == "text" else TRIPLES
    return spark.createDataFrame(rows, schema + (f", {key} string" if key else ""))


def _text(v: Any) -> Any:
    if isinstance(v, list):
        return [_text(x) for x in v]
    return None if v is None else str(v)


def local(text: str, events: list[Event], *, dataset: StaticDataset | None = None,
          key: tuple[Any, ...] = (), typed: bool = False) -> list[tuple[Any, ...]]:
    """ceql.spaseq's matches over ``events`` read in (time, stream) order, as MATCH_SPASEQ's
    rows: (match_id, start, end, positions, bindings as text unless ``typed``)."""
    q = sp.compile(text, dataset=dataset)
    ordered = sorted(events, key=lambda e: (e["time"], e["stream"]))
    return [(match_id(key, n), m.start_time, m.end_time, list(m.positions),
             m.bindings if typed else {v: _text(x) for v, x in m.bindings.items()})
            for n, m in enumerate(q.run(ordered))]


def rows(result: Any, variables: tuple[str, ...]) -> list[tuple[Any, ...]]:
    return [(r.match_id, r.match_start, r.match_end, r.positions, {v: r[v] for v in variables})
            for r in result.collect()]


def sql(view: str, text: str, head: str = "", options: str = "") -> str:
    return (f"SELECT * FROM MATCH_SPASEQ(TABLE({view}){head}, query => {sql_string(text)}"
            f"{options})")


# ---------------------------------------------------------------- the worked examples

EXAMPLES = {
    "2 or, unbound": ("*", 15, "A | B", f"{A}\n{B}", EX2, "triples"),
    "3 skip-till-next": ("?h ?p ?l ?w ?v", 15, "A ; B", f"{A}\n{B}", EX3, "text"),
    "4 kleene lists": ("*", 10, "A : B+", f"{A}\n{B}", EX4, "text"),
    "6 several mappings": ("?h ?w", 60, "A ; B", f"{A}\n{B}", EX6, "triples"),
    "8 conditions": ("?p1 ?p2", 10, "A ; B+", "\n".join(GPMS8.splitlines()[:2]), EX8, "text"),
}


@pytest.mark.parametrize(("select", "within", "seq", "gpms", "events", "encoding"),
                         EXAMPLES.values(), ids=EXAMPLES.keys())
def test_worked_examples_equal_the_local_run(spark: Any, select: str, within: int, seq: str,
                                              gpms: str, events: list[Event],
                                              encoding: str) -> None:
    text = query(select, within, seq, gpms)
    frame(spark, events, encoding).createOrReplaceTempView("ev")
    expected = local(text, events)
    assert expected  # every example has matches
    assert rows(spark.sql(sql("ev", text)), sp.compile(text).variables) == expected


def test_typed_variables_and_the_appendix_v_shape(spark: Any) -> None:
    text = (DATA / "q4_v_shape.rq").read_text(encoding="utf-8")
    events = [{"stream": "S1", "time": 60 * i,
               "graph": f"<{EX}goog> <{EX}price> {p} . <{EX}goog> <{EX}volume> {100 + i} ."}
              for i, p in enumerate([10, 12, 11, 9, 14, 13, 20])]
    got = cs.match_spaseq(frame(spark, events), text,
                          types={"p1": "bigint", "p2": "double", "vol3": "int"})
    types = {f.name: f.dataType.simpleString() for f in got.schema.fields}
    assert (types["p1"], types["p2"], types["vol3"], types["p3"]) == (
        "bigint", "double", "int", "string")
    variables = sp.compile(text).variables
    expected = [(i, s, e, p, {v: (x if v in ("p1", "p2", "vol3") else str(x))
                              for v, x in b.items()})
                for i, s, e, p, b in local(text, events, typed=True)]
    assert len(expected) == 2
    assert rows(got, variables) == expected


# ---------------------------------------------------------------- the static dataset

def test_dataset_option_reads_named_graphs_for_graph(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "kb.ttl").write_text(KB)
    (tmp_path / "more.trig").write_text(
        f"@prefix : <{EX}> . <{EX}other> {{ :H2 :address :lyon . }}")
    gpm = (f"DEFINE GPM A ON S1 {{ ?h :pow ?p . ?h :loc ?l . GRAPH <{EX}kb> "
           f"{{ ?h :owner ?n }} OPTIONAL {{ GRAPH <{EX}other> {{ ?h :address ?a }} }} }}")
    text = query("?h ?n ?a", 10, "A", gpm)
    events = [house(10, 1, 1), house(25, 2, 2), house(30, 3, 3)]
    option = f"{EX}kb={tmp_path / 'kb.ttl'}, {tmp_path / 'more.trig'}"
    frame(spark, events).createOrReplaceTempView("ev")
    spark.conf.set("spark.ceql.spaseq.datasetPaths", str(tmp_path))  # SQL reads only there
    try:
        got = rows(spark.sql(sql("ev", text, options=f", dataset => {sql_string(option)}")),
                   ("h", "n", "a"))
    finally:
        spark.conf.unset("spark.ceql.spaseq.datasetPaths")
    kb = StaticDataset().load(KB, graph=f"{EX}kb").load(path=tmp_path / "more.trig")
    assert got == local(text, events, dataset=kb)
    assert [r[4] for r in got] == [{"h": f"{EX}H1", "n": f"{EX}john", "a": None},
                                   {"h": f"{EX}H2", "n": f"{EX}smith", "a": f"{EX}lyon"}]


def test_appendix_smart_grid_with_its_dataset(spark: Any, tmp_path: Path) -> None:
    db = tmp_path / "db.ttl"
    db.write_text('@prefix : <http://example/> . :H1 :locatedIn :Paris . :H1 :nearBy :H2 . '
                  ':H1 :ownerNAme "john" .')
    text = (DATA / "q1_smart_grid.rq").read_text(encoding="utf-8")
    pre = "@prefix : <http://example/> . "

    def power(t: int, fare: int) -> Event:
        return {"stream": "S1", "time": t, "graph": pre + ':H1 :loc :L1 . :H1 :pow :P . '
                f':P :source "fuel" . :P :fare {fare} .'}

    def weather(t: int, loc: str) -> Event:
        return {"stream": "S2", "time": t,
                "graph": pre + f":w :loc :{loc} . :w :value :V1 . :V1 :light 50 . :V1 :windsp 5 ."}

    storage = {"stream": "http://smartgrid.org/streams/storage", "time": 240,
               "graph": pre + ':s :loc :L1 . :s :pow :Pw . :Pw :source "solar" . :Pw :fare 10 .'}
    events = [power(0, 25), weather(60, "L1"), weather(90, "L2"), weather(120, "L1"),
              weather(180, "L1"), storage]
    got = cs.match_spaseq(frame(spark, events, "triples"), text,
                          dataset={"http://smartgrid.org/db": db})
    kb = StaticDataset().load(path=db, graph="http://smartgrid.org/db")
    expected = local(text, events, dataset=kb)
    assert [b for *_, b in expected] == [{"house": f"{EX}H1", "city": f"{EX}Paris",
                                          "oname": "john", "fr1": "25", "fr2": "10"}]
    assert rows(got, sp.compile(text).variables) == expected


# ---------------------------------------------------------------- partitions, paths

def _keyed() -> list[Event]:
    a = [{**e, "k": "a"} for e in EX3]
    b = [{**e, "k": "b", "time": e["time"] + 100} for e in EX4]
    return a + b


def _per_key(text: str, events: list[Event]) -> list[tuple[Any, ...]]:
    out = []
    for k in ("a", "b"):
        part = [e for e in events if e["k"] == k]
        out += [(i, k, s, e, p, b) for i, s, e, p, b in local(text, part, key=(k,))]
    return sorted(out, key=repr)


def _keyed_rows(result: Any, variables: tuple[str, ...]) -> list[tuple[Any, ...]]:
    return sorted(((r.match_id, r.k, r.match_start, r.match_end, r.positions,
                    {v: r[v] for v in variables}) for r in result.collect()), key=repr)


def test_partition_by_runs_each_key_alone(spark: Any) -> None:
    text = query("?h ?w", 15, "A : B")
    events = _keyed()
    frame(spark, events, key="k").createOrReplaceTempView("evk")
    got = spark.sql(sql("evk", text, " PARTITION BY k ORDER BY time"))
    assert [f.name for f in got.schema.fields] == [
        "match_id", "k", "match_start", "match_end", "positions", "h", "w"]
    expected = _per_key(text, events)
    assert {r[1] for r in expected} == {"a", "b"}
    assert _keyed_rows(got, ("h", "w")) == expected


def test_the_python_udtf_without_the_shim_gives_the_same_rows(spark: Any) -> None:
    text = query("?h ?w", 15, "A : B")
    events = _keyed()
    got = cs.match_spaseq(frame(spark, events, "triples", key="k"), text, partition_by="k",
                          jvm=False)
    assert _keyed_rows(got, ("h", "w")) == _per_key(text, events)


# ---------------------------------------------------------------- errors

def _analysis_error(spark: Any, statement: str) -> str:
    with pytest.raises(AnalysisException) as err:
        spark.sql(statement)
    found = cs.unwrap(err.value)
    assert found is not None, str(err.value)
    return str(found)


OK = query("?h", 10, "A", A)
#: wrong calls Spark itself must report: the query's caret through `unwrap`, the shim's ORDER BY
#: and table argument
ERRORS = {
    "syntax": (sql("ev", "SELECT ?h WITHIN 10 SECONDS FROM STREAM S1 <http://x> WHERE { SEQ (A,) "
                   "DEFINE GPM A ON S1 { ?h <http://x/p> ?o } }"),
               "MATCH_SPASEQ: Expected a GPM name or '(' after ',', found ')': SEQ cannot end "
               "with ',' (line 1, column 70)\nSELECT ?h WITHIN 10 SECONDS FROM STREAM S1 "
               "<http://x> WHERE { SEQ (A,) DEFINE GPM A ON S1 { ?h <http://x/p> ?o } }\n"
               + " " * 69 + "^"),
    "order by": (sql("ev", OK, " WITH SINGLE PARTITION ORDER BY stream"),
                 "MATCH_SPASEQ: the table argument's ORDER BY must be the time column 'time', "
                 "got stream; write ORDER BY (time) or leave it out (events are read by time, "
                 "equal times by stream)."),
    "no table": ("SELECT * FROM MATCH_SPASEQ(query => 'SELECT ?h')",
                 "MATCH_SPASEQ takes exactly one table argument, got 0: MATCH_SPASEQ(TABLE(t) "
                 "PARTITION BY k ORDER BY (time), query => '<SPAseq>')."),
}


@pytest.mark.parametrize(("statement", "message"), ERRORS.values(), ids=ERRORS.keys())
def test_wrong_calls_fail_at_analysis_with_exact_messages(spark: Any, statement: str,
                                                          message: str) -> None:
    frame(spark, EX2).createOrReplaceTempView("ev")
    assert _analysis_error(spark, statement) == message


#: wrong options, planned as analyze plans them (no Spark query needed: each analysis error
#: through Spark starts a Python process of its own)
PLAN_ERRORS = {
    "unknown option": ({"tiem": "t"}, StringType(),
                       "MATCH_SPASEQ has no option tiem; its options are query, time, stream, "
                       "graph, dataset, types, partition_by."),
    "graph type": ({}, IntegerType(),
                   "MATCH_SPASEQ: the graph column 'graph' has type int; an event's graph is "
                   "N-Triples or Turtle text (STRING) or its triples as ARRAY<STRUCT<s: STRING, "
                   "p: STRING, o: STRING>> (terms in N-Triples syntax)."),
    "no file": ({"dataset": "http://x=/no/kb.ttl"}, StringType(),
                "MATCH_SPASEQ: the dataset file /no/kb.ttl does not exist (the driver and every "
                "worker read it: give a path they all can read, best an absolute one)."),
    "types": ({"types": "x bigint"}, StringType(),
              "MATCH_SPASEQ: types names ?x, which the query does not SELECT; its SELECT "
              "variables are ?h."),
}


@pytest.mark.parametrize(("options", "graph", "message"), PLAN_ERRORS.values(),
                         ids=PLAN_ERRORS.keys())
def test_wrong_options_are_refused_with_exact_messages(options: dict[str, str], graph: Any,
                                                       message: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_DATASET_ACCESS, DatasetAccess(paths="/").env_value())
    schema = StructType([StructField("stream", StringType()), StructField("time", LongType()),
                         StructField("graph", graph)])
    with pytest.raises(cs.MatchCeqlError) as err:
        plan_spaseq(schema, {"query": OK, **options}, CallInfo())
    assert str(err.value) == message


def test_bad_rdf_in_a_row_names_its_stream_and_time(spark: Any) -> None:
    events = [house(1, 1, 1), {"stream": "S1", "time": 3, "k": "a",
                               "graph": "<http://example/a> <http://example/b> ."}]
    events[0]["k"] = "a"
    df = frame(spark, events, key="k")
    with pytest.raises(Exception) as err:
        cs.match_spaseq(df, query("?h", 10, "A", A), partition_by="k").collect()
    found = cs.unwrap(err.value)
    assert str(found) == (
        "MATCH_SPASEQ in partition {'k': 'a'}: event 1 (stream 'S1', time 3): bad Turtle at "
        "line 1, column 39: . is not a valid RDF object\n"
        "<http://example/a> <http://example/b> .\n" + " " * 38 + "^")
