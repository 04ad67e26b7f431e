"""Build the JVM shim jar with the Scala compiler that pyspark ships (no sbt needed).

    python -m ceql.shim.jar [--force] [--check] [--src jvm-shim] [--out ...]
    python -m ceql.shim.jar --links PYSPARK_JARS_DIR [--out ...]

First writes the generated Scala sources (``CeqlConstants.scala`` from :mod:`ceql.constants`,
``CeqlConf.scala`` from :mod:`ceql.spark.conf`) where they changed; they are committed, so that
``build.sbt`` builds the same jar without Python. Then compiles ``jvm-shim/src/main/scala``
against pyspark's ``jars/`` with Java 17 and zips the classes into ``ceql/jars/ceql-shim.jar``,
skipping that when the jar is newer than every source. ``--check`` only reports generated
files that are out of date (exit status 1).

One jar, compiled against the newest supported pyspark, serves every supported Spark line.
``--links`` checks that against another pyspark's ``jars/`` without starting Spark: it lists
what the jar uses that those jars lack (see :func:`missing_links`; exit status 1 if anything).
"""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import NamedTuple

from ceql.shim import scala as _scala

__all__ = ["Link", "build", "generate", "generated_sources", "main", "missing_links",
           "stale_generated", "up_to_date"]

_PACKAGE = Path(__file__).resolve().parent.parent          # python/ceql
_DEFAULT_SRC = _PACKAGE.parent.parent / "jvm-shim"           # repo/jvm-shim
_DEFAULT_OUT = _PACKAGE / "jars" / "ceql-shim.jar"
_MANIFEST = "Manifest-Version: 1.0\nCreated-By: ceql.shim.jar\n\n"


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


class Link(NamedTuple):
    """Something the shim's class ``user`` needs that a Spark's jars lack: the class ``owner``
    (``member`` empty), or its field or method ``member`` of type ``descriptor``; ``abstract``:
    ``owner`` declares that method abstract and ``user`` does not implement it."""

    user: str
    owner: str
    member: str = ""
    descriptor: str = ""
    abstract: bool = False

    def __str__(self) -> str:
        what = f"{self.owner}.{self.member}{self.descriptor}" if self.member else self.owner
        return f"{self.user}: {'does not implement ' if self.abstract else 'uses '}{what}"


# Class files (JVM specification, chapter 4): just enough to see what a class declares and uses.
_ACC_STATIC, _ACC_INTERFACE, _ACC_ABSTRACT = 0x0008, 0x0200, 0x0400
_CLASS, _FIELD, _METHOD, _INTERFACE_METHOD = 7, 9, 10, 11
#: bytes after the tag of each kind of constant-pool entry (1, UTF-8: a length, then that much)
_POOL_SIZES = {3: 4, 4: 4, 5: 8, 6: 8, 7: 2, 8: 2, 9: 4, 10: 4, 11: 4, 12: 4, 15: 3, 16: 2,
               17: 4, 18: 4, 19: 2, 20: 2}
_JDK = ("java/", "javax/", "jdk/", "sun/")


class _ClassFile(NamedTuple):
    name: str
    flags: int
    supers: tuple[str, ...]                   # the superclass, then the interfaces
    members: dict[tuple[str, str], int]       # (name, descriptor) → access flags
    classes: frozenset[str]                   # the classes its constant pool names
    refs: frozenset[tuple[str, str, str]]     # the fields and methods it uses: (owner, name, type)


def _read_class(data: bytes) -> _ClassFile:
    if data[:4] != b"\xca\xfe\xba\xbe":
        raise ValueError("not a class file")
    (count,) = struct.unpack_from(">H", data, 8)
    text: dict[int, str] = {}
    pool: dict[int, tuple[int, int, int]] = {}  # index → (tag, first index, second index)
    i, pos = 1, 10
    while i < count:
        tag = data[pos]
        if tag == 1:
            (n,) = struct.unpack_from(">H", data, pos + 1)
            text[i] = data[pos + 3:pos + 3 + n].decode("utf-8", "replace")
            pos += 3 + n
        else:
            if tag == _CLASS:
                pool[i] = (tag, struct.unpack_from(">H", data, pos + 1)[0], 0)
            elif tag in (_FIELD, _METHOD, _INTERFACE_METHOD, 12):
                pool[i] = (tag, *struct.unpack_from(">HH", data, pos + 1))
            pos += 1 + _POOL_SIZES[tag]
        i += 2 if tag in (5, 6) else 1  # longs and doubles take two entries

    def class_at(k: int) -> str:
        return text[pool[k][1]]

    flags, this, superclass, n_interfaces = struct.unpack_from(">HHHH", data, pos)
    pos += 8
    supers = [class_at(superclass)] if superclass else []
    for _ in range(n_interfaces):
        supers.append(class_at(struct.unpack_from(">H", data, pos)[0]))
        pos += 2
    members: dict[tuple[str, str], int] = {}
    for _ in range(2):  # fields, then methods
        (n,) = struct.unpack_from(">H", data, pos)
        pos += 2
        for _ in range(n):
            access, name, descriptor, n_attributes = struct.unpack_from(">HHHH", data, pos)
            pos += 8
            members[text[name], text[descriptor]] = access
            for _ in range(n_attributes):
                pos += 6 + struct.unpack_from(">I", data, pos + 2)[0]
    refs = frozenset((class_at(a), text[pool[b][1]], text[pool[b][2]])
                     for tag, a, b in pool.values()
                     if tag in (_FIELD, _METHOD, _INTERFACE_METHOD))
    named = (text[a].lstrip("[") for tag, a, _ in pool.values() if tag == _CLASS)
    classes = frozenset(c[1:-1] if c.startswith("L") else c for c in named
                        if c.startswith("L") or "/" in c or len(c) > 1)
    return _ClassFile(class_at(this), flags, tuple(supers), members, classes, refs)


class _ClassPath:
    """Classes by name from jars (and the JDK's java.base module), read when first asked for."""

    def __init__(self, archives: list[tuple[zipfile.ZipFile, str]]) -> None:
        self._where: dict[str, tuple[zipfile.ZipFile, str]] = {}
        for archive, prefix in archives:
            for entry in archive.namelist():
                if entry.startswith(prefix) and entry.endswith(".class"):
                    self._where.setdefault(entry[len(prefix):-len(".class")], (archive, entry))
        self._read: dict[str, _ClassFile | None] = {}

    def get(self, name: str) -> _ClassFile | None:
        if name not in self._read:
            found = self._where.get(name)
            self._read[name] = None if found is None else _read_class(found[0].read(found[1]))
        return self._read[name]

    def ancestry(self, name: str) -> list[_ClassFile]:
        """The class and every supertype of it that is found, the class first."""
        out: list[_ClassFile] = []
        seen: set[str] = set()
        todo = [name]
        while todo:
            n = todo.pop(0)
            c = None if n in seen else self.get(n)
            seen.add(n)
            if c is not None:
                out.append(c)
                todo.extend(c.supers)
        return out


def _java_base() -> Path:
    home = Path(_java()).resolve().parent.parent
    jmod = home / "jmods" / "java.base.jmod"
    if not jmod.is_file():
        raise SystemExit(f"build_jar: no {jmod}; the link check reads the JDK's classes from "
                         "it (install a full JDK 17).")
    return jmod


def missing_links(spark_jars: Path, jar: Path = _DEFAULT_OUT) -> list[Link]:
    """What the shim ``jar`` needs that the Spark of ``spark_jars`` (a pyspark's ``jars/``)
    lacks, without starting Spark: the classes it names, the fields and methods it uses
    (looked up in their class and its supertypes, as the JVM resolves them) and the abstract
    methods of its classes' Spark supertypes that it does not implement. Nothing: the jar
    links against that Spark. The JDK's own classes are not checked (Java 17 for every line).
    """
    with zipfile.ZipFile(jar) as shim_zip, zipfile.ZipFile(_java_base()) as jdk_zip:
        spark_zips = [zipfile.ZipFile(p) for p in sorted(spark_jars.glob("*.jar"))]
        try:
            path = _ClassPath([(shim_zip, ""), *((z, "") for z in spark_zips),
                               (jdk_zip, "classes/")])
            return _links(path, [n[:-len(".class")] for n in shim_zip.namelist()
                                 if n.endswith(".class")])
        finally:
            for z in spark_zips:
                z.close()


def _links(path: _ClassPath, shim: list[str]) -> list[Link]:
    own = set(shim)

    def dotted(name: str) -> str:
        return name.replace("/", ".")

    missing: set[Link] = set()
    for name in shim:
        c = path.get(name)
        assert c is not None
        user = dotted(name)
        for used in c.classes - own:
            if not used.startswith(_JDK) and path.get(used) is None:
                missing.add(Link(user, dotted(used)))
        for owner, member, descriptor in c.refs:
            if owner in own or owner.startswith((*_JDK, "[")):
                continue
            if not any((member, descriptor) in k.members for k in path.ancestry(owner)):
                missing.add(Link(user, dotted(owner), member, descriptor))
        if c.flags & (_ACC_INTERFACE | _ACC_ABSTRACT):
            continue
        ancestry = path.ancestry(name)
        concrete = {m for k in ancestry for m, acc in k.members.items()
                    if not acc & (_ACC_ABSTRACT | _ACC_STATIC)}
        for k in ancestry:
            if k.name in own:
                continue
            for m, acc in k.members.items():
                if acc & _ACC_ABSTRACT and m not in concrete:
                    missing.add(Link(user, dotted(k.name), m[0], m[1], abstract=True))
    return sorted(missing)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", type=Path, default=_DEFAULT_SRC, help="the jvm-shim directory")
    ap.add_argument("--out", type=Path, default=_DEFAULT_OUT, help="the jar to write")
    ap.add_argument("--force", action="store_true", help="rebuild even if up to date")
    ap.add_argument("--check", action="store_true",
                    help="only list the generated sources that are out of date (exit 1 if any)")
    ap.add_argument("--links", type=Path, metavar="PYSPARK_JARS",
                    help="only list what the jar (--out) needs that these Spark jars lack "
                         "(exit 1 if anything)")
    args = ap.parse_args(argv)
    if args.links is not None:
        missing = missing_links(args.links, args.out)
        for link in missing:
            print(link)
        return 1 if missing else 0
    if args.check:
        stale = stale_generated(args.src)
        for p in stale:
            print(f"out of date: {p} (run python -m ceql.shim.jar)", file=sys.stderr)
        return 1 if stale else 0
    print(build(args.src, args.out, force=args.force))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
