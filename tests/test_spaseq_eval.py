"""SPAseq evaluation (issue 15.4): docs/SPASEQ.md's worked examples exactly, the appendix use
cases on small hand-made data, errors for bad events, and the engine against the brute-force
reference of tests/spaseq_reference.py on random sequence expressions and graphs."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ceql
import ceql.spaseq as sp
from ceql.rdf import StaticDataset
from spaseq_reference import reference_matches
from strategies import PROFILE

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


def assert_on_engine(q: sp.Query, events: list[dict[str, Any]]) -> None:
    """The query ran on ceql's engine to the end, with the run loop's matches."""
    ev = q.evaluator()
    got = ev.feed(sorted(events, key=lambda e: e["time"])) + ev.close()
    assert ev.engine, ev.path_reason
    assert [(m.events, m.bindings) for m in got] == results_run_loop(q, events)


def results_run_loop(q: sp.Query, events: list[dict[str, Any]]) -> list[Any]:
    return [(m.events, m.bindings) for m in q.run(events, engine=False)]


def as_set(q: sp.Query, events: list[dict[str, Any]]) -> set[Any]:
    return {(tuple(sorted(m.events.items())),
             tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in m.terms.items()))
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


def test_the_dataset_as_files_as_spark_takes_it(tmp_path: Path) -> None:
    """dataset= takes {graph IRI: path} and TriG / N-Quads paths (MATCH_SPASEQ's dataset
    option), as well as a StaticDataset; anything else is a clear error."""
    (tmp_path / "kb.ttl").write_text(f"@prefix : <{EX}> . {KB}")
    (tmp_path / "kb.trig").write_text(f"@prefix : <{EX}> . :kb {{ {KB} }}")
    gpm = (f"DEFINE GPM A ON S1 {{ ?h :pow ?p . ?h :loc ?l . GRAPH <{x('kb')}> "
           "{ ?h :owner ?n . ?h :address ?a } }")
    text = f"{PREFIX}SELECT ?h ?n ?a WITHIN 10 SECONDS\n{STREAMS}WHERE {{ SEQ (A)\n{gpm} }}"
    want = [({"A": (0,)}, {"h": x("H1"), "n": x("john"), "a": x("paris")}),
            ({"A": (1,)}, {"h": x("H2"), "n": x("smith"), "a": x("lyon")})]
    events = [house(10, 1, 1), house(25, 2, 2)]
    for dataset in ({x("kb"): tmp_path / "kb.ttl"}, {x("kb"): str(tmp_path / "kb.ttl")},
                    [tmp_path / "kb.trig"], (str(tmp_path / "kb.trig"),),
                    StaticDataset().load(path=tmp_path / "kb.trig")):
        assert results(sp.compile(text, dataset=dataset), events) == want
    for bad, says in ((str(tmp_path / "kb.trig"), "a str is not taken"),
                      ({1: "kb.ttl"}, "is not graph IRI (str): file path"),
                      ([3], "3 is not a file path"), (5, "not int")):
        with pytest.raises(ceql.CeqlTypeError, match=re.escape(says)) as e:
            sp.compile(text, dataset=bad)
        assert "a mapping {graph IRI: file path}" in str(e.value)
    with pytest.raises(ceql.CeqlError, match="cannot read it"):
        sp.compile(text, dataset={x("kb"): tmp_path / "none.ttl"})


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
    assert_on_engine(query("?p1 ?p2 ?p3", 10, seq, GPMS8), EX8)


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
    assert_on_engine(query("?p1 ?p2", 10, seq, gpms), EX8)


# ---------------------------------------------------------------- engine against reference

NAMES = "ABCDEF"


_XSD = "http://www.w3.org/2001/XMLSchema#"
# the numbers 0-2, mostly as written in Turtle, at times spelt otherwise: the same value in
# another term (terms join by sameTerm; FILTERs compare values)
_SPELLED = st.one_of(
    st.integers(0, 2).map(str), st.integers(0, 2).map(str),
    st.integers(0, 2).flatmap(lambda n: st.sampled_from([
        f'"0{n}"^^<{_XSD}integer>', f'"+{n}"^^<{_XSD}integer>', f'"{n}"^^<{_XSD}int>',
        f'"{n}.0"^^<{_XSD}decimal>'])))


@st.composite
def random_cases(draw: st.DrawFn) -> tuple[str, list[dict[str, Any]]]:
    """A random query (1-3 elements of GPMs, & and | groups, +, the three operators, shared
    and iteration-local variables, local and cross-GPM FILTERs) and 2-6 random events."""
    n_el = draw(st.integers(1, 3))
    groups: list[list[str]] = []
    used = 0
    seq = []
    for k in range(n_el):
        size = draw(st.integers(1, 2)) if used < 3 else 1
        names = list(NAMES[used:used + size])
        used += size
        groups.append(names)
        text = names[0] if size == 1 else f"({names[0]} {draw(st.sampled_from('&|'))} {names[1]})"
        if draw(st.integers(0, 9)) < 3:
            text += "+"
        if k:
            seq.append(draw(st.sampled_from([",", ";", ":"])))
        seq.append(text)
    gpms = []
    for k, names in enumerate(groups):
        for name in names:
            i = NAMES.index(name)
            s = draw(st.sampled_from(["?x", "?y", f"?s{i}"]))
            triples = [f"{s} :{draw(st.sampled_from('pq'))} ?v{i}"]
            if draw(st.booleans()):
                triples.append(f"{s} :{draw(st.sampled_from('pq'))} "
                               f"{draw(st.sampled_from(['?z', f'?v{i}', ':a']))}")
            if draw(st.integers(0, 3)) == 0:
                triples.append(f"FILTER (?v{i} > 0)")
            earlier = [NAMES.index(g) for gs in groups[:k] for g in gs]
            if earlier and draw(st.booleans()):
                j = draw(st.sampled_from(earlier))
                op = draw(st.sampled_from([">=", "<", "!="]))
                triples.append(f"FILTER (?v{i} {op} ?v{j})")
            stream = draw(st.sampled_from(["S1", "S2"]))
            gpms.append(f"DEFINE GPM {name} ON {stream} {{ {' . '.join(triples)} }}")
    within = draw(st.integers(2, 6))
    text = (f"{PREFIX}SELECT * WITHIN {within} SECONDS\n{STREAMS}WHERE {{ SEQ ({' '.join(seq)})\n"
            + "\n".join(gpms) + " }")
    slots = draw(st.lists(st.tuples(st.sampled_from(["S1", "S2"]), st.integers(1, 6)),
                          min_size=2, max_size=6, unique=True))
    events = []
    for stream, t in slots:
        triples = draw(st.lists(st.tuples(st.sampled_from("ab"), st.sampled_from("pq"),
                                          _SPELLED), min_size=1, max_size=3, unique=True))
        graph = " ".join(f"<{EX}{s}> <{EX}{p}> {o} ." for s, p, o in triples)
        events.append({"stream": stream, "time": t, "graph": graph})
    return text, events


@settings(max_examples=PROFILE.max_examples, deadline=None)
@given(random_cases())
def test_engine_agrees_with_reference(case: tuple[str, list[dict[str, Any]]]) -> None:
    text, events = case
    q = sp.compile(text)
    assert as_set(q, events) == reference_matches(q.ast, events)


# ---------------------------------------------------------------- the appendix use cases

def _load(name: str, dataset: StaticDataset | None = None) -> sp.Query:
    return sp.compile((DATA / name).read_text(encoding="utf-8"), dataset=dataset)


def test_use_case_smart_grid() -> None:
    db = StaticDataset().load(
        '@prefix : <http://example/> . :H1 :locatedIn :Paris . :H1 :nearBy :H2 . '
        ':H1 :ownerNAme "john" .', graph="http://smartgrid.org/db")
    q = _load("q1_smart_grid.rq", db)
    pre = "@prefix : <http://example/> . "

    def power(t: int, fare: int) -> dict[str, Any]:
        return {"stream": "S1", "time": t, "graph": pre + ':H1 :loc :L1 . :H1 :pow :P . '
                f':P :source "fuel" . :P :fare {fare} .'}

    def weather(t: int, loc: str) -> dict[str, Any]:
        return {"stream": "S2", "time": t,
                "graph": pre + f":w :loc :{loc} . :w :value :V1 . :V1 :light 50 . :V1 :windsp 5 ."}

    storage = {"stream": "http://smartgrid.org/streams/storage", "time": 240,
               "graph": pre + ':s :loc :L1 . :s :pow :Pw . :Pw :source "solar" . :Pw :fare 10 .'}
    events = [power(0, 25), weather(60, "L1"), weather(90, "L2"), weather(120, "L1"),
              weather(180, "L1"), storage]
    # A; B+, C: the weather at L1 repeats (the one at L2 is skipped by ';'), and the storage
    # event must come at the instant right after the last B (so only B+ ending at 180)
    assert results(q, events) == [
        ({"A": (0,), "B": (1, 3, 4), "C": (5,)},
         {"house": x("H1"), "city": x("Paris"), "oname": "john", "fr1": 25, "fr2": 10})]
    assert results(q, [power(0, 15), *events[1:]]) == []  # ?fr1 > 20 fails
    assert results(q, [power(0, 8), *events[1:]]) == []  # ?fr2 < ?fr1 fails


def test_use_case_credit_card() -> None:
    db = StaticDataset().load('<http://creditcard.org/id7> <http://creditcard.org/cardHolder> '
                              '"Ann" . <http://creditcard.org/id7> '
                              '<http://creditcard.org/holderAdrress> "Paris" .',
                              graph="http://creditcard.org/db")
    q = _load("q2_credit_card.rq", db)

    def pay(t: int, amount: int) -> dict[str, Any]:
        return {"stream": "S1", "time": t, "graph": f"<{EX}c1> <{EX}id> 42 . <{EX}c1> "
                f"<{EX}amount> {amount} . <{EX}c1> <{EX}loc> <{EX}here> ."}

    got = results(q, [pay(60, 100), pay(120, 50), pay(180, 5)])
    assert_on_engine(q, [pay(60, 100), pay(120, 50), pay(180, 5), pay(240, 1), pay(300, 9)])
    # SEQ(A, B+): each B at the next instant with ?amount2 * 10 >= ?amount1
    assert got == [
        ({"A": (0,), "B": (1,)}, {"card": x("c1"), "amount1": 100, "amount2": [50],
                                  "name": ["Ann"], "address": ["Paris"]}),
        ({"A": (1,), "B": (2,)}, {"card": x("c1"), "amount1": 50, "amount2": [5],
                                  "name": ["Ann"], "address": ["Paris"]})]


def _prices(prices: list[int]) -> list[dict[str, Any]]:
    return [{"stream": "S1", "time": 60 * i,
             "graph": f"<{EX}goog> <{EX}price> {p} . <{EX}goog> <{EX}volume> {100 + i} ."}
            for i, p in enumerate(prices)]


def test_use_case_v_shape() -> None:
    got = results(_load("q4_v_shape.rq"), _prices([10, 12, 11, 9, 14]))
    assert got == [({"A": (0,), "B": (1,), "C": (2,)},
                    {"company": x("goog"), "p1": 10, "p2": 12, "p3": 11, "vol1": 100,
                     "vol2": 101, "vol3": 102})]


def test_use_case_head_and_shoulders() -> None:
    prices = [50, 10, 20, 15, 30, 18, 25, 20]
    got = results(_load("q3_head_and_shoulders.rq"), _prices(prices))
    assert [m for m, _ in got] == [{g: (i + 1,) for i, g in enumerate("ABCDEFG")}]
    assert got[0][1] == {"company": x("goog"),
                         **{f"p{i + 1}": p for i, p in enumerate(prices[1:])},
                         **{f"vol{i + 1}": 101 + i for i in range(7)}}
    prices[6] = 35  # the right shoulder above the head
    assert results(_load("q3_head_and_shoulders.rq"), _prices(prices)) == []


def test_use_case_traffic() -> None:
    base = "http://www.insight-centre.org/dataset/SampleEventService#AarhusTrafficData"
    ssn = "http://purl.oclc.org/NET/ssnx/ssn#"
    sao = "http://purl.oclc.org/NET/sao/ssn#"

    def obs(stream: str, t: int, v: int) -> dict[str, Any]:
        return {"stream": base + stream, "time": t, "graph": f"<{EX}t> <{ssn}observedProperty> "
                f"<{EX}speed> . <{EX}t> <{sao}hasValue> {v} ."}

    events = [obs("182955", 1, 5), obs("195578", 2, 6), obs("195446", 3, 7),
              obs("195578", 4, 5), obs("195446", 4, 9), obs("195578", 5, 8),
              obs("195446", 5, 8)]
    assert_on_engine(_load("q5_traffic.rq"), events)
    # A; (B&C): the first instant after A where both B and C fit is 4 (2 and 3 hold one each)
    assert results(_load("q5_traffic.rq"), events) == [
        ({"A": (0,), "B": (3,), "C": (4,)}, {"traffic": x("t"), "v1": 5, "v2": 5, "v3": 9})]


# ---------------------------------------------------------------- bad events

Q_ERR = "A ; B"
NEEDS = ("an event needs 'stream' (a stream's IRI or its name in the query), 'time' (a number "
         "of seconds or a datetime) and 'graph' (RDF text, a parsed graph or a list of triples)")


@pytest.mark.parametrize(("bad", "message"), [
    ({"time": 3, "graph": ""}, f"event 1 has no 'stream': {NEEDS}"),
    ({"stream": "S1", "graph": ""}, f"event 1 has no 'time': {NEEDS}"),
    ({"stream": "S1", "time": 3}, f"event 1 has no 'graph': {NEEDS}"),
    ("S1", f"event 1 is a str: {NEEDS}"),
    ({"stream": 7, "time": 3, "graph": ""},
     "event 1: 'stream' is 7; it must be the IRI or the name of a stream of the query "
     "(S1 <http://example/power>, S2 <http://example/weather>)"),
    ({"stream": "S1", "time": "noon", "graph": ""},
     "event 1: 'time' is 'noon'; a time is a finite number of seconds or a datetime"),
    ({"stream": "S1", "time": float("nan"), "graph": ""},
     "event 1: 'time' is nan; a time is a finite number of seconds or a datetime"),
    ({"stream": "S1", "time": 3, "graph": None},
     "event 1: 'graph' is None; an empty graph is \"\" or []"),
    ({"stream": "S1", "time": dt.datetime(2024, 1, 1), "graph": ""},
     "event 1: 'time' is a naive datetime and event 0's is a number: all times must be of "
     "one kind"),
    ({"stream": "S1", "time": 1, "graph": ""},
     "events 0 and 1 are both on stream S1 <http://example/power> at time 1: a stream has at "
     "most one event per time (merge their graphs into one event)"),
    ({"stream": "S1", "time": 3, "graph": "<http://example/a> <http://example/b> ."},
     "event 1: bad Turtle at line 1, column 39: . is not a valid RDF object\n"
     "<http://example/a> <http://example/b> .\n" + " " * 38 + "^"),
])
def test_bad_events(bad: object, message: str) -> None:
    q = query("*", 10, Q_ERR)
    with pytest.raises(ceql.CeqlInputError) as e:
        list(q.run([house(1, 1, 1), bad]))  # type: ignore[list-item]
    assert str(e.value) == message


def test_events_of_other_streams_are_not_events_of_the_query() -> None:
    # dropped before instants are formed: the one at 12 does not break ',' contiguity
    events = [house(10, 1, 1), {"stream": "http://example/other", "time": 12, "graph": "nonsense"},
              weather(15, 1, "Vl1", 1)]
    assert results(query("?h ?w", 10, "A , B"), events) == [
        ({"A": (0,), "B": (2,)}, {"h": x("H1"), "w": x("W1")})]


def test_evaluator_out_of_order_and_batches() -> None:
    q = query("?h ?w", 10, "A ; B")
    ev = q.evaluator()
    assert ev.feed([house(10, 1, 1)]) == []
    with pytest.raises(ceql.CeqlInputError) as e:
        ev.feed([weather(5, 1, "Vl1", 1)])
    assert str(e.value) == ("event 1 at time 5 comes after event 0 at time 10: feed events in "
                            "time order (Query.run sorts them)")
    ev = q.evaluator()
    got = ev.feed([house(10, 1, 1), weather(15, 1, "Vl1", 1)]) + ev.close()
    assert [(m.events, m.bindings) for m in got] == [
        ({"A": (0,), "B": (1,)}, {"h": x("H1"), "w": x("W1")})]
    # Query.run sorts by time and reports input indices; datetimes work as times
    t0 = dt.datetime(2024, 1, 1, 12, 0, 0)
    events = [dict(weather(0, 1, "Vl1", 1), time=t0 + dt.timedelta(seconds=5)),
              dict(house(0, 1, 1), time=t0)]
    assert [(m.events, m.start_time, m.end_time) for m in q.run(events)] == [
        ({"A": (1,), "B": (0,)}, t0, t0 + dt.timedelta(seconds=5))]
