"""The shim's build: build.sbt names the installed pyspark's versions; the jar is current; the
jar registers the settings and table functions Python defines."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from typing import Any

import pyspark
import pytest

from ceql.spark import EXTENSION_CLASS, build_jar

ROOT = Path(__file__).resolve().parents[2]


def _sbt_setting(pattern: str) -> str:
    found = re.search(pattern, (ROOT / "build.sbt").read_text())
    assert found, f"build.sbt has no {pattern}"
    return found.group(1)


def test_build_sbt_versions_are_the_installed_pysparks() -> None:
    jars = Path(pyspark.__file__).parent / "jars"
    scala = [p.name for p in jars.glob("scala-library-*.jar")]
    assert _sbt_setting(r'val sparkVersion = "([^"]+)"') == pyspark.__version__
    scala_version = _sbt_setting(r'scalaVersion := "([^"]+)"')
    assert scala == [f"scala-library-{scala_version}.jar"]
    assert _sbt_setting(r'"-release", "(\d+)"') == "17"


def test_the_jar_is_built_from_the_sources_and_holds_the_extension() -> None:
    jar = build_jar.build()
    assert build_jar.up_to_date()
    with zipfile.ZipFile(jar) as z:
        names = set(z.namelist())
    assert EXTENSION_CLASS.replace(".", "/") + ".class" in names
    assert "META-INF/MANIFEST.MF" in names


def test_local_sessions_start_the_worker_daemon_with_ceql_imported(spark: Any) -> None:
    from ceql.spark._session import DAEMON_CONF, DAEMON_MODULE

    assert spark.conf.get(DAEMON_CONF) == DAEMON_MODULE
    # workers forked from that daemon run ordinary Python functions as before
    assert spark.range(3).rdd.map(lambda r: r.id * 2).collect() == [0, 2, 4]


def test_configure_leaves_a_daemon_the_user_chose() -> None:
    from ceql.spark import configure
    from ceql.spark._session import DAEMON_CONF

    class Builder:
        def __init__(self) -> None:
            self._options: dict[str, str] = {DAEMON_CONF: "my.daemon"}

        def config(self, k: str, v: str) -> Builder:
            self._options[k] = v
            return self

    assert configure(Builder())._options[DAEMON_CONF] == "my.daemon"


def test_the_shim_registers_the_settings_as_defined(spark: Any) -> None:
    from ceql.spark import CONFS
    from ceql.spark.conf import PREFILTER_ENABLED

    listed = {r[0]: r for r in spark.sql("SET -v").collect()}
    entries = spark._jvm.org.apache.spark.sql.ceql.CeqlConf.All()
    jvm = {e.key(): e for e in (entries.apply(i) for i in range(entries.length()))}
    assert list(jvm) == [e.key for e in CONFS]
    for e in CONFS:
        assert (listed[e.key][2], listed[e.key][3]) == (e.doc, e.since)
        default = "<undefined>" if e.default is None else str(e.default).lower()
        assert jvm[e.key].defaultValueString() == default
    with pytest.raises(Exception, match="boolean"):
        spark.conf.set(PREFILTER_ENABLED.key, "maybe")
    assert PREFILTER_ENABLED.get(spark) is True


def test_the_shim_provides_the_table_functions_of_the_registry(spark: Any) -> None:
    from ceql.constants import TABLE_FUNCTIONS

    registry = spark._jvm.org.apache.spark.sql.ceql.CeqlTableFunctions.all()
    names = [registry.apply(i).name() for i in range(registry.length())]
    assert names == [t.name for t in TABLE_FUNCTIONS]
    syntax = spark._jvm.org.apache.spark.sql.ceql.CeqlSyntax.functions()
    assert [syntax.apply(i) for i in range(syntax.length())] == [
        t.name for t in TABLE_FUNCTIONS if t.inline_ceql]
