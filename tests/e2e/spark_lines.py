"""The Spark lines ceql supports, each in a venv of its own that `make spark-lines` fills with
that pyspark and ceql's other dependencies (not ceql): the wheel is installed there with pip and
checked from a temporary folder, away from the repository (tests/e2e/test_spark_lines.py and
tests/e2e/test_wheel.py)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

import ceql
from ceql.spark import match_ids

ROOT = Path(__file__).resolve().parents[2]
#: `make spark-lines` makes one venv per pyspark version here (the Makefile's SPARK_LINES)
LINES = ROOT / ".venv" / "spark-lines"
CHECK = Path(__file__).with_name("spark_line_check.py")

QUERY = ("SELECT * FROM s WHERE S AS a ; B AS b FILTER b[price > a.price] "
         "PARTITION BY [name] WITHIN 8 SECONDS")
VARIABLES = ("a", "b")

#: (match_id, name, ((variable, event seqs), ...)) per match
Found = list[tuple[int, str, tuple[tuple[str, tuple[int, ...]], ...]]]

_wheels: dict[Path, Path] = {}


def built_wheel(factory: pytest.TempPathFactory) -> Path:
    """dist/ceql-*.whl of the repository with the current shim jar, built once per session."""
    base = factory.getbasetemp()
    if base not in _wheels:
        from ceql.shim import jar as build_jar

        build_jar.build()
        out = factory.mktemp("dist")
        r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
                            "--wheel-dir", str(out), str(ROOT)],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        (_wheels[base],) = out.glob("ceql-*.whl")
    return _wheels[base]


def spark_range() -> SpecifierSet:
    """The pyspark versions the ``spark`` extra accepts."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    (pyspark,) = [r for r in map(Requirement, extras["spark"]) if r.name == "pyspark"]
    return pyspark.specifier


def newest_pin() -> str:
    """The pyspark the ``test`` extra pins (the one .venv runs)."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    (pyspark,) = [r for r in map(Requirement, extras["test"]) if r.name == "pyspark"]
    (pin,) = pyspark.specifier
    assert pin.operator == "=="
    return pin.version


def line_venv(version: str) -> Path:
    """The venv of pyspark ``version``; fails with what to run when `make` has not made it."""
    python = LINES / version / "bin" / "python"
    assert python.is_file(), (
        f"no venv with pyspark {version} at {python.parent.parent}: run `make spark-lines`")
    return python.parent.parent


def line_versions() -> list[str]:
    """The pyspark versions of the venvs `make spark-lines` made, oldest first."""
    return sorted((p.name for p in LINES.glob("*") if (p / "bin" / "python").is_file()),
                  key=Version)


def clean_env() -> dict[str, str]:
    """This environment without the variables that would lead a Python or Spark elsewhere
    (PYTHONPATH, PYSPARK_PYTHON set by the Spark tests of this process, SPARK_HOME, …)."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("PYTHON", "PYSPARK", "SPARK", "VIRTUAL_ENV"))}


def installed_pyspark(venv: Path) -> str:
    r = subprocess.run([str(venv / "bin" / "python"), "-c",
                        "import importlib.metadata as m; print(m.version('pyspark'))"],
                       env=clean_env(), cwd=venv, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def install_wheel(venv: Path, wheel: Path) -> None:
    """``pip install 'ceql-….whl[spark]'`` into ``venv`` (ceql of an earlier run removed
    first), offline: everything else must be there already, pyspark included."""
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--python",
           str(venv / "bin" / "python")]
    r = subprocess.run([*pip, "uninstall", "--yes", "--quiet", "ceql"], env=clean_env(),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([*pip, "install", "--no-index", f"{wheel}[spark]"], env=clean_env(),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr


def events(n: int = 60, seed: int = 3) -> list[dict[str, Any]]:
    """Sales, buys and cancels of two names at increasing whole seconds (no ties: ORDER BY ts
    alone fixes the order)."""
    rnd = random.Random(seed)
    out, t = [], 0
    for i in range(n):
        t += rnd.choice([1, 1, 2])
        out.append({"seq": i, "type": rnd.choice("SSBBC"), "name": rnd.choice("AB"),
                    "price": rnd.randint(1, 9), "ts": t})
    return out


def engine_answer(rows: list[dict[str, Any]]) -> Found:
    """What the engine (of this repository) finds, per name, in the shape of MATCH_CEQL's."""
    q = ceql.compile(QUERY)
    out: Found = []
    for name in sorted({r["name"] for r in rows}):
        group = sorted((r for r in rows if r["name"] == name), key=lambda r: r["ts"])
        ms = list(q.run(group, time="ts"))
        for m, mid in zip(ms, match_ids((name,), ms, group), strict=True):
            bound = tuple(sorted((v, tuple(group[p]["seq"] for p in m.variables[v]))
                                 for v in VARIABLES))
            out.append((mid, name, bound))
    return sorted(out)


def as_found(rows: list[list[Any]]) -> Found:
    """The check script's JSON rows in the shape of :func:`engine_answer`."""
    return sorted((i, name, tuple((v, tuple(seqs)) for v, seqs in bound))
                  for i, name, bound in rows)


def run_check(venv: Path, tmp: Path, rows: list[dict[str, Any]], *,
              every_form: bool) -> dict[str, Any]:
    """Runs spark_line_check.py with the venv's Python in ``tmp`` (its source passed with -c:
    neither the repository nor this folder is on its path); returns its JSON report."""
    (tmp / "rows.json").write_text(json.dumps(rows))
    args = [str(venv / "bin" / "python"), "-c", CHECK.read_text(), QUERY, str(ROOT)]
    r = subprocess.run([*args, *(["--all"] if every_form else [])], env=clean_env(), cwd=tmp,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-6000:]
    report: dict[str, Any] = json.loads(r.stdout.strip().splitlines()[-1])
    return report


def check_line(version: str, wheel: Path, tmp: Path, *, every_form: bool) -> None:
    """Installs ``wheel`` into the venv of pyspark ``version`` and checks there that pyspark
    stayed, that MATCH_CEQL finds what this repository's engine finds (written inline; with
    ``every_form`` also with a TABLE argument, through the DataFrame API and match_stream), and
    that nothing came from the repository."""
    venv = line_venv(version)
    assert installed_pyspark(venv) == version
    install_wheel(venv, wheel)
    assert installed_pyspark(venv) == version, "pip replaced the installed pyspark"
    rows = events()
    expected = engine_answer(rows)
    assert len(expected) >= 5
    report = run_check(venv, tmp, rows, every_form=every_form)
    assert report["pyspark"] == version
    forms = ("inline", "table", "dataframe", "stream") if every_form else ("inline",)
    assert [f for f in forms if f in report] == list(forms)
    for form in forms:
        assert as_found(report[form]) == expected, (form, report[form], expected)
    for where in ("pyspark_file", "ceql_file", "jar", "worker_ceql_file"):
        assert Path(report[where]).resolve().is_relative_to(venv.resolve()), (where, report)
    assert report["from_repo"] == [], report["from_repo"]
    assert report["sys_path_repo"] == [], report["sys_path_repo"]
