"""End-to-end tests of ``ceql run --language spaseq`` (issue 15.5): a SPAseq query over JSON
lines or a directory of per-event RDF files, with a static dataset, run as a subprocess; its
JSON lines equal what ceql.spaseq finds, and bad input says exactly what is wrong."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import ceql.spaseq as sp
from ceql.rdf import StaticDataset

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SUMMARY = r"ceql: 3 events read, 2 matches in \d+\.\d\d s \(\d+(\.\d)?( [kM])? events/s\)\n"
EX = "http://example/"
QUERY = f"""PREFIX : <{EX}>
SELECT ?h ?n ?w ?v WITHIN 10 SECONDS
FROM STREAM S1 <{EX}power>
FROM STREAM S2 <{EX}weather>
WHERE {{ SEQ (A ; B+)
DEFINE GPM A ON S1 {{ ?h :pow ?p . ?h :loc ?l . GRAPH <{EX}kb> {{ ?h :owner ?n }} }}
DEFINE GPM B ON S2 {{ ?w :value ?v . ?w :loc ?l . }} }}
"""
KB = f"@prefix : <{EX}> . :H1 :owner :john ."
HOUSE = f"<{EX}H1> <{EX}pow> <{EX}Pw1> .\n<{EX}H1> <{EX}loc> <{EX}L1> .\n"
INTEGER = "^^<http://www.w3.org/2001/XMLSchema#integer>"
EVENTS: list[dict[str, Any]] = [
    {"stream": "S2", "time": 15,
     "graph": [[f"<{EX}W1>", f"<{EX}value>", f'"5"{INTEGER}'],
               {"s": f"<{EX}W1>", "p": f"<{EX}loc>", "o": f"<{EX}L1>"}]},
    {"stream": "S1", "time": 10, "graph": HOUSE},
    {"stream": f"{EX}weather", "time": 20, "graph": f"@prefix : <{EX}> . :W2 :value 7 . "
                                                    ":W2 :loc :L1 ."},
]


def ceql_cmd(*args: str | Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ceql", "run", "--language", "spaseq",
                           *map(str, args)], cwd=ROOT, input=stdin, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "q.rq").write_text(QUERY)
    (tmp_path / "kb.ttl").write_text(KB)
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in EVENTS))
    d = tmp_path / "dir"
    d.mkdir()
    (d / "S1@10.nt").write_text(HOUSE)
    (d / "S2@15.ttl").write_text(f"@prefix : <{EX}> . :W1 :value 5 . :W1 :loc :L1 .")
    (d / "S2@20.ttl").write_text(f"@prefix : <{EX}> . :W2 :value 7 . :W2 :loc :L1 .")
    return tmp_path


def local() -> list[dict[str, Any]]:
    kb = StaticDataset().load(KB, graph=f"{EX}kb")
    return [json.loads(json.dumps(m.to_dict()))
            for m in sp.compile(QUERY, dataset=kb).run(EVENTS)]


def test_json_lines_give_the_local_matches(files: Path) -> None:
    done = ceql_cmd(files / "q.rq", "-i", files / "events.jsonl", "--dataset",
                    f"{EX}kb={files / 'kb.ttl'}", "-o", files / "out.jsonl")
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(SUMMARY, done.stderr)
    got = [json.loads(line) for line in (files / "out.jsonl").read_text().splitlines()]
    expected = local()
    assert got == expected
    assert [m["events"] for m in got] == [{"A": [1], "B": [0]}, {"A": [1], "B": [0, 2]}]
    assert got[1]["bindings"] == {"h": f"{EX}H1", "n": f"{EX}john", "w": [f"{EX}W1", f"{EX}W2"],
                                  "v": [5, 7]}


def test_a_directory_of_event_files_and_standard_input(files: Path) -> None:
    done = ceql_cmd("-", "-i", files / "dir", "--dataset", f"<{EX}kb>={files / 'kb.ttl'}", "-q",
                    stdin=QUERY)
    assert (done.returncode, done.stderr) == (0, "")
    got = [json.loads(line) for line in done.stdout.splitlines()]
    # positions count the files in (time, stream) order
    assert [(m["positions"], m["files"], m["bindings"]["v"]) for m in got] == [
        ([0, 1], ["S1@10.nt", "S2@15.ttl"], [5]),
        ([0, 1, 2], ["S1@10.nt", "S2@15.ttl", "S2@20.ttl"], [5, 7])]
    assert [{k: v for k, v in m.items() if k not in ("positions", "events", "files")}
            for m in got] == [{k: v for k, v in m.items() if k not in ("positions", "events")}
                              for m in local()]


BAD_TURTLE = ("ceql: error: {input}: event 1: bad Turtle at line 1, column 23: . is not a valid "
              "RDF object\n<http://x> <http://y> .\n" + " " * 22 + "^\n")


@pytest.mark.parametrize(("case", "status", "message"), [
    ("bad rdf", 1, BAD_TURTLE),
    ("bad query", 2, "ceql: error: {query}: Expected a GPM name or '(' after ';', found ')': SEQ "
                     "cannot end with ';' (line 5, column 17)\nWHERE { SEQ (A ;)\n"
                     + " " * 16 + "^\n"),
    ("bad file name", 1, "ceql: error: {input}/ten.ttl: an event file is named STREAM@TIME.EXT "
                         "(EXT nt, ttl or jsonld), e.g. S1@10.ttl\n"),
    ("dataset without graph", 2, "ceql: error: --dataset {kb}: the file has triples outside a "
                                 "named graph; name their graph: --dataset 'http://…={kb}'\n"),
])
def test_bad_input_says_what_is_wrong(files: Path, case: str, status: int, message: str) -> None:
    query, kb = files / "q.rq", str(files / "kb.ttl")
    dataset = f"{EX}kb={kb}"
    events = files / "events.jsonl"
    if case == "bad rdf":
        events.write_text(json.dumps(EVENTS[1]) + "\n" + json.dumps(
            {"stream": "S2", "time": 12, "graph": "<http://x> <http://y> ."}) + "\n")
    elif case == "bad query":
        query.write_text(QUERY.replace("(A ; B+)", "(A ;)"))
    elif case == "bad file name":
        (files / "dir" / "ten.ttl").write_text("")
        events = files / "dir"
    else:
        dataset = kb
    done = ceql_cmd(query, "-i", events, "--dataset", dataset)
    assert (done.returncode, done.stdout) == (status, "")
    expected = message.replace("{input}", str(events)).replace("{query}", str(query))
    assert done.stderr == expected.replace("{kb}", kb)
