"""The shim's build: build.sbt names the installed pyspark's versions; the jar is current; the
jar registers the settings and table functions Python defines; the link check finds what another
Spark lacks (tests/e2e/test_spark_lines.py runs it against each supported line)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pyspark
import pytest

from ceql.shim import jar as build_jar
from ceql.spark import EXTENSION_CLASS

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
    from ceql.spark.session.local import DAEMON_CONF, DAEMON_MODULE

    assert spark.conf.get(DAEMON_CONF) == DAEMON_MODULE
    # workers forked from that daemon run ordinary Python functions as before
    assert spark.range(3).rdd.map(lambda r: r.id * 2).collect() == [0, 2, 4]


def test_configure_leaves_a_daemon_the_user_chose() -> None:
    from ceql.spark import configure
    from ceql.spark.session.local import DAEMON_CONF

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


def _jar(classes: Path, package: str, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w") as z:
        for f in sorted((classes / package).glob("*.class")):
            z.write(f, f.relative_to(classes).as_posix())
    return out


def _javac(sources: dict[str, str], where: Path) -> Path:
    javac = shutil.which("javac")
    assert javac, "no javac on PATH (a JDK 17 is needed)"
    for name, text in sources.items():
        (where / "src" / name).parent.mkdir(parents=True, exist_ok=True)
        (where / "src" / name).write_text(text)
    classes = where / "classes"
    done = subprocess.run([javac, "-d", str(classes), *(str(where / "src" / n) for n in sources)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return classes


def test_missing_links_lists_what_another_spark_lacks(tmp_path: Path) -> None:
    from ceql.shim.jar import Link, missing_links

    # a "Spark" of two versions and a "shim" compiled against the first
    old = {"p/Api.java": "package p; public interface Api { int a(); }",
           "p/Util.java": "package p; public class Util { public static int old() { return 1; } }",
           "p/Gone.java": "package p; public class Gone { }",
           "x/Impl.java": "package x; public class Impl implements p.Api { "
                          "public int a() { new p.Gone(); return p.Util.old(); } }"}
    new = {"p/Api.java": "package p; public interface Api { int a(); int b(); }",
           "p/Util.java": "package p; public class Util { }"}
    built = _javac(old, tmp_path / "old")
    shim = _jar(built, "x", tmp_path / "shim.jar")
    _jar(built, "p", tmp_path / "spark-old" / "spark.jar")
    _jar(_javac(new, tmp_path / "new"), "p", tmp_path / "spark-new" / "spark.jar")
    assert missing_links(tmp_path / "spark-old", shim) == []
    assert missing_links(tmp_path / "spark-new", shim) == [
        Link("x.Impl", "p.Api", "b", "()I", abstract=True),
        Link("x.Impl", "p.Gone"),
        Link("x.Impl", "p.Gone", "<init>", "()V"),
        Link("x.Impl", "p.Util", "old", "()I"),
    ]


def test_jar_path_from_a_zip_says_to_install_or_pass_the_jar(tmp_path: Path) -> None:
    """ceql imported from an archive (``--py-files``) cannot hand the JVM its jar: the
    message says so, not that the jar needs building."""
    archive = tmp_path / "ceql.zip"
    package = ROOT / "python"
    with zipfile.ZipFile(archive, "w") as z:
        for p in (package / "ceql").rglob("*.py"):
            z.write(p, p.relative_to(package))
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); import ceql.spark\n"
             "try:\n    ceql.spark.jar_path()\nexcept ceql.CeqlError as e:\n    print(e)")
    done = subprocess.run([sys.executable, "-c", probe, str(archive)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.stdout == (
        f"ceql is imported from the archive {archive}, so its shim jar is not a file the JVM "
        "can load; install the wheel (pip install ceql) where the driver runs, or give Spark "
        "the jar yourself (--jars ceql-shim.jar, from an installed ceql's "
        "ceql.spark.jar_path()).\n"), done.stderr
