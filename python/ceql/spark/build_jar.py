"""Build the JVM shim jar with the Scala compiler that pyspark ships (no sbt needed).

    python -m ceql.spark.build_jar [--force] [--src jvm-shim] [--out python/ceql/jars/...]

Compiles ``jvm-shim/src/main/scala`` against pyspark's ``jars/`` with Java 17 and zips the
classes into ``ceql/jars/ceql-shim.jar``. Skips the work when the jar is newer than every
source; ``build.sbt`` describes the same build for sbt users.
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

__all__ = ["build", "main"]

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


def up_to_date(src: Path = _DEFAULT_SRC, out: Path = _DEFAULT_OUT) -> bool:
    """True if ``out`` exists and is newer than every Scala source under ``src``."""
    sources = _sources(src)
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
    args = ap.parse_args(argv)
    print(build(args.src, args.out, force=args.force))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
