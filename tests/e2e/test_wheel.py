"""The built wheel is complete: grammar (a real file), shim jar and Spark's log4j configuration
inside; it runs installed, and `pip install ceql-….whl` into a venv that has the newest pyspark
already leaves that pyspark as it is and gives MATCH_CEQL, reading nothing from the repository
(the older Spark lines: test_spark_lines.py)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import sysconfig
import urllib.parse
import zipfile
from pathlib import Path

import pyarrow.csv as pacsv
import pytest
from spark_lines import built_wheel, check_line, newest_pin

import ceql

ROOT = Path(__file__).resolve().parents[2]
JAR = ROOT / "python" / "ceql" / "jars" / "ceql-shim.jar"
LOG4J2 = ROOT / "python" / "ceql" / "spark" / "log4j2.properties"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    built = built_wheel(tmp_path_factory)  # with the current shim (`make wheel` checks it too)
    assert JAR.is_file()
    return built


@pytest.mark.e2e
def test_wheel_holds_the_grammar_and_the_jar(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        infos = {i.filename: i for i in z.infolist()}
        grammar = infos["ceql/frontends/ceql/grammar/ceql.lark"]
        assert not stat.S_ISLNK(grammar.external_attr >> 16)  # a file, not the repo's symlink
        assert z.read(grammar) == (ROOT / "sql_grammar" / "ceql.lark").read_bytes()
        assert "ceql/cli/__init__.py" in infos and "ceql/__main__.py" in infos
        assert "ceql/py.typed" in infos
        entry_points = next(n for n in infos if n.endswith(".dist-info/entry_points.txt"))
        assert "ceql = ceql.cli:main" in z.read(entry_points).decode()
        assert z.read("ceql/jars/ceql-shim.jar") == JAR.read_bytes()
        assert z.read("ceql/spark/log4j2.properties") == LOG4J2.read_bytes()


@pytest.mark.e2e
def test_installed_wheel_runs(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    r = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                        "--no-deps", "--quiet", str(wheel)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    # dependencies (lark, pyarrow, numpy) only from this environment; ceql from the wheel
    env = {**os.environ, "PYTHONPATH": sysconfig.get_paths()["purelib"]}
    env.pop("PYTHONHOME", None)
    where = subprocess.run([str(python), "-c", "import ceql; print(ceql.__file__)"], env=env,
                           cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).resolve().is_relative_to(venv.resolve())
    query = ROOT / "examples" / "queries" / "q7.ceql"
    r = subprocess.run([str(python), "-m", "ceql", "explain", str(query)], env=env,
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ceql.explain(query.read_text()).rstrip("\n") + "\n"
    r = subprocess.run([str(venv / "bin" / "ceql"), "run", str(query), "--input",
                        str(ROOT / "examples" / "stock.csv"), "--time", "ts", "--time-unit",
                        "us", "--quiet"], env=env, cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    table = pacsv.read_csv(ROOT / "examples" / "stock.csv")
    expected = ceql.compile(query.read_text()).evaluator(time="ts", time_unit="us").feed(table)
    assert [json.loads(line) for line in r.stdout.splitlines()] == [m.to_dict()
                                                                    for m in expected]
    jar = subprocess.run([str(python), "-c", "import ceql.spark; "
                          "print(ceql.spark.jar_path())"], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert jar.returncode == 0, jar.stderr
    assert Path(jar.stdout.strip()).resolve().is_relative_to(venv.resolve())
    # the log4j configuration local_session gives Spark's JVM, from the installed package
    log4j = subprocess.run([str(python), "-c", "from ceql.spark.session import quiet; "
                            "print(quiet.java_options({}, {'SPARK_CONF_DIR': '.'}))"],
                           env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert log4j.returncode == 0, log4j.stderr
    option = log4j.stdout.strip()
    assert option.startswith("-Dlog4j2.configurationFile=file:"), option
    uri = urllib.parse.urlparse(option.split("=", 1)[1])
    installed = Path(urllib.parse.unquote(uri.path))
    assert installed.resolve().is_relative_to(venv.resolve())
    assert installed.read_bytes() == LOG4J2.read_bytes()


@pytest.mark.e2e
def test_pip_install_next_to_the_newest_pyspark(wheel: Path, tmp_path: Path) -> None:
    check_line(newest_pin(), wheel, tmp_path, every_form=False)
