"""SPAseq evaluation (issue 15.4): docs/SPASEQ.md's worked examples exactly, the appendix use
cases on small hand-made data, errors for bad events, and the engine against the brute-force
reference of tests/spaseq_reference.py on random sequence expressions and graphs."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from spaseq_reference import reference_matches
from strategies import PROFILE

import ceql
import ceql.spaseq as sp
from ceql.rdf import StaticDataset

DATA = Path(__file__).parent / "data" / "spaseq"
EX = "http://example/"
PREFIX = "PREFIX : <http://example/>\n"
STREAMS = "FROM STREAM S1 <http://example/power>\nFROM STREAM S2 <http://example/weather>\n"
A = "DEFINE GPM A ON S1 { ?h :pow ?p . ?h :loc ?l . }"
B = "DEFINE GPM B ON S2 { ?w :value ?v . ?w :loc ?l . }"


def query(select: str, within: int, seq: str, gpms: str = f"{A}\n{B}",
          dataset: StaticDataset | None = None) -> sp.Query:
    return sp.compile(f"{PREFIX}SELECT {select} WITHIN {within} SECONDS\n{STREAMS}"
                      f"WHERE {{ SEQ ({seq})\n{gpms} }}", dataset=dataset)


def house(t: int, n: int, loc: int) -> dict[str, Any]:
    return {"stream": "S1", "time": t,
            "graph": f"@prefix : <{EX}> . :H{n} :pow :Pw{n} . :H{n} :loc :L{loc} ."}


def weather(t: int, n: int, v: str, loc: int) -> dict[str, Any]:
    return {"stream": "S2", "time": t,
            "graph": f"@prefix : <{EX}> . :W{n} :value :{v} . :W{n} :loc :L{loc} ."}


def x(name: str) -> str:
    return EX + name


def results(q: sp.Query, events: list[dict[str, Any]]) -> list[tuple[dict[str, tuple[int, ...]],
                                                                     dict[str, Any]]]:
    return [(m.events, m.bindings) for m in q.run(events)]


def as_set(q: sp.Query, events: list[dict[str, Any]]) -> set[Any]:
    return {(tuple(sorted(m.events.items())),
             tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in m.bindings.items()))
            for m in q.run(events)}


# ---------------------------------------------------------------- the worked examples

def test_example_1_one_gpm() -> None:
    events = [house(10, 1, 1), house(15, 2, 2), house(25, 3, 3)]
    got = results(query("?h ?p ?l", 5, "A", A), events)
    assert got == [({"A": (i,)}, {"h": x(f"H{n}"), "p": x(f"Pw{n}"), "l": x(f"L{n}")})
                   for i, n in ((0, 1), (1, 2), (2, 3))]


EX2 = [house(10, 1, 1), house(25, 2, 2), weather(10, 1, "Vl1", 1), weather(20, 2, "V12", 1)]


def test_example_2_and() -> None:
    assert results(query("*", 15, "A & B"), EX2) == [
        ({"A": (0,), "B": (2,)}, {"h": x("H1"), "p": x("Pw1"), "l": x("L1"), "w": x("W1"),
                                  "v": x("Vl1")})]


def test_example_2_or() -> None:
    none = {"h": None, "p": None}
    assert results(query("*", 15, "A | B"), EX2) == [
        ({"A": (0,)}, {"h": x("H1"), "p": x("Pw1"), "l": x("L1"), "w": None, "v": None}),
        ({"B": (2,)}, {**none, "l": x("L1"), "w": x("W1"), "v": x("Vl1")}),
        ({"B": (3,)}, {**none, "l": x("L1"), "w": x("W2"), "v": x("V12")}),
        ({"A": (1,)}, {"h": x("H2"), "p": x("Pw2"), "l": x("L2"), "w": None, "v": None}),
    ]


EX3 = [house(10, 1, 1), house(15, 2, 1), weather(15, 1, "Vl1", 2), weather(20, 1, "Vl1", 1),
       weather(25, 2, "V12", 1)]


def _hw(h: int, hpos: int, w: int, v: str, wpos: int) -> tuple[Any, ...]:
    return ({"A": (hpos,), "B": (wpos,)},
            {"h": x(f"H{h}"), "p": x(f"Pw{h}"), "l": x("L1"), "w": x(f"W{w}"), "v": x(v)})


@pytest.mark.parametrize(("seq", "expected"), [
    ("A : B", [_hw(1, 0, 1, "Vl1", 3), _hw(2, 1, 1, "Vl1", 3), _hw(1, 0, 2, "V12", 4),
               _hw(2, 1, 2, "V12", 4)]),
    ("A ; B", [_hw(1, 0, 1, "Vl1", 3), _hw(2, 1, 1, "Vl1", 3)]),
    ("A , B", [_hw(2, 1, 1, "Vl1", 3)]),
])
def test_example_3_selection_operators(seq: str, expected: list[Any]) -> None:
    assert results(query("?h ?p ?l ?w ?v", 15, seq), EX3) == expected


EX4 = [house(10, 1, 1), house(25, 2, 2), weather(15, 1, "Vl1", 1), weather(20, 2, "V12", 1)]
ONE = ({"A": (0,), "B": (2,)}, {"h": x("H1"), "p": x("Pw1"), "l": x("L1"), "w": [x("W1")],
                                "v": [x("Vl1")]})
TWO = ({"A": (0,), "B": (2, 3)}, {"h": x("H1"), "p": x("Pw1"), "l": x("L1"),
                                  "w": [x("W1"), x("W2")], "v": [x("Vl1"), x("V12")]})
LATE = ({"A": (0,), "B": (3,)}, {"h": x("H1"), "p": x("Pw1"), "l": x("L1"), "w": [x("W2")],
                                 "v": [x("V12")]})


@pytest.mark.parametrize(("seq", "expected"), [
    ("A ; B+", [ONE, TWO]), ("A , B+", [ONE, TWO]), ("A : B+", [ONE, TWO, LATE])])
def test_example_4_kleene(seq: str, expected: list[Any]) -> None:
    assert results(query("*", 10, seq), EX4) == expected


KB = (":H1 :owner :john . :H1 :address :paris . :H2 :owner :smith . :H2 :address :lyon .")


@pytest.mark.parametrize("graph", ["kb", "none"])
def test_example_5_graph(graph: str) -> None:
    kb = StaticDataset().load(f"@prefix : <{EX}> . {KB}", graph=x("kb"))
    gpm = (f"DEFINE GPM A ON S1 {{ ?h :pow ?p . ?h :loc ?l . GRAPH <{x(graph)}> "
           "{ ?h :owner ?n . ?h :address ?a } }")
    q = sp.compile(f"{PREFIX}SELECT * WITHIN 10 SECONDS\n{STREAMS}WHERE {{ SEQ (A)\n{gpm} }}",
                   dataset=kb)
    expected = [({"A": (0,)}, {"h": x("H1"), "p": x("Pw1"), "l": x("L1"), "n": x("john"),
                               "a": x("paris")}),
                ({"A": (1,)}, {"h": x("H2"), "p": x("Pw2"), "l": x("L2"), "n": x("smith"),
                               "a": x("lyon")})]
    assert results(q, [house(10, 1, 1), house(25, 2, 2)]) == (expected if graph == "kb" else [])


EX6 = [{"stream": "S1", "time": 10, "graph": f"@prefix : <{EX}> . :H1 :pow :Pw1 . :H1 :loc :L1 ."
        " :H3 :pow :Pw3 . :H3 :loc :L3 ."},
       weather(20, 1, "Vl1", 1), weather(30, 3, "Vl3", 3)]
H1W1 = ({"A": (0,), "B": (1,)}, {"h": x("H1"), "w": x("W1")})
H3W3 = ({"A": (0,), "B": (2,)}, {"h": x("H3"), "w": x("W3")})


@pytest.mark.parametrize(("seq", "expected"), [
    ("A ; B", [H1W1, H3W3]), ("A : B", [H1W1, H3W3]), ("A , B", [H1W1])])
def test_example_6_several_mappings(seq: str, expected: list[Any]) -> None:
    assert results(query("?h ?w", 60, seq), EX6) == expected


EX7 = [house(10, 1, 1), house(25, 2, 2), weather(15, 1, "Vl1", 1), weather(40, 2, "V12", 2)]


@pytest.mark.parametrize(("within", "expected"), [
    (50, [({"A": (0,), "B": (2,)}, {"h": x("H1"), "p": x("Pw1"), "v": x("Vl1")}),
          ({"A": (1,), "B": (3,)}, {"h": x("H2"), "p": x("Pw2"), "v": x("V12")})]),
    (10, [({"A": (0,), "B": (2,)}, {"h": x("H1"), "p": x("Pw1"), "v": x("Vl1")})])])
def test_example_7_window(within: int, expected: list[Any]) -> None:
    assert results(query("?h ?p ?v", within, "A ; B"), EX7) == expected


GPMS8 = ("DEFINE GPM A ON S1 { ?c :price ?p1 }\n"
         "DEFINE GPM B ON S1 { ?c :price ?p2 . FILTER (?p2 > ?p1) }\n"
         "DEFINE GPM C ON S1 { ?c :price ?p3 . FILTER (?p3 < ?p2) }")
EX8 = [{"stream": "S1", "time": t, "graph": f"<{EX}G> <{EX}price> {p} ."}
       for t, p in zip(range(1, 6), (10, 12, 11, 9, 14), strict=True)]


def _abc(a: int, b: int, c: int) -> tuple[Any, ...]:
    price = (10, 12, 11, 9, 14)
    return ({"A": (a,), "B": (b,), "C": (c,)},
            {"p1": price[a], "p2": price[b], "p3": price[c]})


@pytest.mark.parametrize(("seq", "expected"), [
    ("A ; B ; C", [_abc(0, 1, 2)]),
    ("A : B : C", [_abc(0, 1, 2), _abc(0, 1, 3), _abc(0, 2, 3)]),
    ("A , B , C", [_abc(0, 1, 2)])])
def test_example_8_conditions(seq: str, expected: list[Any]) -> None:
    got = results(query("?p1 ?p2 ?p3", 10, seq, GPMS8), EX8)
    assert sorted(got, key=repr) == sorted(expected, key=repr)


def _ab(a: int, bs: tuple[int, ...]) -> tuple[Any, ...]:
    price = (10, 12, 11, 9, 14)
    return ({"A": (a,), "B": bs}, {"p1": price[a], "p2": [price[b] for b in bs]})


@pytest.mark.parametrize(("seq", "expected"), [
    ("A ; B+", [_ab(0, (1,)), _ab(0, (1, 2)), _ab(0, (1, 2, 4)), _ab(1, (4,)), _ab(2, (4,)),
                _ab(3, (4,))]),
    ("A , B+", [_ab(0, (1,)), _ab(0, (1, 2)), _ab(3, (4,))])])
def test_example_8_kleene_conditions(seq: str, expected: list[Any]) -> None:
    gpms = "\n".join(GPMS8.splitlines()[:2])
    got = results(query("?p1 ?p2", 10, seq, gpms), EX8)
    assert sorted(got, key=repr) == sorted(expected, key=repr)
