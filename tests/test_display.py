"""What notebooks show: a query's HTML (picture by Graphviz or by ceql, plan), explain's object,
matches as a card and as a table, and the timeline plot."""

from __future__ import annotations

import datetime as dt
import io
import pickle
import re
import warnings
import xml.etree.ElementTree as ET
from typing import Any

import matplotlib

matplotlib.use("Agg")

import graphviz
import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import pytest
from IPython.lib.pretty import pretty

import ceql
import ceql.plot
from ceql.display import describe, svg
from ceql.display import graphviz as gv
from ceql.frontends.ceql import format_query
from ceql.runtime import display

STOCK = """
    SELECT * FROM Stock
    WHERE SELL AS msft ; SELL AS intel ; (BUY OR SELL)+ AS amzn
    FILTER msft[name = 'MSFT'] AND msft[price > 100]
    PARTITION BY [name]
    WITHIN 5 EVENTS
"""
SVG_NS = "{http://www.w3.org/2000/svg}"
#: What the fake Graphviz below draws, as ceql passes it on
DRAWN = ('<svg id="by-graphviz"><g stroke="currentColor"><text fill="currentColor" x="1">q0'
         "</text></g></svg>")


def compiled(text: str) -> ceql.Query:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ceql.CeqlWarning)
        return ceql.compile(text)


def svg_of(html: str) -> ET.Element:
    """The one ``<svg>`` element in ``html``, parsed (so it must be well-formed XML)."""
    (found,) = re.findall(r"<svg\b.*?</svg>", html, re.S)
    return ET.fromstring(found)


@pytest.fixture
def no_dot(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine without Graphviz's ``dot``: the package must not even be asked."""
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("graphviz was called although dot is missing")
    monkeypatch.setattr(gv, "dot_binary", lambda: None)
    monkeypatch.setattr(graphviz.Source, "pipe", refuse)


@pytest.fixture
def fake_dot(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A machine with ``dot``: the DOT sources Graphviz is given, and a drawing of its own."""
    sources: list[str] = []

    def pipe(self: graphviz.Source, *args: Any, **kwargs: Any) -> str:
        assert kwargs["format"] == "svg" and kwargs["encoding"] == "utf-8"
        sources.append(self.source)
        return ('<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE svg PUBLIC "-//W3C//DTD '
                'SVG 1.1//EN" "x">\n<svg id="by-graphviz"><g stroke="black"><text x="1">q0'
                "</text></g></svg>\n")
    monkeypatch.setattr(gv, "dot_binary", lambda: "/usr/bin/dot")
    monkeypatch.setattr(graphviz.Source, "pipe", pipe)
    return sources


# ------------------------------------------------------------------ Query._repr_html_


@pytest.mark.usefixtures("no_dot")
def test_query_html_without_dot_draws_its_own_svg_and_the_plan() -> None:
    q = compiled(STOCK)
    _, cea = q.automaton()
    html = q._repr_html_()
    assert 'class="ceql ceql-query"' in html
    assert "PARTITION BY [name]\nWITHIN 5 EVENTS" in html  # the canonical text
    root = svg_of(html)
    assert root.get("data-layout") == "ceql"
    circles = root.findall(f".//{SVG_NS}circle")
    assert len(circles) == cea.n_states + len(cea.finals)
    texts = [t.text for t in root.iter(f"{SVG_NS}text")]
    assert {f"q{i}" for i in range(cea.n_states)} <= set(texts)
    arcs = {(t.src, t.dst) for t in cea.transitions}
    assert len(root.findall(f".//{SVG_NS}path")) == len(arcs)
    assert len(root.findall(f".//{SVG_NS}polygon")) == len(arcs) + 1  # and the initial arrow
    assert "any ○" in texts and "SELL • SELL, intel" in texts
    # a long label is cut; the arc's tooltip has it whole
    assert "SELL AND name = 'MSFT' AND price > 100 • SE…" in texts
    titles = [t.text or "" for t in root.iter(f"{SVG_NS}title")]
    assert "q0 → q1\nSELL AND name = 'MSFT' AND price > 100 • SELL, msft" in titles
    # the plan: strategy, window, partitioning, predicates; the listing under "as text"
    assert "WITHIN 5 EVENTS: at most 5 positions" in html
    assert "<td>partition by</td><td>name</td>" in html
    assert "p2: name = &#x27;MSFT&#x27;" in html
    assert "<summary>as text</summary>" in html and "q0 --[(p0 AND p2 AND p3)] •--&gt; q1" in html


def test_query_html_with_dot_shows_graphviz_drawing_of_the_picture_dot(
        fake_dot: list[str]) -> None:
    q = compiled(STOCK)
    atoms, cea = q.automaton()
    html = q._repr_html_()
    assert DRAWN in html  # its colours follow the notebook's theme
    assert "<?xml" not in html and "DOCTYPE" not in html and 'data-layout="ceql"' not in html
    assert [s.rstrip("\n") for s in fake_dot] == [gv.picture_dot(cea, atoms)]
    dot = fake_dot[0].rstrip("\n")
    assert dot.startswith("digraph cea {") and dot.endswith("}")
    assert "start -> q0;" in dot
    for q_final in cea.finals:
        assert f"q{q_final} [shape=doublecircle];" in dot
    # one edge per pair of states, its transitions one label line each
    assert dot.count(" -> ") == len({(t.src, t.dst) for t in cea.transitions}) + 1
    assert "q0 -> q1 [label=\"SELL AND name = 'MSFT' AND price > 100 • SELL, msft\"];" in dot
    assert re.search(r'q5 -> q4 \[label="BUY • BUY, amzn\\nSELL • SELL, amzn"\];', dot)


def test_picture_dot_quotes_labels() -> None:
    q = compiled("SELECT * FROM S WHERE A AS a FILTER a[s = 'say \"hi\" \\ bye'] WITHIN 2 EVENTS")
    atoms, cea = q.automaton()
    dot = gv.picture_dot(cea, atoms)
    assert 'label="A AND s = \'say \\"hi\\" \\\\ bye\' • a"' in dot


@pytest.mark.parametrize("error", [graphviz.ExecutableNotFound(["dot"]),
                                   graphviz.CalledProcessError(1, ["dot"]),
                                   OSError("no such file")])
def test_graphviz_failures_fall_back_to_ceqls_drawing(monkeypatch: pytest.MonkeyPatch,
                                                      error: Exception) -> None:
    def pipe(self: graphviz.Source, *args: Any, **kwargs: Any) -> str:
        raise error
    monkeypatch.setattr(gv, "dot_binary", lambda: "/usr/bin/dot")
    monkeypatch.setattr(graphviz.Source, "pipe", pipe)
    assert svg_of(compiled(STOCK)._repr_html_()).get("data-layout") == "ceql"


def test_dot_binary_is_looked_up_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gv.shutil, "which", lambda name: f"/opt/gv/bin/{name}")
    assert gv.dot_binary() == "/opt/gv/bin/dot"
    monkeypatch.setattr(gv.shutil, "which", lambda name: None)
    assert gv.dot_binary() is None
    assert gv.render("digraph { a -> b }") is None


@pytest.mark.usefixtures("no_dot")
def test_user_text_is_escaped_everywhere() -> None:
    q = compiled("SELECT * FROM S WHERE A AS a ; B AS b "
                 "FILTER a[name = '<script>alert(1)</script>'] AND b[t = 'x&y'] WITHIN 3 EVENTS")
    for html in (q._repr_html_(), ceql.explain(q.text)._repr_html_()):
        assert "<script>" not in html
        assert "&lt;script&gt;" in html and "x&amp;y" in html
        svg_of(html)  # still well-formed XML


@pytest.mark.usefixtures("no_dot")
def test_an_automaton_too_large_to_draw_is_listed_as_text() -> None:
    q = compiled("SELECT * FROM S WHERE " + " ; ".join(["A"] * (svg.MAX_STATES + 5))
                 + " WITHIN 100 EVENTS")
    html = q._repr_html_()
    assert "<svg" not in html
    assert "too large to draw" in html and "q0 --[p0] •--&gt; q1" in html
    assert ceql.explain(q.text)._repr_svg_() is None


@pytest.mark.usefixtures("no_dot")
@pytest.mark.parametrize("text", [
    "SELECT * FROM S WHERE A",
    "SELECT * FROM S WHERE (A ; B)+ ; C : D OR E WITHIN 9 EVENTS",
    "SELECT * FROM S WHERE (A OR B) ; (C ; (D OR E)+)+ ; F WITHIN 9 EVENTS",
    "SELECT STRICT * FROM S WHERE A :+ ; B WITHIN 9 EVENTS",
    "SELECT b FROM S1, S2 WHERE S1>A AS a ; S2>B AS b FILTER a[x > 1] OR b[y < 2] "
    "WITHIN 9 EVENTS",
    "SELECT NONE FROM S WHERE A ; NOT_SEEN+ WITHIN 2 SECONDS",
])
def test_own_drawing_is_well_formed_for_many_shapes(text: str) -> None:
    q = compiled(text)
    atoms, cea = q.automaton()
    drawn = svg.automaton_svg(cea, atoms)
    assert drawn is not None
    root = ET.fromstring(drawn)
    x, y, w, h = map(float, root.get("viewBox", "").split())
    assert w > 0 and h > 0
    assert "nan" not in drawn and "inf" not in drawn
    assert len(root.findall(f".//{SVG_NS}circle")) == cea.n_states + len(cea.finals)
    # every drawn point lies in the view box
    for el in root.iter(f"{SVG_NS}circle"):
        cx, cy = float(el.get("cx", "")), float(el.get("cy", ""))
        assert x <= cx <= x + w and y <= cy <= y + h


# ------------------------------------------------------------------ explain


@pytest.mark.usefixtures("no_dot")
def test_explain_is_the_text_and_draws_in_notebooks() -> None:
    q = compiled(STOCK)
    atoms, cea = q.automaton()
    e = ceql.explain(STOCK)
    assert isinstance(e, ceql.Explanation) and isinstance(e, str)
    plan = q.lazy_plan()
    assert not plan.eligible
    expected = describe(cea, atoms, format_query(q.ast),
                        [f"engine: {q.engine().name}",
                         f"lazy evaluation: not used ({plan.reason}); every row is fed"])
    assert e == expected and str(e) == expected and type(str(e)) is str
    assert pretty(e) == expected  # IPython's text/plain: the listing, not a quoted repr
    assert e.rstrip("\n").splitlines()[0] == "SELECT ANY * FROM Stock"
    assert ET.fromstring(e._repr_svg_() or "").get("data-layout") == "ceql"
    html = e._repr_html_()
    assert 'class="ceql ceql-explanation"' in html and "p3: price &gt; 100" in html
    assert "automaton: 6 states, 13 transitions" in html
    assert ceql.explain(q) == e  # a compiled query works too
    back = pickle.loads(pickle.dumps(e))
    assert isinstance(back, ceql.Explanation) and back == e and back.query is q


def test_explain_dot_is_dot_text_and_draws_too(fake_dot: list[str]) -> None:
    d = ceql.explain(STOCK, dot=True)
    assert isinstance(d, ceql.Explanation)
    assert d.startswith("digraph cea {") and d.rstrip().endswith("}")
    assert '[label="(p0 AND p2 AND p3) / •"]' in d  # the listing's form, as before
    assert d._repr_svg_() == DRAWN


# ------------------------------------------------------------------ matches

EVENTS = [
    {"type": "SELL", "name": "MSFT", "price": 101}, {"type": "SELL", "name": "MSFT", "price": 102},
    {"type": "SELL", "name": "INTL", "price": 80}, {"type": "BUY", "name": "INTL", "price": 80},
    {"type": "SELL", "name": "AMZN", "price": 1900}, {"type": "SELL", "name": "INTL", "price": 81},
    {"type": "SELL", "name": "AMZN", "price": 1920},
]
SEQ = """SELECT * FROM Stock WHERE SELL AS msft ; SELL AS intel ; SELL AS amzn
         FILTER msft[name = 'MSFT'] AND intel[name = 'INTL'] AND amzn[name = 'AMZN']
         WITHIN 5 EVENTS"""


def timed(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    t0 = dt.datetime(2024, 1, 2, 9, 30)
    return [{**e, "ts": t0 + dt.timedelta(seconds=3 * i)} for i, e in enumerate(events)]


def test_match_html_shows_interval_variables_and_times_when_known() -> None:
    q = compiled(SEQ)
    r = next(iter(q.run(EVENTS)))
    # a match without its events (built as the evaluator builds one)
    m = ceql.Match(r.start_position, r.end_position, r.start_time, r.end_time, r.positions,
                   r.partition, r._labels)
    html = m._repr_html_()
    assert "<b>match</b> [1, 4]" in html and "time" not in html.split("<table")[0]
    assert "<th>variable</th><th>positions</th>" in html
    assert "<tr><td>msft</td><td>1</td></tr>" in html
    assert "<tr><td>SELL</td><td>1, 2, 4</td></tr>" in html
    m = next(iter(compiled(SEQ.replace("5 EVENTS", "20 SECONDS")).run(timed(EVENTS),
                                                                      time="ts")))
    assert "time 2024-01-02 09:30:03 → 2024-01-02 09:30:12" in m._repr_html_()


def test_match_html_with_events_shows_their_fields_escaped() -> None:
    q = compiled("SELECT * FROM S WHERE A AS a ; B AS b PARTITION BY [k] WITHIN 3 EVENTS")
    events = [{"type": "A", "k": "<k>", "note": "<i>x</i>"}, {"type": "B", "k": "<k>"}]
    (m,) = q.run(events)
    html = display.match_html(m, [events[p] for p in m.positions])
    assert "partition &lt;k&gt;" in html
    assert "<th>position</th><th>variables</th><th>type</th><th>k</th><th>note</th>" in html
    assert "<tr><td>0</td><td>a</td><td>A</td><td>&lt;k&gt;</td><td>&lt;i&gt;x&lt;/i&gt;</td>" \
        in html
    assert "<tr><td>1</td><td>b</td><td>B</td><td>&lt;k&gt;</td><td></td></tr>" in html
    assert "<i>x</i>" not in html


def test_matches_is_a_list_shown_as_a_table() -> None:
    q = compiled(SEQ)
    ms = ceql.Matches(q.run(EVENTS))
    assert isinstance(ms, list) and len(ms) == 4
    assert isinstance(ms[1:3], ceql.Matches) and ms[1:3] == ms[1:3] and ms[0] == ms[:1][0]
    html = ms._repr_html_()
    header = re.search(r"<thead><tr>(.*?)</tr></thead>", html)
    assert header is not None
    assert re.findall(r"<th>(.*?)</th>", header.group(1)) == [
        "#", "start", "end", *ms[0].variables]
    assert html.count("<tr>") == 1 + 4
    assert "<tr><td>0</td><td>1</td><td>4</td>" in html
    assert "4 matches" in html
    assert "no matches" in ceql.Matches()._repr_html_()


def test_matches_table_caps_rows_and_says_how_many_more() -> None:
    q = compiled("SELECT * FROM S WHERE A AS a WITHIN 1 EVENTS")
    ms = ceql.Matches(q.run([{"type": "A"}] * (display.MAX_ROWS + 15)))
    html = ms._repr_html_()
    assert html.count("<tr>") == 1 + display.MAX_ROWS
    assert f"the first {display.MAX_ROWS} of {display.MAX_ROWS + 15} matches; 15 more" in html


def test_matches_table_shows_times_partitions_and_event_tooltips() -> None:
    q = compiled("SELECT * FROM S WHERE A AS a ; B AS b PARTITION BY [k] WITHIN 10 SECONDS")
    events = timed([{"type": "A", "k": "<p>"}, {"type": "B", "k": "<p>", "v": "\"q\""}])
    (m,) = q.run(events, time="ts")
    html = display.matches_html([m])
    assert "<th>start time</th><th>end time</th><th>partition</th>" in html
    assert "<td>2024-01-02 09:30:00</td><td>2024-01-02 09:30:03</td><td>&lt;p&gt;</td>" in html

    class WithEvents(ceql.Match):
        __slots__ = ("events",)

    e = WithEvents(m.start_position, m.end_position, m.start_time, m.end_time, m.positions,
                   m.partition, m._labels)
    e.events = tuple(events[p] for p in m.positions)
    html = display.matches_html([e])
    assert '<span title="type=B, k=&lt;p&gt;, v=&quot;q&quot;, ts=2024-01-02 09:30:03">1</span>' \
        in html


# ------------------------------------------------------------------ plot.timeline


@pytest.fixture(autouse=True)
def _close_figures() -> Any:
    yield
    plt.close("all")


def offsets(ax: Any, label: str) -> list[tuple[float, float]]:
    """The points of the scatters labelled ``label`` (an event type, a variable or both)."""
    return [tuple(p) for c in ax.collections if c.get_label() == label
            for p in c.get_offsets().tolist()]


def test_timeline_on_positions() -> None:
    ms = list(compiled(SEQ).run(EVENTS))
    ax = ceql.plot.timeline(ms)
    variables = list(ms[0].variables)
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == variables
    assert ax.get_title() == "4 matches" and ax.get_xlabel() == "position"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["#0", "#1", "#2", "#3"]
    xs = sorted(x for x, _ in offsets(ax, "msft"))
    assert xs == sorted(p for m in ms for p in m.variables["msft"])
    # each variable has its own lane within a match's row
    (y_msft,) = {round(y - round(y), 6) for _, y in offsets(ax, "msft")}
    (y_amzn,) = {round(y - round(y), 6) for _, y in offsets(ax, "amzn")}
    assert y_msft != y_amzn
    buf = io.BytesIO()
    ax.figure.savefig(buf, format="png")
    assert buf.getvalue().startswith(b"\x89PNG")


def test_timeline_with_events_on_their_times() -> None:
    events = timed(EVENTS)
    ms = list(compiled(SEQ.replace("5 EVENTS", "20 SECONDS")).run(events, time="ts"))
    _, given = plt.subplots()
    ax = ceql.plot.timeline(ms, events, time="ts", ax=given, max_rows=2)
    assert ax is given
    assert ax.get_title() == f"the first 2 of {len(ms)} matches"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["events", "#0", "#1"]
    # the events row: those within the drawn matches' span, by type
    lo = min(m.start_position for m in ms[:2])
    hi = max(m.end_position for m in ms[:2])
    assert (lo, hi) == (0, 4)
    sells = offsets(ax, "SELL")
    assert sorted(x for x, y in sells if y == 0) == [
        mdates.date2num(e["ts"]) for e in events[lo:hi + 1] if e["type"] == "SELL"]
    assert [x for x, y in offsets(ax, "BUY") if y == 0] == [mdates.date2num(events[3]["ts"])]
    shown = {mdates.date2num(events[p]["ts"]) for m in ms[:2] for p in m.variables["amzn"]}
    assert {x for x, _ in offsets(ax, "amzn")} == shown
    texts = [t.get_text() for leg in ax.findobj(matplotlib.legend.Legend)
             for t in leg.get_texts()]
    assert "SELL" in texts and "BUY" in texts and "msft" in texts


def test_timeline_needs_the_events_for_times() -> None:
    ms = list(compiled(SEQ).run(EVENTS))
    with pytest.raises(ceql.CeqlValidationError, match="pass events="):
        ceql.plot.timeline(ms, time="ts")
    with pytest.raises(ceql.CeqlInputError, match="position 4 but events has 2"):
        ceql.plot.timeline(ms, EVENTS[:2], time="price")
    with pytest.raises(ceql.CeqlTypeError):
        ceql.plot.timeline([1, 2])  # type: ignore[list-item]


def test_times_shown_whenever_the_match_is_timed() -> None:
    # times equal to the positions are still times when a time attribute gave them
    q = compiled("SELECT * FROM S WHERE A ; B WITHIN 5 SECONDS")
    ms = ceql.Matches(q.run([{"type": "A", "ts": 0}, {"type": "B", "ts": 1}], time="ts"))
    assert ms[0].timed and "start time" in ms._repr_html_()
    assert "time 0 → 1" in ms[0]._repr_html_()
    untimed = ceql.Matches(compiled("SELECT * FROM S WHERE A ; B WITHIN 5 EVENTS")
                           .run([{"type": "A"}, {"type": "B"}]))
    assert not untimed[0].timed and "start time" not in untimed._repr_html_()


def test_the_plan_lists_the_output_variables() -> None:
    q = compiled("SELECT * FROM S WHERE SELL AS s ; BUY WITHIN 5 EVENTS")
    assert "every variable: s, BUY" in q._repr_html_()
