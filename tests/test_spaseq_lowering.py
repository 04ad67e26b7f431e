"""SPAseq on ceql's engine (issue 15): the sequence lowered to a CEQL query over records
(ceql.spaseq.lowering) gives exactly the brute-force reference's matches and the run loop's,
which queries lower and why the others do not, and the hand-over to the run loop when a value
cannot be compared exactly."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ceql
import ceql.spaseq as sp
from ceql.frontends.ceql import parse
from ceql.query import compile_ir
from ceql.spaseq.lowering import SCALE, lower_plan, scaled
from spaseq_reference import reference_matches
from strategies import PROFILE
from test_spaseq_eval import EX, PREFIX, STREAMS, A, B, as_set, house, query, random_cases, weather


def run_set(q: sp.Query, events: list[dict[str, Any]], engine: bool) -> set[Any]:
    return {(tuple(sorted(m.events.items())),
             tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in m.terms.items()))
            for m in q.run(events, engine=engine)}


def on_engine(q: sp.Query, events: list[dict[str, Any]]) -> bool:
    ev = q.evaluator()
    ev.feed(sorted(events, key=lambda e: e["time"]))
    ev.close()
    return ev.engine


@settings(max_examples=PROFILE.max_examples, deadline=None)
@given(random_cases())
def test_engine_path_agrees_with_reference_and_run_loop(
        case: tuple[str, list[dict[str, Any]]]) -> None:
    text, events = case
    q = sp.compile(text)
    got = run_set(q, events, engine=True)
    assert got == reference_matches(q.ast, events)
    assert got == run_set(q, events, engine=False)


_XSD = "http://www.w3.org/2001/XMLSchema#"
OBJECTS = ["0", "1", "2", f'"1.5"^^<{_XSD}decimal>', "<http://example/a>", '"x"', "1.0e0",
           # the same values spelt otherwise, and a string with a language tag: other terms
           f'"01"^^<{_XSD}integer>', f'"1"^^<{_XSD}int>', f'"1.50"^^<{_XSD}decimal>', '"x"@en']


@settings(max_examples=PROFILE.max_examples, deadline=None)
@given(random_cases(), st.data())
def test_values_the_lowering_cannot_compare_hand_over(case: tuple[str, list[dict[str, Any]]],
                                                      data: st.DataObject) -> None:
    """Objects of other types (IRIs, strings, doubles): a FILTER reading one moves the
    evaluation to the run loop mid-stream, with the same matches."""
    text, events = case
    mixed = []
    for e in events:
        triples = [t.rsplit(" ", 2) for t in e["graph"].split(" .") if t.strip()]
        graph = " ".join(f"{s} {p} {data.draw(st.sampled_from(OBJECTS))} ."
                         for s, p, _ in triples)
        mixed.append({**e, "graph": graph})
    q = sp.compile(text)
    assert as_set(q, mixed) == reference_matches(q.ast, mixed)


GENERAL = ["?{a} * 2 >= ?{b}", "STR(?{a}) != STR(?{b})", "?{a} + 1 > ?{b} || !BOUND(?{b})",
           "IF(?{a} > 0, ?{b} < 2, ?{a} = ?{b})", "ABS(?{a} - ?{b}) <= 1", "?{a} IN (?{b}, 2)"]


@settings(max_examples=PROFILE.max_examples, deadline=None)
@given(random_cases(), st.data())
def test_general_filters_agree_with_reference(case: tuple[str, list[dict[str, Any]]],
                                              data: st.DataObject) -> None:
    """Cross-GPM FILTERs that are SPARQL expressions beyond comparisons: on the engine (SPARQL
    on each complete match) unless a ';' makes them decide what is next."""
    text, events = case

    def general(m: re.Match[str]) -> str:
        form = data.draw(st.sampled_from(GENERAL))
        return f"FILTER ({form.format(a=m.group(1), b=m.group(3))})"

    text = re.sub(r"FILTER \(\?(v\d) (>=|<|!=) \?(v\d)\)", general, text)
    q = sp.compile(text)
    assert as_set(q, events) == reference_matches(q.ast, events)


@settings(max_examples=PROFILE.max_examples, deadline=None)
@given(random_cases(), st.data())
def test_optional_variables_agree_with_reference(case: tuple[str, list[dict[str, Any]]],
                                                 data: st.DataObject) -> None:
    """A GPM's second triple pattern made OPTIONAL: its variables may be unbound, which the
    lowering reads through bound flags (outside + GPMs: no hand-over)."""
    text, events = case

    def optional(m: re.Match[str]) -> str:
        parts = m.group(2).split(" . ")
        if len(parts) > 1 and not parts[1].startswith("FILTER") and data.draw(st.booleans()):
            rest = " . ".join(parts[2:])
            return f"{m.group(1)}{{ {parts[0]} OPTIONAL {{ {parts[1]} }} {rest} }}"
        return m.group(0)

    text = re.sub(r"(DEFINE GPM \w+ ON \w+ )\{ (.*) \}", optional, text)
    q = sp.compile(text)
    assert as_set(q, events) == reference_matches(q.ast, events)


def test_optional_outside_plus_stays_on_the_engine() -> None:
    gpm_b = "DEFINE GPM B ON S2 { ?w :value ?v . OPTIONAL { ?w :loc ?l } }"
    events = [house(10, 1, 1), house(11, 2, 2), weather(12, 1, "Vl1", 2),
              {"stream": "S2", "time": 13, "graph": f"<{EX}W3> <{EX}value> <{EX}V3> ."},
              weather(14, 4, "V4", 1)]
    for seq in ["A ; B", "A : B", "A , B", "B ; A", "(A | B) : B2"]:
        gpms = f"{A}\n{gpm_b}" + ("\n" + gpm_b.replace("GPM B", "GPM B2").replace("?w", "?w2")
                                  .replace("?v", "?v2") if "B2" in seq else "")
        q = query("*", 10, seq, gpms=gpms)
        assert on_engine(q, events), seq
        assert as_set(q, events) == reference_matches(q.ast, events), seq


BOUNDS = ["?p2 > ?p1", "?p2 <= ?p1", "?p1 = ?p2", "?p2 >= ?p1 && ?p2 < 4", "3 > ?p1 && ?p1 < ?p2",
          "?p1 != ?p2", "?p2 > ?p1 || ?p1 = 0", "!(?p1 > ?p2 || ?p1 < 1) && ?p1 != 2.5",
          "?p1 < ?p2 || ?p1 > ?p2 + 0"]


@settings(max_examples=PROFILE.max_examples, deadline=None)
@given(st.sampled_from(["A ; B+", "A : B+ ; C", "A ; B+ , C", "A , (B | C)+", "A ; (B & C)+"]),
       st.sampled_from(BOUNDS), st.sampled_from(BOUNDS),
       st.lists(st.lists(st.tuples(st.sampled_from("GH"), st.sampled_from(
           ["0", "1", "2", "3", "4", "2.5", "-1"])), min_size=1, max_size=2),
           min_size=2, max_size=7),
       st.integers(2, 6))
def test_skip_till_next_iterations_with_filters_agree_with_reference(
        seq: str, fb: str, fc: str, rows: list[list[tuple[str, str]]], within: int) -> None:
    """A ';'-iterated + whose FILTERs compare its values with one value fixed before it (worked
    example 8): each record carries, per interval of that value, the previous fit instant
    (with arithmetic, '+ 0', the run loop)."""
    gpms = (f"DEFINE GPM A ON S1 {{ ?c :price ?p1 }}\n"
            f"DEFINE GPM B ON S1 {{ ?c :price ?p2 . FILTER ({fb}) }}\n")
    if "C" in seq:
        gpms += (f"DEFINE GPM C ON S{2 if '&' in seq else 1} {{ ?c :price ?p3 . "
                 f"FILTER ({fc.replace('?p2', '?p3')}) }}")
    events = []
    for i, row in enumerate(rows):
        graph = " ".join(f"<{EX}{c}> <{EX}price> {v} ." for c, v in row)
        events.append({"stream": "S1", "time": i + 1, "graph": graph})
        if "&" in seq:
            events.append({"stream": "S2", "time": i + 1, "graph": graph})
    q = sp.compile(f"{PREFIX}SELECT * WITHIN {within} SECONDS {STREAMS}"
                   f"WHERE {{ SEQ ({seq}) {gpms} }}")
    assert as_set(q, events) == reference_matches(q.ast, events)
    # arithmetic where a ';' makes the FILTER decide what is next: the run loop
    refused = ("+ 0" in fb and seq in ("A ; B+", "A ; B+ , C", "A ; (B & C)+")) or (
        "+ 0" in fc and seq in ("A : B+ ; C", "A ; (B & C)+"))
    assert (lower_plan(q.plan).reason is None) == (not refused)


# ---------------------------------------------------------------- what lowers


@pytest.mark.parametrize("seq", ["A", "A & B", "A | B", "A : B", "A ; B", "A , B", "A ; B+",
                                 "A , B+", "A : B+", "B+ ; A", "B+ , A", "A+", "(A | B) ; A2",
                                 "A : (B & A2)", "A : (B | A2)+", "A : (A2 & B)+",
                                 "A ; (A2 & B)", "A ; (B | A2)+", "(A & B)+ ; A2"])
def test_queries_that_lower(seq: str) -> None:
    defs = {"A": A, "B": B, "A2": "DEFINE GPM A2 ON S1 { ?h2 :pow ?p2 . ?h2 :loc ?l . }"}
    used = set(re.findall(r"[A-Z][0-9]?", seq))
    q = query("*", 10, seq, gpms="\n".join(d for n, d in defs.items() if n in used))
    lowered = lower_plan(q.plan)
    assert lowered.reason is None, lowered.reason
    assert lowered.text is not None and lowered.query is not None
    # the query is built as IR and compiled without text; its text (the formatter's) only
    # shows it, and reads back as the same query
    assert parse(lowered.text) == lowered.query
    assert compile_ir(lowered.query).ast == ceql.compile(lowered.text).ast


def test_compile_ir_takes_an_ir_query_only() -> None:
    with pytest.raises(ceql.CeqlTypeError, match=r"ceql\.ir\.nodes\.Query"):
        compile_ir("SELECT * FROM S WHERE A")  # type: ignore[arg-type]


@pytest.mark.parametrize(("seq", "gpms", "reason"), [
    ("A ; B+", f"{A}\nDEFINE GPM B ON S2 {{ ?w :value ?v . ?w :loc ?l . "
     "FILTER (?v > ?p && ?v < ?h) }", "read more than one variable bound before the +"),
    ("A ; B+", f"{A}\nDEFINE GPM B ON S2 {{ ?w :value ?v . ?w :loc ?l . "
     "FILTER (?v > ?p + 1) }", "more than comparisons"),
    ("A ; B", f"{A}\nDEFINE GPM B ON S2 {{ ?w :value ?v . ?w :loc ?l . "
     "FILTER (STR(?v) != STR(?p)) }", "more than comparisons"),
    ("A ; B", f"{A}\nDEFINE GPM B ON S2 {{ ?w :value ?v . FILTER (?v > 1.5e0 || ?v > ?p) }}",
     "not an xsd:integer or xsd:decimal"),
])
def test_queries_that_do_not_lower_say_why(seq: str, gpms: str, reason: str) -> None:
    q = query("*", 10, seq, gpms=gpms)
    lowered = lower_plan(q.plan)
    assert lowered.text is None
    assert lowered.reason is not None and reason in lowered.reason
    ev = q.evaluator()
    assert not ev.engine and ev.path_reason == lowered.reason


def test_worked_examples_run_on_the_engine() -> None:
    events = [house(10, 1, 1), house(15, 2, 1), weather(15, 1, "Vl1", 2),
              weather(20, 1, "Vl1", 1), weather(25, 2, "V12", 1)]
    for seq in ["A : B", "A ; B", "A , B", "A ; B+", "A , B+", "A : B+", "A & B", "A | B"]:
        q = query("*", 15, seq)
        assert on_engine(q, events), seq
        assert as_set(q, events) == reference_matches(q.ast, events), seq


def prices(values: list[str]) -> list[dict[str, Any]]:
    return [{"stream": "S1", "time": i + 1, "graph": f"<{EX}G> <{EX}price> {v} ."}
            for i, v in enumerate(values)]


PRICE_GPMS = ("DEFINE GPM A ON S1 { ?c :price ?p1 }\n"
              "DEFINE GPM B ON S1 { ?c :price ?p2 . FILTER (?p2 > ?p1) }\n"
              "DEFINE GPM C ON S1 { ?c :price ?p3 . FILTER (?p3 < ?p2) }")


@pytest.mark.parametrize("seq", ["A ; B ; C", "A : B : C", "A , B , C", "A : B+", "A , B+",
                                 "A ; B+", "A ; B+ ; C"])
def test_cross_gpm_filters_on_the_engine(seq: str) -> None:
    events = prices(["10", "12", "11", "9", "14", "10.5", "-3"])
    gpms = "\n".join(d for d in PRICE_GPMS.split("\n") if d.split()[2] in seq)
    q = sp.compile(f"{PREFIX}SELECT * WITHIN 10 SECONDS {STREAMS}"
                   f"WHERE {{ SEQ ({seq}) {gpms} }}")
    assert on_engine(q, events)
    assert as_set(q, events) == reference_matches(q.ast, events)


def test_a_value_the_lowering_cannot_compare_hands_over_with_the_window_replayed() -> None:
    # the string at 4 cannot be compared by the lowering, and after ';' the FILTER decides
    # which B is next: from there the run loop goes on, having replayed the instants of the
    # last window (the A at 3 still matches later)
    events = prices(["10", "1", "5", '"text"', "7", "3", "8"])
    q = sp.compile(f"{PREFIX}SELECT * WITHIN 3 SECONDS {STREAMS}"
                   f"WHERE {{ SEQ (A ; B) {PRICE_GPMS.rsplit(chr(10), 1)[0]} }}")
    ev = q.evaluator()
    early = ev.feed(events[:3])
    assert ev.engine
    late = ev.feed(events[3:]) + ev.close()
    assert not ev.engine
    got = {(tuple(sorted(m.events.items())), tuple(m.terms.items())) for m in early + late}
    expected = {(tuple(sorted(e)), b) for e, b in reference_matches(q.ast, events)}
    assert got == expected
    assert any(m.events["A"] == (2,) for m in late)  # begun before the hand-over


@pytest.mark.parametrize("seq", ["A : B", "A , B", "A : B+", "A , B+"])
def test_values_the_lowering_cannot_compare_stay_on_the_engine_outside_skip_till_next(
        seq: str) -> None:
    # where the FILTER only accepts or refuses whole matches, the engine lets a value it
    # cannot compare by and SPARQL decides on the complete match
    events = prices(["10", "1", "5", '"text"', "7", '"6"', "8", "2.5e0", "3.0", "<http://x/>",
                     "4"])
    q = sp.compile(f"{PREFIX}SELECT * WITHIN 3 SECONDS {STREAMS}"
                   f"WHERE {{ SEQ ({seq}) {PRICE_GPMS.rsplit(chr(10), 1)[0]} }}")
    assert on_engine(q, events)
    assert as_set(q, events) == reference_matches(q.ast, events)


@pytest.mark.parametrize("name", ["q1_smart_grid.rq", "q2_credit_card.rq",
                                  "q3_head_and_shoulders.rq", "q4_v_shape.rq", "q5_traffic.rq",
                                  "q6_trajectory.rq"])
def test_the_appendix_queries_lower(name: str) -> None:
    # credit card: a FILTER with arithmetic (SPARQL on each complete match); traffic: ';'
    # before an & across streams (one record per instant's joined choices)
    q = sp.compile((Path(__file__).parent / "data" / "spaseq" / name).read_text(encoding="utf-8"))
    assert lower_plan(q.plan).reason is None


def test_scaled_values_are_exact() -> None:
    xsd = "http://www.w3.org/2001/XMLSchema#"
    assert scaled(f'"5"^^<{xsd}integer>') == 5 * SCALE
    assert scaled(f'"0.1"^^<{xsd}decimal>') == SCALE // 10
    assert scaled(f'"-1.000000000000000001"^^<{xsd}decimal>') == -SCALE - 1
    assert scaled(f'"1e0"^^<{xsd}double>') is None
    assert scaled(f"<{EX}a>") is None
    assert scaled('"5"') is None


EDGES = [("a", "b"), ("b", "c"), ("c", "a"), ("b", "a"), ("a", "c"), ("c", "b"), ("b", "c"),
         ("c", "a"), ("a", "b")]
PATH_GPMS = ("DEFINE GPM A ON S1 { ?x :next ?y }\n"
             "DEFINE GPM B ON S1 { ?y :next ?z }\n"
             "DEFINE GPM C ON S1 { ?z :next ?w }")


@pytest.mark.parametrize("seq", ["A ; B ; C", "A , B , C", "A : B : C", "A ; B : C", "A+ ; B ; C",
                                 "A : B+ , C"])
def test_gpms_equal_up_to_renaming_share_one_record_type(seq: str) -> None:
    # B's ?y is where A's ?x is: each element reads the shared record's columns renamed
    events = [{"stream": "S1", "time": i + 1, "graph": f"<{EX}{s}> <{EX}next> <{EX}{o}> ."}
              for i, (s, o) in enumerate(EDGES)]
    q = sp.compile(f"{PREFIX}SELECT * WITHIN 4 SECONDS {STREAMS}"
                   f"WHERE {{ SEQ ({seq}) {PATH_GPMS} }}")
    low = lower_plan(q.plan)
    shared = [leaf.index for leaf in low.leaves if leaf.index in low.alias]
    assert len(shared) == len(re.findall(r"\b[ABC]\b(?!\+)", seq))
    assert low.text is not None and len(set(re.findall(r"\bL\d+\b", low.text))) == \
        len(low.leaves) - len(shared) + 1
    assert on_engine(q, events)
    got = run_set(q, events, engine=True)
    assert got
    assert got == reference_matches(q.ast, events)
    assert got == run_set(q, events, engine=False)


def test_gpms_read_differently_do_not_share() -> None:
    # B's FILTER only accepts whole matches (its values may stay loose), C's decides what is
    # next after ';' (exact): one record could not carry both, so each keeps its own
    q = sp.compile(f"{PREFIX}SELECT * WITHIN 10 SECONDS {STREAMS}"
                   f"WHERE {{ SEQ (A : B ; C) {PRICE_GPMS} }}")
    assert lower_plan(q.plan).alias == {}
    assert lower_plan(sp.compile(f"{PREFIX}SELECT * WITHIN 10 SECONDS {STREAMS}"
                                 f"WHERE {{ SEQ (A ; B ; C) {PRICE_GPMS} }}").plan).alias
    events = prices(["10", "12", "11", "9", "14", "10.5", "-3"])
    assert on_engine(q, events)
    assert as_set(q, events) == reference_matches(q.ast, events)
