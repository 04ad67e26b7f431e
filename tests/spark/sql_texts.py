"""Random Spark SQL texts for the inline syntax's lexing differential (issue 28.5).

A text mixes string literals ('…' and "…" with backslash escapes, raw R'…' and r"…"),
back-quoted names, ``--`` comments (with ``\\``-newline continuations), nested ``/* … */``
comments and hints ``/*+ … */``, whose contents hold the text ``MATCH_CEQL(`` and other traps,
with real inline ``MATCH_CEQL( <CEQL> )`` calls; it may be cut short anywhere. Each text comes
with where its real calls lie and the CEQL text each one passes.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

#: what literals, names and comments hold: calls' texts, quotes, escapes, comment marks, a
#: character outside the BMP (ANTLR counts code points, Java strings chars)
FRAGMENTS = ("MATCH_CEQL(", "MATCH_CEQL( SELECT * FROM ev WHERE A )", "match_ceql(select x",
             ")", "(", "'", '"', "\\", "`", "--", "/*", "*/", "/*+", "\n", " ", "R'", 'r"',
             ";", ",", "x", "=>", "query => 'q'", "é\U0001f600", "\\'", "C:\\")
#: fragments a comment can hold as they are (its nesting is drawn apart)
COMMENT_SAFE = tuple(f for f in FRAGMENTS if "*" not in f and "/" not in f)


@dataclass(frozen=True)
class Call:
    """A real inline call: its text, and the CEQL text it passes (the query option's value)."""

    text: str
    ceql: str
    options: str


@dataclass(frozen=True)
class SqlText:
    """A SQL text, its real calls' spans [start, end) and CEQL texts, and the text Spark's
    parser must read as it with each call's CEQL replaced by ``'CEQLPLACEHOLDER<i>'`` (None
    when the text was cut inside a call: then ``calls`` are the whole ones before it)."""

    text: str
    calls: tuple[tuple[int, int, str], ...]
    expected: str | None


def placeholder(i: int) -> str:
    """The stand-in for the ``i``-th call's CEQL text in :attr:`SqlText.expected`."""
    return f"CEQLPLACEHOLDER{i}"


_content = st.lists(st.sampled_from(FRAGMENTS), max_size=5).map("".join)
_comment_content = st.lists(st.sampled_from(COMMENT_SAFE), max_size=4).map(" ".join)


def _single(c: str) -> str:
    return "'" + c.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _double(c: str) -> str:
    return '"' + c.replace("\\", "\\\\").replace('"', '\\"') + '"'


@st.composite
def _literal(draw: st.DrawFn) -> str:
    c = draw(_content)
    kind = draw(st.sampled_from(("single", "double", "raw'", 'raw"')))
    if kind == "single":
        return _single(c)
    if kind == "double":
        return _double(c)
    q = kind[-1]
    return draw(st.sampled_from("Rr")) + q + c.replace(q, "") + q


@st.composite
def _line_comment(draw: st.DrawFn) -> str:
    lines = draw(st.lists(_comment_content.map(lambda c: c.replace("\n", " ")),
                          min_size=1, max_size=2))
    last = lines[-1] + (" x" if lines[-1].endswith("\\") else "")
    return "--" + "\\\n".join([*lines[:-1], last]) + "\n"


def _block_comment(depth: int = 0) -> st.SearchStrategy[str]:
    inner = _comment_content if depth >= 2 else st.one_of(
        _comment_content, st.deferred(lambda: _block_comment(depth + 1)))
    return st.lists(inner, max_size=3).map(lambda parts: "/* " + " ".join(parts) + " */")


_separator = st.lists(st.one_of(st.sampled_from((" ", "\n", "\t")), _line_comment(),
                                _block_comment()), min_size=1, max_size=3).map(
    lambda parts: "".join(parts) if parts[-1].strip() == "" or parts[-1].endswith("\n")
    else "".join(parts) + " ")


@st.composite
def _call(draw: st.DrawFn) -> Call:
    name = draw(st.sampled_from(("MATCH_CEQL", "match_ceql", "Match_Ceql")))
    value = draw(_content)
    ceql_string = "'" + value.replace("'", "''") + "'"
    between = draw(st.sampled_from((" ", "\n", " -- a ')' here\n", " /* ( ' */ ")))
    follows = draw(st.sampled_from(("", " ", "\n", " -- C:\\ x\n", " /* ) */")))
    op = draw(st.sampled_from((";", "\\;", ":")))
    body = f"SELECT * FROM ev WHERE A{between}{op} B FILTER A[x = {ceql_string}]"
    lead = draw(st.sampled_from(("", " ", "\n", " /* c */ ", "-- c\n")))
    options = draw(st.sampled_from(("", ", time => 'ts'", ",\ntime => 'ts' /* ) */")))
    return Call(f"{name}({lead}{body}{follows}{options})",
                (body + follows).replace("\\;", ";").rstrip(), options)


_expression = st.one_of(_literal(), st.sampled_from(("1", "x", "2.5")),
                        st.builds(lambda a, s, b: f"concat({a},{s}{b})", _literal(),
                                  _separator, _literal()))
_alias = st.one_of(st.sampled_from(("a1", "note")),
                   _content.map(lambda c: "`" + c.replace("`", "``") + "`"))
_hint = st.one_of(st.sampled_from(("/*+ REPARTITION(2) */", "/*+ COALESCE(1) */")),
                  _content.map(lambda c: f"/*+ HINTX({_single(c)}) */"))


@st.composite
def sql_texts(draw: st.DrawFn) -> SqlText:
    """A SELECT statement of literals, names, comments and hints, with or without real calls
    (in its select list and its FROM clause), possibly cut short."""
    parts: list[str | Call] = ["SELECT", draw(_separator)]
    if draw(st.booleans()):
        parts += [draw(_hint), draw(_separator)]
    for i in range(draw(st.integers(1, 3))):
        if i:
            parts += [",", draw(_separator)]
        parts.append(draw(_call() if draw(st.integers(0, 5)) == 0 else _expression))
        if draw(st.booleans()):
            parts += [draw(_separator), "AS", draw(_separator), draw(_alias)]
    if draw(st.integers(0, 3)):
        source = draw(st.sampled_from(("ev", "(SELECT 1 AS one)", "call", "call")))
        source = draw(_call()) if source == "call" else source
        parts += [draw(_separator), "FROM", draw(_separator), source]
        if isinstance(source, Call):
            parts.append(" AS m")
    parts.append(draw(st.sampled_from(("", " ", "\n", " -- end"))))
    text, expected, calls, grown = "", "", [], []
    for p in parts:
        if isinstance(p, Call):
            calls.append((len(text), len(text) + len(p.text), p.ceql))
            name = p.text[:p.text.index("(")]
            instead = f"{name}(query => '{placeholder(len(calls) - 1)}'{p.options})"
            grown.append(len(instead) - len(p.text))
            text += p.text
            expected += instead
        else:
            text += p
            expected += p
    how = draw(st.sampled_from(("whole", "whole", "anywhere", "in a call")))
    if how == "in a call" and calls:
        s, e, _ = calls[draw(st.integers(0, len(calls) - 1))]
        cut: int | None = draw(st.integers(s + 1, e - 1))
    else:
        cut = draw(st.integers(0, len(text))) if how == "anywhere" else None
    if cut is None:
        return SqlText(text, tuple(calls), expected)
    if any(s < cut < e for s, e, _ in calls):
        return SqlText(text[:cut], tuple(c for c in calls if c[1] <= cut), None)
    kept = [(c, g) for c, g in zip(calls, grown, strict=True) if c[1] <= cut]
    return SqlText(text[:cut], tuple(c for c, _ in kept),
                   expected[:cut + sum(g for _, g in kept)])
