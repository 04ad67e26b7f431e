"""The shim's generated Scala: ``CeqlConstants`` from :mod:`ceql.constants`, ``CeqlConf`` from
:mod:`ceql.spark.conf`.

The files are written by ``python -m ceql.shim.jar`` before it compiles, and committed so
that ``build.sbt`` builds without Python; a test compares them with :func:`render`.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import fields
from typing import Any

from ceql import constants
from ceql.constants import TableFunction
from ceql.spark import conf

__all__ = ["PACKAGE_DIR", "render", "render_conf", "render_constants", "scala_name", "scala_string"]

#: Where the generated files go, under ``jvm-shim/src/main/scala``.
PACKAGE_DIR = "org/apache/spark/sql/ceql"
_PACKAGE = PACKAGE_DIR.replace("/", ".")
_WIDTH = 100


def scala_name(python_name: str) -> str:
    """``CONF_PARSER_ENABLED`` → ``ConfParserEnabled``; ``python_module`` → ``pythonModule``."""
    words = python_name.lower().split("_")
    camel = "".join(w.capitalize() for w in words)
    return camel if python_name.isupper() else words[0] + camel[len(words[0]):]


def scala_string(s: str) -> str:
    """A Scala string literal holding ``s``."""
    out = []
    for c in s:
        if c in '"\\':
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def _wrapped_string(s: str, indent: int) -> str:
    """``s`` as a literal, or a ``+`` chain of literals of at most ``_WIDTH`` columns."""
    room = _WIDTH - indent - 4
    if len(scala_string(s)) <= room:
        return scala_string(s)
    pieces: list[str] = []
    current = ""
    for word in re.findall(r"\S+\s*", s):
        if current and len(scala_string(current + word)) > room:
            pieces.append(current)
            current = ""
        current += word
    pieces.append(current)
    return (" +\n" + " " * indent).join(scala_string(p) for p in pieces)


def _layout(module: Any) -> list[tuple[str, str]]:
    """The module's sections and assignments in source order, each with its ``#:`` comment:
    ``("section", title)`` or ``(name, doc)``."""
    out: list[tuple[str, str]] = []
    pending: list[str] = []
    for line in inspect.getsource(module).splitlines():
        if line.startswith("#:"):
            pending.append(line[2:].strip())
            continue
        section = re.match(r"# -+ (.+)$", line)
        m = re.match(r"([A-Z][A-Z0-9_]*)\s*[:=]", line)
        if section:
            out.append(("section", section.group(1)))
        elif m:
            out.append((m.group(1), " ".join(pending)))
        pending = []
    return out


def _scaladoc(text: str, indent: str) -> list[str]:
    """``text`` as a Scaladoc comment (``*/`` defused): one line, or wrapped to ``_WIDTH``."""
    text = " ".join(text.replace("*/", "*&#47;").split())
    if len(indent) + len(text) + 7 <= _WIDTH:
        return [f"{indent}/** {text} */"]
    lines, current = [f"{indent}/**"], f"{indent} *"
    for w in text.split():
        if len(current) + 1 + len(w) > _WIDTH:
            lines.append(current)
            current = f"{indent} *"
        current += " " + w
    return [*lines, current, f"{indent} */"]


def _items(values: list[str], open_: str, indent: int, head: str = "") -> str:
    """``head`` + ``open_(a, b, ...)`` on one line, or one item a line when that is too long."""
    one = f"{head}{open_}({', '.join(values)})"
    if indent + len(one) <= _WIDTH and "\n" not in one:
        return one
    inner = " " * (indent + 2)
    return f"{head}{open_}(\n{inner}" + f",\n{inner}".join(values) + f"\n{' ' * indent})"


def _table_function(t: TableFunction, indent: int) -> str:
    args = []
    for f in fields(t):
        v = getattr(t, f.name)
        lit = ("true" if v else "false") if isinstance(v, bool) else _wrapped_string(
            v, indent + 2 + len(scala_name(f.name)) + 3)
        args.append(f"{scala_name(f.name)} = {lit}")
    inner = " " * (indent + 2)
    return "TableFunction(\n" + inner + f",\n{inner}".join(args) + f"\n{' ' * indent})"


def _constant(name: str, value: Any) -> str:
    """The Scala definition of one constant (raises for a value with no Scala form)."""
    sname = scala_name(name)
    if isinstance(value, str):
        head = f"  final val {sname} = "
        return head + _wrapped_string(value, len(head))
    if isinstance(value, bool):
        return f"  final val {sname} = {'true' if value else 'false'}"
    if isinstance(value, int):
        return f"  final val {sname} = {value}L"
    if isinstance(value, tuple) and all(isinstance(v, str) for v in value):
        return _items([scala_string(v) for v in value], "Seq", 2,
                      f"  val {sname}: Seq[String] = ")
    if isinstance(value, tuple) and all(isinstance(v, TableFunction) for v in value):
        return _items([_table_function(v, 4) for v in value], "Seq", 2,
                      f"  val {sname}: Seq[TableFunction] = ")
    if isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, int)
                                       and not isinstance(v, bool) for k, v in value.items()):
        return _items([f"{scala_string(k)} -> {v}L" for k, v in value.items()], "ListMap", 2,
                      f"  val {sname}: ListMap[String, Long] = ")
    raise TypeError(f"ceql.constants.{name} = {value!r} has no Scala form")


def _header(source: str) -> list[str]:
    return [f"// Generated from {source} by `python -m ceql.shim.jar`; do not edit.",
            f"package {_PACKAGE}", ""]


def render_constants() -> str:
    """The text of ``CeqlConstants.scala``: every name of ``ceql.constants.__all__``."""
    lines = [*_header("python/ceql/constants.py"),
             "import scala.collection.immutable.ListMap", "",
             *_scaladoc("The names ceql shares between its Python code and this shim "
                        "(python/ceql/constants.py).", ""),
             "object CeqlConstants {", ""]
    lines += _scaladoc(inspect.getdoc(TableFunction) or "", "  ")
    params = [f"{scala_name(f.name)}: {'Boolean' if f.type == 'bool' else 'String'}"
              for f in fields(TableFunction)]
    lines.append(_items(params, "final case class TableFunction", 2, "  "))
    exported = set(constants.__all__)
    for name, doc in _layout(constants):
        if name == "section":
            lines += ["", f"  // {'-' * 64} {doc}"]
        elif name in exported:
            lines += ["", *_scaladoc(f"`{name}`{': ' + doc if doc else '.'}", "  "),
                      _constant(name, getattr(constants, name))]
    lines += ["}", ""]
    return "\n".join(lines)


def _conf_names() -> dict[int, str]:
    return {id(v): k for k, v in vars(conf).items() if isinstance(v, conf.ConfEntry)}


def render_conf() -> str:
    """The text of ``CeqlConf.scala``."""
    names = _conf_names()
    keys = {v: k for k, v in vars(constants).items() if k in constants.__all__
            and isinstance(v, str)}
    typed: dict[type, tuple[str, str, Callable[[Any], str]]] = {
        bool: ("Boolean", "booleanConf", lambda v: "true" if v else "false"),
        str: ("String", "stringConf", scala_string),
    }
    lines = [*_header("python/ceql/spark/conf.py"),
             "import org.apache.spark.internal.config.{ConfigEntry, OptionalConfigEntry}",
             "import org.apache.spark.sql.internal.SQLConf", "",
             *_scaladoc("ceql's Spark settings, registered with Spark's SQLConf (SET -v lists "
                        "them); jvm-shim/README.md documents them.", ""),
             "object CeqlConf {"]
    for e in conf.CONFS:
        if e.key not in keys:
            raise ValueError(f"the setting {e.key} is not a constant of ceql.constants")
        scala_type, builder, literal = typed[e.type]
        entry = (f"ConfigEntry[{scala_type}]" if e.default is not None
                 else f"OptionalConfigEntry[{scala_type}]")
        create = (f".createWithDefault({literal(e.default)})" if e.default is not None
                  else ".createOptional")
        lines += ["", *_scaladoc(f"`{e.key}`: {e.doc}", "  "),
                  f"  val {scala_name(names[id(e)])}: {entry} =",
                  f"    SQLConf.buildConf(CeqlConstants.{scala_name(keys[e.key])})",
                  f"      .doc({_wrapped_string(e.doc, 11)})",
                  f"      .version({scala_string(e.since)})",
                  f"      .{builder}",
                  f"      {create}"]
    all_ = [scala_name(names[id(e)]) for e in conf.CONFS]
    lines += ["", *_scaladoc("Every setting.", "  "),
              _items(all_, "Seq", 2, "  val All: Seq[ConfigEntry[_]] = "), "",
              *_scaladoc("Registers the settings with SQLConf (done once, when this object is "
                         "first used), so that SET -v lists them and values are checked.", "  "),
              "  def register(): Unit = ()", "}", ""]
    return "\n".join(lines)


def render() -> dict[str, str]:
    """Each generated file's name (in :data:`PACKAGE_DIR`) and text."""
    return {"CeqlConstants.scala": render_constants(), "CeqlConf.scala": render_conf()}
