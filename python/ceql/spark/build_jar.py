"""Build the JVM shim jar with the Scala compiler that pyspark ships (no sbt needed).

    python -m ceql.spark.build_jar [--force] [--check] [--src jvm-shim] [--out ...]

First writes the generated Scala sources (``CeqlConstants.scala`` from :mod:`ceql.constants`,
``CeqlConf.scala`` from :mod:`ceql.spark.conf`) where they changed; they are committed, so that
``build.sbt`` builds the same jar without Python. Then compiles ``jvm-shim/src/main/scala``
against pyspark's ``jars/`` with Java 17 and zips the classes into ``ceql/jars/ceql-shim.jar``,
skipping that when the jar is newer than every source. ``--check`` only reports generated
files that are out of date (exit status 1).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from . import _scala

__all__ = ["build", "generate", "generated_sources", "main", "stale_generated", "up_to_date"]

_PACKAGE = Path(__file__).resolve().parent.parent          # python/ceql
_DEFAULT_SRC = _PACKAGE.parent.parent / "jvm-shim"           # repo/jvm-shim
_DEFAULT_OUT = _PACKAGE / "jars" / "ceql-shim.jar"
_MANIFEST = "Manifest-Version: 1.0\nCreated-By: ceql.spark.build_jar\n\n"


def _spark_jars() -> Path:
    import pyspark

    jars = Path(pyspark.__file__).resolve().parent / "jars"
    if not any(jars.glob("scala-compiler-*.jar")):
        raise SystemExit(f"build_jar: no scala-compiler jar in {jars}; install pyspark 4.x.")
    return jars


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise SystemExit("build_jar: no `java` on PATH and no JAVA_HOME; install Java 17.")
    return found


def _sources(src: Path) -> list[Path]:
    return sorted((src / "src" / "main" / "scala").rglob("*.scala"))


def generated_sources(src: Path = _DEFAULT_SRC) -> dict[Path, str]:
    """Each generated Scala source under ``src`` and the text it must hold."""
    where = src / "src" / "main" / "scala" / _scala.PACKAGE_DIR
    return {where / name: text for name, text in _scala.render().items()}


def stale_generated(src: Path = _DEFAULT_SRC) -> list[Path]:
    """The generated sources under ``src`` that are missing or differ from their source."""
    return [p for p, text in generated_sources(src).items()
            if not p.is_file() or p.read_text(encoding="utf-8") != text]


def generate(src: Path = _DEFAULT_SRC) -> list[Path]:
    """Write the generated sources that are stale (others keep their time); return those."""
    stale = stale_generated(src)
    texts = generated_sources(src)
    for p in stale:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(texts[p], encoding="utf-8")
    return stale


def up_to_date(src: Path = _DEFAULT_SRC, out: Path = _DEFAULT_OUT) -> bool:
    """True if ``out`` exists, is newer than every Scala source under ``src``, and those
    include current generated sources."""
    sources = _sources(src)
    if sources and stale_generated(src):
        return False
    if not out.is_file() or not sources:
        return out.is_file()
    built = out.stat().st_mtime
    return all(s.stat().st_mtime <= built for s in sources)


def build(src: Path = _DEFAULT_SRC, out: Path = _DEFAULT_OUT, *, force: bool = False) -> Path:
    """Compile the shim and write the jar; return its path."""
    sources = _sources(src)
    if not sources:
        if out.is_file():
            return out  # an installed package: the jar ships prebuilt
        raise SystemExit(f"build_jar: no Scala sources under {src / 'src/main/scala'}.")
    generate(src)
    sources = _sources(src)
    if not force and up_to_date(src, out):
        return out
    jars = _spark_jars()
    with tempfile.TemporaryDirectory(prefix="ceql-shim-") as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        cmd = [_java(), "-cp", str(jars / "*"), "scala.tools.nsc.Main", "-usejavacp",
               "-release", "17", "-deprecation", "-feature", "-Werror",
               "-d", str(classes), *map(str, sources)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            sys.stderr.write(done.stdout + done.stderr)
            raise SystemExit(f"build_jar: scalac failed (exit {done.returncode}).")
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_suffix(".jar.tmp")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr("META-INF/MANIFEST.MF", _MANIFEST)
            for f in sorted(classes.rglob("*")):
                if f.is_file():
                    jar.write(f, f.relative_to(classes).as_posix())
        partial.replace(out)
    return out


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", type=Path, default=_DEFAULT_SRC, help="the jvm-shim directory")
    ap.add_argument("--out", type=Path, default=_DEFAULT_OUT, help="the jar to write")
    ap.add_argument("--force", action="store_true", help="rebuild even if up to date")
    ap.add_argument("--check", action="store_true",
                    help="only list the generated sources that are out of date (exit 1 if any)")
    args = ap.parse_args(argv)
    if args.check:
        stale = stale_generated(args.src)
        for p in stale:
            print(f"out of date: {p} (run python -m ceql.spark.build_jar)", file=sys.stderr)
        return 1 if stale else 0
    print(build(args.src, args.out, force=args.force))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
