"""Plan one MATCH_SPASEQ call (the driver-side half, run by ``analyze``): read the options and
the input schema, compile the SPAseq query, load the static dataset once to check it, and
derive the output schema. Every SPAseq meaning stays in :mod:`ceql.spaseq`.

Options (named arguments, constant strings): ``query``; ``time``, ``stream``, ``graph`` (the
columns, default ``time``, ``stream``, ``graph``); ``dataset`` (the static named graphs, see
:func:`dataset_items`); ``types`` (Spark types of SELECT variables: ``'p1 bigint, p2
double'``); ``partition_by`` (columns, for calls that cannot write ``TABLE(t) PARTITION BY``).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DateType,
    DoubleType,
    FloatType,
    IntegerType,
    IntegralType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

import ceql
import ceql.spaseq
from ceql.constants import (
    ACCESS_DATASET_PATHS,
    ACCESS_DATASET_TRUSTED,
    CALL_ARGUMENT,
    COLUMN_MATCH_END,
    COLUMN_MATCH_ID,
    COLUMN_MATCH_START,
    ENV_DATASET_ACCESS,
    MATCH_SPASEQ,
    PREFILTER_ARGUMENT,
)
from ceql.constants import CONF_SPASEQ_DATASET_PATHS as CONF_DATASET_PATHS
from ceql.rdf import RdfInputError, StaticDataset
from ceql.spark.errors import MatchCeqlError
from ceql.spark.udtf.call import CallInfo, quote_identifier, resolve_column, string_option

__all__ = [
    "COLUMN_POSITIONS",
    "OPTIONS",
    "TYPES",
    "DatasetAccess",
    "SpaseqSpec",
    "check_dataset_access",
    "compiled",
    "dataset_items",
    "granted_access",
    "load_dataset",
    "plan_spaseq",
    "spaseq_schema",
]

#: Output column: the match's events, as row numbers of its partition (in time order, 0-based).
COLUMN_POSITIONS = "positions"

OPTION_QUERY = "query"
OPTION_TIME = "time"
OPTION_STREAM = "stream"
OPTION_GRAPH = "graph"
OPTION_DATASET = "dataset"
OPTION_TYPES = "types"
OPTION_PARTITION_BY = "partition_by"
#: The options MATCH_SPASEQ takes, in the order messages list them.
OPTIONS = (OPTION_QUERY, OPTION_TIME, OPTION_STREAM, OPTION_GRAPH, OPTION_DATASET, OPTION_TYPES,
           OPTION_PARTITION_BY)

#: The Spark types ``types`` may declare (SQL names; aliases map to the same type).
TYPES: dict[str, DataType] = {
    "string": StringType(), "bigint": LongType(), "long": LongType(), "int": IntegerType(),
    "integer": IntegerType(), "double": DoubleType(), "float": FloatType(),
    "boolean": BooleanType(), "timestamp": TimestampType(), "timestamp_ntz": TimestampNTZType(),
    "date": DateType(),
}

_USAGE = "MATCH_SPASEQ(TABLE(t) PARTITION BY k ORDER BY (time), query => '<SPAseq>')"


@dataclass(frozen=True)
class SpaseqSpec:
    """What a task needs to run the query over its partition; built once by ``analyze``."""

    query: str
    time: str
    stream: str
    graph: str
    dataset: str | None
    partition: tuple[str, ...]
    variables: tuple[str, ...]          # SELECT variables (output columns after positions)
    lists: frozenset[str]               # iteration-local ones: arrays
    types: tuple[tuple[str, str], ...]  # variable → declared type name (string when absent)
    request_partition_by: tuple[str, ...] = ()
    request_order_by: tuple[str, ...] = ()

    def type_of(self, variable: str) -> str:
        """The declared type name of ``variable`` (``"string"`` when not declared)."""
        return dict(self.types).get(variable, "string")


def dataset_items(option: str) -> list[tuple[str | None, str]]:
    """The ``dataset`` option as (graph IRI or None, path) items.

    Items are separated by commas; each is ``IRI=path`` (the file's triples form the named
    graph IRI; the last ``=`` splits, so an IRI may hold ``=`` and a path may not) or a path
    alone (a TriG or N-Quads file: its named graphs as written).
    """
    items: list[tuple[str | None, str]] = []
    for raw in option.split(","):
        item = raw.strip()
        if not item:
            continue
        if "=" in item:
            iri, path = (p.strip() for p in item.rsplit("=", 1))
            iri = iri[1:-1] if iri.startswith("<") and iri.endswith(">") else iri
            if not iri or not path:
                raise MatchCeqlError(
                    f"{MATCH_SPASEQ}: the dataset item {item!r} needs a graph IRI and a path "
                    "(dataset => 'http://example/kb=/data/kb.ttl').")
            items.append((iri, path))
        else:
            items.append((None, item))
    if not items:
        raise MatchCeqlError(f"{MATCH_SPASEQ}: the dataset option names no file; write "
                             "dataset => 'http://example/kb=/data/kb.ttl' or leave it out.")
    return items


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([path, root]) == root


@dataclass(frozen=True)
class DatasetAccess:
    """What a MATCH_SPASEQ call's ``dataset`` option may read: any file (``trusted``: the
    option came from a Python caller, not query text), or files under ``paths`` (the
    directories ``spark.ceql.spaseq.datasetPaths`` lists, comma-separated)."""

    paths: str | None = None
    trusted: bool = False

    def env_value(self) -> str:
        """This access as the value of ``ENV_DATASET_ACCESS`` (JSON)."""
        return json.dumps({ACCESS_DATASET_PATHS: self.paths,
                           ACCESS_DATASET_TRUSTED: self.trusted})


def granted_access() -> DatasetAccess | None:
    """The access granted to this process: ``ENV_DATASET_ACCESS`` in its environment, which
    ceql's shim sets for the Python workers of the MATCH_SPASEQ it plans (from the session's
    settings) and :func:`ceql.spark.match_spaseq` for those of its call; None when no one did
    (the Python table function registered by hand, or through Spark Connect). Not the call
    description: whoever calls the Python function writes that."""
    raw = os.environ.get(ENV_DATASET_ACCESS)
    if not raw:
        return None
    d = json.loads(raw)
    return DatasetAccess(paths=d.get(ACCESS_DATASET_PATHS),
                         trusted=bool(d.get(ACCESS_DATASET_TRUSTED, False)))


def _check_granted(option: str) -> None:
    """Refuse ``option`` unless the process's access (:func:`granted_access`) lets it read
    every file it names."""
    access = granted_access()
    if access is None:
        path = dataset_items(option)[0][1]
        raise MatchCeqlError(
            f"{MATCH_SPASEQ}: the dataset option names {path}, but this call did not come "
            f"through ceql's extension, which checks {CONF_DATASET_PATHS}, so query text reads "
            "no file (a call description naming paths or trust is not believed: whoever calls "
            "the Python table function writes it). Run MATCH_SPASEQ in a session with ceql's "
            "extension (ceql.spark.configure(builder); a Spark Connect server with "
            f"ceql.spark.server_conf()) and set {CONF_DATASET_PATHS} to the directories "
            "holding your datasets, or pass dataset= to ceql.spark.match_spaseq from the "
            "driver's Python in a classic session.")
    if not access.trusted:
        check_dataset_access(option, access.paths)


def check_dataset_access(option: str, allowed: str | None) -> None:
    """Refuse a ``dataset`` option of query text that names a file outside the directories
    ``spark.ceql.spaseq.datasetPaths`` lists (``allowed``, as the shim read it; None or empty:
    no file), before anything is read: query text reads only what the session allows."""
    roots = [os.path.realpath(r.strip()) for r in (allowed or "").split(",") if r.strip()]
    for _, path in dataset_items(option):
        real = os.path.realpath(path)
        if not any(_inside(real, r) for r in roots):
            where = (f"only files under {', '.join(roots)}" if roots
                     else "no file (it is unset in this session)")
            raise MatchCeqlError(
                f"{MATCH_SPASEQ}: the dataset option names {path}, but {CONF_DATASET_PATHS} "
                f"lets query text read {where}. Set {CONF_DATASET_PATHS} to the directories "
                "holding your datasets (e.g. SET spark.ceql.spaseq.datasetPaths=/data/kb), or "
                "pass dataset= to ceql.spark.match_spaseq from Python.")


def load_dataset(option: str) -> StaticDataset:
    """The static dataset the ``dataset`` option names, read from its files."""
    ds = StaticDataset()
    for iri, path in dataset_items(option):
        if not os.path.isfile(path):
            raise MatchCeqlError(
                f"{MATCH_SPASEQ}: the dataset file {path} does not exist (the driver and "
                "every worker read it: give a path they all can read, best an absolute one).")
        try:
            ds.load(path=path, graph=iri)
        except RdfInputError as e:
            if iri is None and e.message.startswith("triples outside a named graph"):
                raise MatchCeqlError(
                    f"{MATCH_SPASEQ}: the dataset file {path} has triples outside a named "
                    f"graph: name their graph, dataset => 'http://…={path}' (GPMs read it as "
                    "GRAPH <http://…> { … }).") from None
            raise MatchCeqlError(f"{MATCH_SPASEQ}: {e}") from None
    return ds


_LOCK = threading.Lock()
_COMPILED: dict[tuple[str, str | None], ceql.spaseq.Query] = {}


def compiled(query: str, dataset: str | None) -> ceql.spaseq.Query:
    """The query compiled with its dataset loaded, once per process (tasks reuse it: an
    evaluation's state lives in its evaluator, not in the query)."""
    key = (query, dataset)
    with _LOCK:
        found = _COMPILED.get(key)
        if found is None:
            ds = load_dataset(dataset) if dataset is not None else None
            found = _COMPILED[key] = ceql.spaseq.compile(query, dataset=ds)
            if len(_COMPILED) > 16:
                _COMPILED.pop(next(iter(_COMPILED)))
        return found


def _resolve(name: str, schema: StructType, what: str) -> str:
    hint = (f"Name one of them with {what} => 'column'."
            if what in (OPTION_TIME, OPTION_STREAM, OPTION_GRAPH) else "")
    return resolve_column(name, schema, what, function=MATCH_SPASEQ, hint=hint)


def _type(schema: StructType, name: str) -> DataType:
    return next(f.dataType for f in schema.fields if f.name == name)


def _check_columns(schema: StructType, time: str, stream: str, graph: str) -> None:
    t = _type(schema, time)
    if not isinstance(t, (IntegralType, FloatType, DoubleType, TimestampType, TimestampNTZType)):
        raise MatchCeqlError(
            f"{MATCH_SPASEQ}: the time column {time!r} has type {t.simpleString()}; a time is a "
            "number of seconds or a TIMESTAMP (cast it, e.g. "
            f"CAST({quote_identifier(time)} AS DOUBLE)).")
    s = _type(schema, stream)
    if not isinstance(s, StringType):
        raise MatchCeqlError(
            f"{MATCH_SPASEQ}: the stream column {stream!r} has type {s.simpleString()}; it holds "
            "each event's stream IRI (or its name in the query) as a STRING.")
    g = _type(schema, graph)
    if isinstance(g, StringType):
        return
    if isinstance(g, ArrayType) and isinstance(g.elementType, StructType):
        fields = {f.name: f.dataType for f in g.elementType.fields}
        if set(fields) == {"s", "p", "o"} and all(isinstance(v, StringType)
                                                  for v in fields.values()):
            return
    raise MatchCeqlError(
        f"{MATCH_SPASEQ}: the graph column {graph!r} has type {g.simpleString()}; an event's "
        "graph is N-Triples or Turtle text (STRING) or its triples as "
        "ARRAY<STRUCT<s: STRING, p: STRING, o: STRING>> (terms in N-Triples syntax).")


def _types(option: str | None, variables: Sequence[str]) -> tuple[tuple[str, str], ...]:
    if option is None:
        return ()
    out: dict[str, str] = {}
    for raw in option.split(","):
        parts = raw.split()
        if not parts:
            continue
        if len(parts) != 2 or parts[1].lower() not in TYPES:
            raise MatchCeqlError(
                f"{MATCH_SPASEQ}: types => {option!r}: {raw.strip()!r} is not 'variable type' "
                f"with a type among {', '.join(TYPES)}.")
        name = parts[0].lstrip("?$")
        if name not in variables:
            raise MatchCeqlError(
                f"{MATCH_SPASEQ}: types names ?{name}, which the query does not SELECT; its "
                f"SELECT variables are {', '.join('?' + v for v in variables)}.")
        out[name] = parts[1].lower()
    return tuple(out.items())


def _partitioning(schema: StructType, option: str | None, call: CallInfo) -> tuple[str, ...]:
    if call.bad_partition_by:
        raise MatchCeqlError(
            f"{MATCH_SPASEQ}: the table argument's PARTITION BY must name columns of the table, "
            f"got {', '.join(call.bad_partition_by)}; compute the value in a subquery first.")
    from_call = tuple(_resolve(c, schema, "PARTITION BY") for c in call.partition_by)
    from_option = tuple(_resolve(c.strip(), schema, "partition_by")
                        for c in (option or "").split(",") if c.strip())
    if from_call and from_option and from_call != from_option:
        raise MatchCeqlError(
            f"{MATCH_SPASEQ}: the table argument is PARTITION BY {', '.join(from_call)} but "
            f"partition_by => {option!r}; give only one.")
    return from_call or from_option


def plan_spaseq(schema: StructType, options: Mapping[str, Any], call: CallInfo) -> SpaseqSpec:
    """The plan of one call over input ``schema`` (raises :class:`MatchCeqlError` or the
    query's :class:`ceql.CeqlError`)."""
    options = {k: v for k, v in options.items() if k not in (CALL_ARGUMENT, PREFILTER_ARGUMENT)}
    unknown = [k for k in options if k not in OPTIONS]
    if unknown:
        raise MatchCeqlError(f"{MATCH_SPASEQ} has no option {unknown[0]}; its options are "
                             f"{', '.join(OPTIONS)}.")
    def option(name: str) -> str | None:
        return string_option(options, name, MATCH_SPASEQ)

    text = option(OPTION_QUERY)
    if text is None:
        raise MatchCeqlError(f"{MATCH_SPASEQ} needs the SPAseq query: {_USAGE}.")
    if call.no_input:
        raise MatchCeqlError(f"{MATCH_SPASEQ} takes exactly one table argument, got 0: {_USAGE}.")
    dataset = option(OPTION_DATASET)
    if dataset is not None:
        _check_granted(dataset)
    query = compiled(text, dataset)
    time = _resolve(option(OPTION_TIME) or "time", schema, OPTION_TIME)
    stream = _resolve(option(OPTION_STREAM) or "stream", schema, OPTION_STREAM)
    graph = _resolve(option(OPTION_GRAPH) or "graph", schema, OPTION_GRAPH)
    _check_columns(schema, time, stream, graph)
    if call.descending:
        raise MatchCeqlError(f"{MATCH_SPASEQ}: the table argument's ORDER BY must be ascending "
                             "(events are read oldest first); drop DESC.")
    if call.order_by and (call.order_by_column is None
                          or _resolve(call.order_by_column, schema, "ORDER BY") != time):
        raise MatchCeqlError(
            f"{MATCH_SPASEQ}: the table argument's ORDER BY must be the time column {time!r}, "
            f"got {', '.join(call.order_by)}; write ORDER BY ({time}) or leave it out (events "
            "are read by time, equal times by stream).")
    partition = () if call.single_partition else _partitioning(
        schema, option(OPTION_PARTITION_BY), call)
    variables = tuple(query.variables)
    owner = query.plan.owner
    return SpaseqSpec(
        query=text, time=time, stream=stream, graph=graph, dataset=dataset,
        partition=partition, variables=variables,
        lists=frozenset(v for v in variables if v in owner),
        types=_types(option(OPTION_TYPES), variables),
        request_partition_by=tuple(quote_identifier(c) for c in partition),
        request_order_by=(quote_identifier(time), quote_identifier(stream)),
    )


def spaseq_schema(spec: SpaseqSpec, schema: StructType) -> StructType:
    """The rows MATCH_SPASEQ returns: match_id, the partition columns, match_start, match_end
    (the time column's type), positions, then one column per SELECT variable (its declared
    type, else STRING; an array of it for an iteration-local variable). All nullable."""
    time_type = _type(schema, spec.time)
    fields = [StructField(COLUMN_MATCH_ID, LongType(), True),
              *(StructField(c, _type(schema, c), True) for c in spec.partition),
              StructField(COLUMN_MATCH_START, time_type, True),
              StructField(COLUMN_MATCH_END, time_type, True),
              StructField(COLUMN_POSITIONS, ArrayType(LongType(), False), True)]
    for v in spec.variables:
        t = TYPES[spec.type_of(v)]
        fields.append(StructField(v, ArrayType(t, True) if v in spec.lists else t, True))
    seen: dict[str, str] = {}
    for f in fields:
        k = f.name.lower()
        if k in seen:
            raise MatchCeqlError(
                f"{MATCH_SPASEQ}: output columns {seen[k]!r} and {f.name!r} clash (a SELECT "
                "variable has the name of another output column); rename the variable in the "
                "query or the column in a subquery.")
        seen[k] = f.name
    return StructType(fields)
