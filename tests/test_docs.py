"""The documentation's examples are true: every example in README.md and docs/*.md runs here.

What each fenced block's info string means (pure Python, no Spark, a few seconds in all):

- ``pycon``: a Python session; its ``>>>`` lines run (all blocks of a page share one namespace,
  in page order, with ``docs/`` importable for ``show.py``) and what they print must be the
  text shown (doctest, ``...`` matching anything);
- ``ceql``: a whole CEQL query, which must compile;
- ``console``: ``$ ceql …`` commands run in the repository's root and print exactly the lines
  shown after them (standard output only);
- ``sql`` and ``python``: not run (they need Spark), but every CEQL query in them (``query =>
  '…'``, ``MATCH_CEQL( <CEQL> )``, ``MATCH_CEQL('…')``, ``ceql.spark.match(df, "…")``) must
  compile; ``sql spaseq`` and ``python spaseq``: the same for SPAseq (``query => '…'`` must
  compile with ``ceql.spaseq``).

Also here: links between the pages resolve, and the pieces that keep ``make run``'s output free
of noise (license metadata setuptools accepts, quiet pip, the quiet Spark session of the demo).
"""

from __future__ import annotations

import contextlib
import doctest
import io
import re
import shlex
import sys
import tomllib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import ceql
import ceql.spaseq
from ceql.spark.inline import closing_paren

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]

_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the block's first line of content
    info: str
    text: str

    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path, *infos: str) -> list[Block]:
    """The fenced blocks of ``page`` whose info string is one of ``infos``."""
    source = page.read_text(encoding="utf-8")
    out = []
    for m in _FENCE.finditer(source):
        info = " ".join(m.group(1).split())
        if info in infos:
            line = source.count("\n", 0, m.start(2)) + 1
            out.append(Block(page, line, info, m.group(2)))
    return out


def _id(page: Path) -> str:
    return str(page.relative_to(ROOT))


@contextlib.contextmanager
def _docs_session() -> Iterator[None]:
    """``docs/`` importable, ceql's warnings silenced (doctest compares standard output)."""
    sys.path.insert(0, str(DOCS))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ceql.CeqlWarning)
            yield
    finally:
        sys.path.remove(str(DOCS))


# ------------------------------------------------------------------ pycon: doctest


def test_every_page_has_runnable_examples() -> None:
    """The pages that teach the language keep examples this file runs."""
    for name in ("language.md", "semantics.md", "strategies.md", "python.md"):
        assert blocks(DOCS / name, "pycon"), f"docs/{name} has no pycon example"
    assert blocks(ROOT / "README.md", "pycon")


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p, "pycon")], ids=_id)
def test_pycon_examples(page: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run as a reader would, in ``docs/`` (README's examples: in the repository's root)."""
    monkeypatch.chdir(page.parent)
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    globs: dict[str, object] = {"__name__": "__docs__"}
    report = io.StringIO()
    with _docs_session():
        for b in blocks(page, "pycon"):
            test = parser.get_doctest(b.text, globs, b.where(), str(page), b.line - 1)
            runner.run(test, out=report.write, clear_globs=False)
            globs.update(test.globs)  # DocTest works on a copy: carry names to the next block
    result = runner.summarize(verbose=False)
    assert result.attempted > 0
    assert result.failed == 0, report.getvalue()


# ------------------------------------------------------------------ CEQL blocks


def _all(*infos: str) -> list[Block]:
    return [b for p in PAGES for b in blocks(p, *infos)]


@pytest.mark.parametrize("block", _all("ceql"), ids=Block.where)
def test_ceql_blocks_compile(block: Block) -> None:
    """(No ``ceql planned`` block is left: every construct the docs show is evaluated.)"""
    with _docs_session():
        ceql.compile(block.text)


# ------------------------------------------------------------------ CEQL inside SQL and Python

_LITERAL = r"'((?:[^']|'')*)'"
_QUERY_OPTION = re.compile(r"query\s*=>\s*" + _LITERAL, re.I)
_MATCH_CALL = re.compile(r"MATCH_CEQL\s*\(", re.I)
_OPTION = re.compile(r",\s*\w+\s*=>")
_DATAFRAME_CALL = re.compile(r"ceql\.spark\.(?:match|run)\(\s*\w+\s*,\s*\"([^\"]+)\"", re.S)


def _call_body(text: str, start: int) -> str:
    """The text of a call from ``start`` (just after its '(') to its closing parenthesis."""
    end = closing_paren(text, start)
    if end is None:
        raise AssertionError(f"unbalanced MATCH_CEQL( in {text!r}")
    return text[start:end]


def embedded_queries(text: str) -> list[str]:
    """The CEQL queries written in a SQL or Python snippet."""
    found = [m.group(1).replace("''", "'") for m in _QUERY_OPTION.finditer(text)]
    for m in _MATCH_CALL.finditer(text):
        body = _call_body(text, m.end()).strip()
        if body[:1] in "'\"":  # MATCH_CEQL('…') or MATCH_CEQL("…")
            found.append(body[1:body.index(body[0], 1)])
        elif body[:6].upper() == "SELECT":  # MATCH_CEQL( <CEQL> [, option => …] )
            option = _OPTION.search(body)
            found.append((body[:option.start()] if option else body).replace("\\;", ";"))
    found += [m.group(1) for m in _DATAFRAME_CALL.finditer(text)]
    return found


def test_embedded_query_extraction() -> None:
    sql = """SELECT * FROM MATCH_CEQL(TABLE(t) PARTITION BY a ORDER BY (ts),
               query => 'SELECT * FROM t WHERE A FILTER A[n = ''x'']');
             SELECT m.* FROM MATCH_CEQL(
               SELECT a, b FROM t WHERE A AS a \\; B AS b PARTITION BY [k], time => 'ts') AS m;
             SELECT * FROM MATCH_CEQL("SELECT * FROM t WHERE (A ; B)")"""
    assert embedded_queries(sql) == [
        "SELECT * FROM t WHERE A FILTER A[n = 'x']",
        "SELECT a, b FROM t WHERE A AS a ; B AS b PARTITION BY [k]",
        "SELECT * FROM t WHERE (A ; B)",
    ]


def _embedded() -> list[tuple[Block, str]]:
    return [(b, q) for b in _all("sql", "python") for q in embedded_queries(b.text)]


def test_spark_guide_has_queries() -> None:
    assert len([b for b, _ in _embedded() if b.page.name == "spark.md"]) >= 5


@pytest.mark.parametrize(("block", "query"), _embedded(),
                         ids=[f"{b.where()}-{i}" for i, (b, _) in enumerate(_embedded())])
def test_embedded_queries_compile(block: Block, query: str) -> None:
    if query.endswith(".ceql"):  # ceql.spark.run(spark, "examples/queries/….ceql")
        query = (ROOT / query).read_text(encoding="utf-8")
    with _docs_session():
        ceql.compile(query)


def _spaseq_embedded() -> list[tuple[Block, str]]:
    return [(b, m.group(1).replace("''", "'")) for b in _all("sql spaseq")
            for m in _QUERY_OPTION.finditer(b.text)]


def test_the_docs_have_spaseq_queries_in_sql() -> None:
    assert {b.page.name for b, _ in _spaseq_embedded()} >= {"README.md", "spark.md"}


@pytest.mark.parametrize(("block", "query"), _spaseq_embedded(),
                         ids=[f"{b.where()}-{i}" for i, (b, _) in enumerate(_spaseq_embedded())])
def test_embedded_spaseq_queries_compile(block: Block, query: str) -> None:
    ceql.spaseq.compile(query)


_BODY_OPTION = re.compile(r"body\s*=>\s*'((?:[^'\\]|\\.)*)'", re.I)
_BODY_ARGUMENT = re.compile(r'match_recognize\(\s*\w+\s*,\s*"""(.*?)"""', re.S)


def _mr_embedded() -> list[tuple[Block, str]]:
    """The MATCH_RECOGNIZE bodies of ``sql mr`` and ``python mr`` blocks."""
    return [(b, m.group(1).replace("\\'", "'") if b.info == "sql mr" else m.group(1))
            for b in _all("sql mr", "python mr")
            for m in (_BODY_OPTION if b.info == "sql mr" else _BODY_ARGUMENT).finditer(b.text)]


def test_the_spark_guide_has_match_recognize_bodies() -> None:
    assert len([b for b, _ in _mr_embedded() if b.page.name == "spark.md"]) >= 3


@pytest.mark.parametrize(("block", "body"), _mr_embedded(),
                         ids=[f"{b.where()}-{i}" for i, (b, _) in enumerate(_mr_embedded())])
def test_embedded_match_recognize_bodies_compile(block: Block, body: str) -> None:
    """Each body parses, and what it leaves to the engine once Spark computes its row-local
    parts (``ceql.spark``'s split) is in the Python subset."""
    from ceql.frontends.mr import parse_body
    from ceql.spark.udtf.mr_split import split_body

    split = split_body(parse_body(body), lambda name: name, lambda name: "string")
    ceql.mr.MatchRecognizeQuery(split.body)


# ------------------------------------------------------------------ console: the CLI


def _commands(block: Block) -> list[tuple[list[str], str]]:
    """``(arguments after 'ceql', expected standard output)`` for each ``$ ceql`` line."""
    out: list[tuple[list[str], str]] = []
    for line in block.text.splitlines():
        if line.startswith("$ "):
            words = shlex.split(line[2:])
            assert words[0] in ("ceql", ".venv/bin/ceql"), f"{block.where()}: {line}"
            out.append((words[1:], ""))
        else:
            assert out, f"{block.where()}: output before any command"
            out[-1] = (out[-1][0], out[-1][1] + line + "\n")
    return out


@pytest.mark.parametrize("block", _all("console"), ids=Block.where)
def test_console_examples(block: Block, monkeypatch: pytest.MonkeyPatch) -> None:
    from ceql.cli import main

    monkeypatch.chdir(ROOT)
    for args, expected in _commands(block):
        stdout, stderr = io.StringIO(), io.StringIO()
        with _docs_session(), contextlib.redirect_stdout(stdout), \
                contextlib.redirect_stderr(stderr):
            status = main(args)
        assert status == 0, f"{block.where()}: ceql {shlex.join(args)}\n{stderr.getvalue()}"
        assert stdout.getvalue() == expected, f"{block.where()}: ceql {shlex.join(args)}"


# ------------------------------------------------------------------ links


_LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_links_resolve(page: Path) -> None:
    """Relative links name files of the repository (and headings of the page they point to)."""
    text = page.read_text(encoding="utf-8")
    for target in _LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{_id(page)}: broken link {target}"
        assert ROOT in dest.parents or dest == ROOT, f"{_id(page)}: {target} leaves the repo"
        if anchor and dest.suffix == ".md":
            assert anchor in _anchors(dest), f"{_id(page)}: no heading #{anchor} in {path}"


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings."""
    out = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


def test_user_docs_do_not_point_outside_the_clone() -> None:
    """A user's clone has no ../shared: README and docs/ are the project's own reference."""
    for page in [*PAGES, ROOT / "jvm-shim" / "README.md"]:
        text = page.read_text(encoding="utf-8")
        assert "../shared" not in text and "shared/SEMANTICS" not in text, _id(page)


def test_index_links_every_page() -> None:
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for page in DOCS.glob("*.md"):
        if page.name != "index.md":
            assert f"]({page.name}" in index, f"docs/index.md does not link {page.name}"
    assert "](docs/index.md)" in readme


# ------------------------------------------------------------------ a quiet `make run`


def test_license_metadata_is_the_modern_form() -> None:
    """An SPDX string, which setuptools ≥ 77 reads without its deprecation banner."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert isinstance(meta["project"]["license"], str)
    assert not any(c.startswith("License ::") for c in meta["project"].get("classifiers", ()))
    setuptools = [r for r in meta["build-system"]["requires"] if r.startswith("setuptools")]
    assert setuptools and re.fullmatch(r"setuptools>=(\d+).*", setuptools[0])
    assert int(re.fullmatch(r"setuptools>=(\d+).*", setuptools[0]).group(1)) >= 77


def test_make_installs_quietly() -> None:
    """pip runs through $(PIP), which prints errors only and no version nag; commands are not
    echoed on the way to the demo."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    pip = re.search(r"^PIP\s*:=(.*)$", makefile, re.M)
    assert pip and "-qq" in pip.group(1) and "--disable-pip-version-check" in pip.group(1)
    direct = [ln for ln in makefile.splitlines()
              if "-m pip" in ln and not ln.startswith("PIP")]
    assert not direct, direct
    for target in ("$(STAMP)", "run", "jar"):
        recipe = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n)+)", makefile, re.M)
        assert recipe, target
        assert all(ln.startswith("\t@") for ln in recipe.group(1).splitlines()), target


#: What `make run` printed on standard error before its session was quiet (Spark 4.x, Java 17).
JVM_START = [
    "WARNING: Using incubator modules: jdk.incubator.vector",
    "26/11/25 11:11:29 WARN NativeCodeLoader: Unable to load native-hadoop library for your "
    "platform... using builtin-java classes where applicable",
    "Using Spark's default log4j profile: org/apache/spark/log4j2-defaults.properties",
    'Setting default log level to "WARN".',
    "To adjust logging level use sc.setLogLevel(newLevel). For SparkR, use "
    "setLogLevel(newLevel).",
    'Setting Spark log level to "ERROR".',
]


def test_demo_is_quiet_through_the_package() -> None:
    """The demo's session is ``ceql.spark.local_session()``, quiet as every session it starts;
    the demo has no logging settings or standard error filter of its own."""
    source = (ROOT / "examples" / "demo.py").read_text(encoding="utf-8")
    assert "ceql.spark.local_session()" in source
    for own in ("log4j", "extraJavaOptions", "spark.log.level", "dup2", "jvm_noise"):
        assert own not in source, own
    assert not (ROOT / "examples" / "log4j2.properties").exists()


def test_the_jvm_start_up_chatter_is_dropped_or_never_printed() -> None:
    """Of what `make run` printed, the JVM's incubator warning (no setting silences it) is
    dropped from its standard error; the rest is never printed: log4j logs errors from the
    JVM's start (ceql's file, so no default profile), and the gateway's logger has the root's
    level (so Spark does not turn the console to WARN and say so)."""
    from ceql.spark.session import quiet

    assert [line for line in JVM_START if quiet.is_jvm_noise(line)] == [JVM_START[0]]
    props = quiet.LOG4J2.read_text(encoding="utf-8")
    root = re.search(r"^rootLogger\.level\s*=\s*(\S+)$", props, re.M)
    assert root and root.group(1).lower().endswith(":-error}")
    gateway = re.search(r"^logger\.(\w+)\.name\s*=\s*"
                        r"org\.apache\.spark\.api\.python\.PythonGatewayServer$", props, re.M)
    assert gateway
    assert re.search(rf"^logger\.{gateway.group(1)}\.level\s*=\s*{re.escape(root.group(1))}$",
                     props, re.M)
