"""ceql.constants and the Scala generated from it (no Spark session needed): the committed
CeqlConstants.scala / CeqlConf.scala are current, the Scala sources spell no shared name
themselves, the settings are documented, the table functions' classes exist."""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from ceql import constants
from ceql.constants import (
    CONF_PREFIX,
    INTERNAL_FROM_ORDER_COLUMN,
    INTERNAL_PREFIX,
    INTERNAL_STREAM_COLUMN,
    INTERNAL_TYPE_COLUMN,
    TABLE_FUNCTIONS,
    TableFunction,
)
from ceql.shim import jar as build_jar
from ceql.spark import CONFS, conf
from ceql.spark.udtf.match_ceql import MatchCeql

ROOT = Path(__file__).resolve().parents[2]
SCALA = ROOT / "jvm-shim" / "src" / "main" / "scala"


def test_the_committed_generated_scala_is_current() -> None:
    stale = build_jar.stale_generated()
    assert not stale, (
        f"{', '.join(p.name for p in stale)} out of date with python/ceql/constants.py or "
        "python/ceql/spark/conf.py: run `python -m ceql.shim.jar` and commit the result")


def test_generated_files_say_so_and_cover_every_constant() -> None:
    texts = {p.name: t for p, t in build_jar.generated_sources().items()}
    for text in texts.values():
        assert text.startswith("// Generated from python/ceql/")
        assert "do not edit" in text.splitlines()[0]
    for name in constants.__all__:
        if name != "TableFunction":
            assert f"`{name}`" in texts["CeqlConstants.scala"], name
    for entry in CONFS:
        assert f"`{entry.key}`" in texts["CeqlConf.scala"]


# ---------------------------------------------------------------- no duplicated literals

def scala_literals(text: str) -> Iterator[tuple[int, str]]:
    """(line, contents) of each string literal in Scala ``text``, comments and chars skipped."""
    token = re.compile(r'//[^\n]*|/\*.*?\*/|\'(?:\\.|[^\'\\\n])\''  # comments, chars
                       r'|"""(.*?)"""|"((?:\\.|[^"\\\n])*)"', re.DOTALL)
    for m in token.finditer(text):
        body = m.group(1) if m.group(1) is not None else m.group(2)
        if body is not None:
            yield text.count("\n", 0, m.start()) + 1, body


def shared_values() -> dict[str, str]:
    """Each string that ceql.constants names (items of tuples and table functions too)."""
    out: dict[str, str] = {}
    values = [(n, getattr(constants, n)) for n in constants.__all__]
    for name, value in values:  # single names first: they are what to use
        if isinstance(value, str):
            out.setdefault(value, name)
    for name, value in values:
        for v in value if isinstance(value, tuple) else ():
            if isinstance(v, TableFunction):
                for field in ("name", "python_module", "python_class"):
                    out.setdefault(getattr(v, field), f"{name}[{v.name}].{field}")
            elif isinstance(v, str):
                out.setdefault(v, name)
    return out


def duplicates(text: str) -> list[str]:
    """Literals of ``text`` that spell a shared name: equal to one, or holding a distinctive one
    (one with a dot or an underscore, as keys, columns and class names have)."""
    values = shared_values()
    distinctive = [v for v in values if len(v) >= 6 and ("." in v or "_" in v)]
    found = []
    for line, lit in scala_literals(text):
        hit = values.get(lit) or next((values[v] for v in distinctive if v in lit), None)
        if hit:
            found.append(f"line {line}: {lit!r} (use CeqlConstants for {hit})")
    return found


def test_the_duplicate_finder_sees_literals_not_comments() -> None:
    sample = ('val a = "spark.ceql.python"\n// "MATCH_CEQL"\n/* "rows" */ val c = \'"\'\n'
              'val b = s"calls MATCH_CEQL(${x})"\nval d = "query"\nval e = "query => "\n')
    assert duplicates(sample) == [
        "line 1: 'spark.ceql.python' (use CeqlConstants for CONF_PYTHON)",
        "line 4: 'calls MATCH_CEQL(${x})' (use CeqlConstants for MATCH_CEQL)",
        "line 5: 'query' (use CeqlConstants for OPTION_QUERY)",
    ]


@pytest.mark.parametrize("path", sorted(SCALA.rglob("*.scala")), ids=lambda p: p.name)
def test_scala_sources_take_shared_names_from_the_constants(path: Path) -> None:
    if path in build_jar.generated_sources():
        return
    assert duplicates(path.read_text(encoding="utf-8")) == []


# ---------------------------------------------------------------- the constants themselves

def test_constants_are_consistent() -> None:
    assert all(c.startswith(INTERNAL_PREFIX) for c in (
        INTERNAL_STREAM_COLUMN, INTERNAL_FROM_ORDER_COLUMN, INTERNAL_TYPE_COLUMN))
    assert constants.TIME_UNITS == tuple(constants.TIME_UNIT_PER_SECOND)
    assert constants.DEFAULT_TIME_UNIT in constants.TIME_UNITS
    assert constants.DEFAULT_ROWS in constants.ROWS
    assert constants.WITHIN_UNITS == tuple(constants.WITHIN_UNIT_MILLIS)
    assert set(constants.MATCH_COLUMNS) < {v for k, v in vars(constants).items()
                                           if k.startswith("COLUMN_")}
    assert len(set(constants.__all__)) == len(constants.__all__)


def test_table_functions_name_importable_classes() -> None:
    assert [t.name for t in TABLE_FUNCTIONS] == [constants.MATCH_CEQL, constants.MATCH_SPASEQ,
                                                 constants.MATCH_RECOGNIZE_TABLE]
    for t in TABLE_FUNCTIONS:
        cls = getattr(importlib.import_module(t.python_module), t.python_class)
        assert callable(getattr(cls, "analyze", None)), t
    assert getattr(importlib.import_module(TABLE_FUNCTIONS[0].python_module),
                   TABLE_FUNCTIONS[0].python_class) is MatchCeql


# ---------------------------------------------------------------- settings

def test_every_setting_is_a_documented_constant() -> None:
    keys = {getattr(constants, n) for n in constants.__all__ if n.startswith("CONF_")}
    assert {e.key for e in CONFS} == keys - {CONF_PREFIX}
    assert all(e.key.startswith(CONF_PREFIX) and e.doc and e.since for e in CONFS)
    assert all(e.default is None or isinstance(e.default, e.type) for e in CONFS)


def readme_row(entry: conf.ConfEntry[bool] | conf.ConfEntry[str]) -> str:
    kind = "boolean" if entry.type is bool else "string"
    default = "(unset)" if entry.default is None else f"`{str(entry.default).lower()}`"
    return f"| `{entry.key}` | {kind} | {default} | {entry.doc} |"


def test_the_readme_documents_each_setting_as_defined() -> None:
    readme = (ROOT / "jvm-shim" / "README.md").read_text(encoding="utf-8")
    rows = [ln for ln in readme.splitlines() if ln.startswith(f"| `{CONF_PREFIX}")]
    assert rows == [readme_row(e) for e in CONFS]


def test_settings_parse_as_spark_reads_them() -> None:
    assert conf.PREFILTER_ENABLED.parse(" True ") is True
    assert conf.PARSER_ENABLED.parse("false") is False
    with pytest.raises(ValueError, match="should be boolean"):
        conf.PREFILTER_ENABLED.parse("yes")
    assert conf.PYTHON.parse("/usr/bin/python3") == "/usr/bin/python3"

    class Conf:
        def __init__(self) -> None:
            self.values: dict[str, str] = {}

        def get(self, key: str, default: str | None) -> str | None:
            return self.values.get(key, default)

        def set(self, key: str, value: str) -> None:
            self.values[key] = value

    class Session:
        conf = Conf()

    s = Session()
    assert conf.PREFILTER_ENABLED.get(s) is True and conf.PYTHON.get(s) is None
    conf.PREFILTER_ENABLED.set(s, False)
    assert s.conf.values == {conf.PREFILTER_ENABLED.key: "false"}
    assert conf.PREFILTER_ENABLED.get(s) is False
