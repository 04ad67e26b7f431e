"""Names shared across ceql: the engine, the Spark adapter and the JVM shim, defined once.

The shim's Scala object ``CeqlConstants`` (``jvm-shim/src/main/scala/org/apache/spark/sql/ceql/
CeqlConstants.scala``) is generated from this module by ``python -m ceql.shim.jar``; a
test fails when the committed file is out of date. Values are therefore limited to what has a
Scala form: ``str``, ``int``, tuples of ``str``, dicts of ``str`` to ``int`` and
:class:`TableFunction` records. A ``#:`` comment documents a name (it becomes its Scaladoc).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ACCESS_DATASET_PATHS",
    "ACCESS_DATASET_TRUSTED",
    "CALL_ARGUMENT",
    "CALL_BAD_PARTITION_BY",
    "CALL_DESCENDING",
    "CALL_NO_INPUT",
    "CALL_ORDER_BY",
    "CALL_ORDER_BY_COLUMN",
    "CALL_PARTITION_BY",
    "CALL_SINGLE_PARTITION",
    "CALL_STREAMS",
    "CALL_TABLE_NAME",
    "COLUMN_MATCH_END",
    "COLUMN_MATCH_END_PREFIX",
    "COLUMN_MATCH_ID",
    "COLUMN_MATCH_START",
    "COLUMN_MATCH_START_PREFIX",
    "COLUMN_VARIABLE",
    "CONF_FROM_FILES",
    "CONF_OUTPUT_MAX_BATCH_BYTES",
    "CONF_PARSER_ENABLED",
    "CONF_PREFILTER_ENABLED",
    "CONF_PREFIX",
    "CONF_PYTHON",
    "CONF_SPASEQ_DATASET_PATHS",
    "CONSUME_ANY",
    "CONSUME_NONE",
    "CONSUME_PARTITION",
    "CONSUME_POLICIES",
    "DEFAULT_ROWS",
    "DEFAULT_STREAM_COLUMN",
    "DEFAULT_TIME_COLUMN",
    "DEFAULT_TIME_UNIT",
    "DEFAULT_TYPE_COLUMN",
    "ENV_DATASET_ACCESS",
    "EXTENSION_CLASS",
    "INTERNAL_FROM_ORDER_COLUMN",
    "INTERNAL_PREFIX",
    "INTERNAL_STREAM_COLUMN",
    "INTERNAL_TYPE_COLUMN",
    "MATCH_CEQL",
    "MATCH_COLUMNS",
    "MATCH_RECOGNIZE_TABLE",
    "MATCH_SPASEQ",
    "MR_CLAUSE",
    "OPTIONS",
    "OPTION_BODY",
    "OPTION_BOUNDS",
    "OPTION_QUERY",
    "OPTION_ROWS",
    "OPTION_TIE_BREAK",
    "OPTION_TIME",
    "OPTION_TIME_FORMAT",
    "OPTION_TIME_UNIT",
    "OPTION_TYPE",
    "PREFILTER_ARGUMENT",
    "PREFILTER_KEY",
    "PREFILTER_ON",
    "ROWS",
    "ROWS_EVENTS",
    "ROWS_MATCHES",
    "STRATEGIES",
    "STRATEGY_ALL",
    "STRATEGY_ANY",
    "STRATEGY_LAST",
    "STRATEGY_MAX",
    "STRATEGY_NEXT",
    "STRATEGY_STRICT",
    "TABLE_FUNCTIONS",
    "TIME_UNITS",
    "TIME_UNIT_PER_SECOND",
    "WITHIN_ATTR",
    "WITHIN_EVENTS",
    "WITHIN_KINDS",
    "WITHIN_TIME",
    "WITHIN_UNITS",
    "WITHIN_UNIT_MILLIS",
    "TableFunction",
]


@dataclass(frozen=True)
class TableFunction:
    """A table function of the Spark shim: its SQL name and the Python UDTF class behind it."""

    name: str
    python_module: str   # importable on the workers; the shim pickles a reference to the class
    python_class: str
    usage: str           # what DESCRIBE FUNCTION shows
    inline_ceql: bool    # the shim's parser also reads NAME( <CEQL> ) with the query inline


# ---------------------------------------------------------------- CEQL clauses

#: Selection strategy (SELECT ALL).
STRATEGY_ALL = "ALL"
#: Selection strategy (SELECT ANY).
STRATEGY_ANY = "ANY"
#: Selection strategy (SELECT NEXT).
STRATEGY_NEXT = "NEXT"
#: Selection strategy (SELECT LAST).
STRATEGY_LAST = "LAST"
#: Selection strategy (SELECT MAX).
STRATEGY_MAX = "MAX"
#: Selection strategy (SELECT STRICT).
STRATEGY_STRICT = "STRICT"
#: The selection strategies, in the order messages list them.
STRATEGIES = (STRATEGY_ALL, STRATEGY_ANY, STRATEGY_NEXT, STRATEGY_LAST, STRATEGY_MAX,
              STRATEGY_STRICT)

#: Consumption policy (CONSUME BY NONE, the default).
CONSUME_NONE = "NONE"
#: Consumption policy (CONSUME BY ANY: across all partitions).
CONSUME_ANY = "ANY"
#: Consumption policy (CONSUME BY PARTITION).
CONSUME_PARTITION = "PARTITION"
#: The consumption policies.
CONSUME_POLICIES = (CONSUME_NONE, CONSUME_ANY, CONSUME_PARTITION)

#: WITHIN keyword units and their length in milliseconds.
WITHIN_UNIT_MILLIS = {
    "HOURS": 3_600_000, "HOUR": 3_600_000,
    "MINUTES": 60_000, "MINUTE": 60_000,
    "SECONDS": 1_000, "SECOND": 1_000,
    "MILLISECONDS": 1, "MILLISECOND": 1,
}
#: The WITHIN keyword units.
WITHIN_UNITS = tuple(WITHIN_UNIT_MILLIS)
#: WITHIN kind: a number of events.
WITHIN_EVENTS = "events"
#: WITHIN kind: a time span (the amount in seconds).
WITHIN_TIME = "time"
#: WITHIN kind: a span of an attribute's values.
WITHIN_ATTR = "attr"
#: The WITHIN kinds.
WITHIN_KINDS = (WITHIN_EVENTS, WITHIN_TIME, WITHIN_ATTR)

# ---------------------------------------------------------------- event input

#: Numeric time units and how many of each make a second.
TIME_UNIT_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
#: What a numeric time may count.
TIME_UNITS = tuple(TIME_UNIT_PER_SECOND)
#: What a numeric time counts unless told.
DEFAULT_TIME_UNIT = "s"
#: The column holding each event's type unless told.
DEFAULT_TYPE_COLUMN = "type"
#: The column holding each event's stream (FROM name) unless told.
DEFAULT_STREAM_COLUMN = "stream"
#: The column MATCH_CEQL takes as the time when it is not told and there is no ORDER BY.
DEFAULT_TIME_COLUMN = "ts"

# ---------------------------------------------------------------- MATCH_CEQL

#: The SQL name of the table function.
MATCH_CEQL = "MATCH_CEQL"

#: The SQL name of the SPAseq table function (docs/spark.md, MATCH_SPASEQ).
MATCH_SPASEQ = "MATCH_SPASEQ"

#: The SQL name of the MATCH_RECOGNIZE table function (docs/spark.md, MATCH_RECOGNIZE); the
#: shim's parser writes ``FROM t MATCH_RECOGNIZE ( … )`` as a call of it.
MATCH_RECOGNIZE_TABLE = "MATCH_RECOGNIZE_TABLE"
#: Option of MATCH_RECOGNIZE_TABLE: the MATCH_RECOGNIZE clause's body.
OPTION_BODY = "body"

#: Option: the CEQL query text (also the first unnamed argument).
OPTION_QUERY = "query"
#: Option: the time column.
OPTION_TIME = "time"
#: Option: what a numeric time counts (one of TIME_UNITS).
OPTION_TIME_UNIT = "time_unit"
#: Option: the Spark datetime pattern of a time column of text (as to_timestamp takes).
OPTION_TIME_FORMAT = "time_format"
#: Option: columns (comma-separated) ordering events with equal times.
OPTION_TIE_BREAK = "tie_break"
#: Option: the event-type column.
OPTION_TYPE = "type"
#: Option: one row per match or per (match, event) (one of ROWS).
OPTION_ROWS = "rows"
#: Option: columns (comma-separated) to report at the match's interval's first and last events.
OPTION_BOUNDS = "bounds"
#: The options MATCH_CEQL accepts as named arguments.
OPTIONS = (OPTION_QUERY, OPTION_TIME, OPTION_TIME_UNIT, OPTION_TIME_FORMAT, OPTION_TIE_BREAK,
           OPTION_TYPE, OPTION_ROWS, OPTION_BOUNDS)

#: rows => 'matches': one row per match.
ROWS_MATCHES = "matches"
#: rows => 'events': one row per (match, event).
ROWS_EVENTS = "events"
#: The values of the rows option.
ROWS = (ROWS_MATCHES, ROWS_EVENTS)
#: The rows option's default.
DEFAULT_ROWS = ROWS_MATCHES

#: Output column: the match's id (BIGINT, stable over the same ordered input).
COLUMN_MATCH_ID = "match_id"
#: Output column: the time of the match's first event.
COLUMN_MATCH_START = "match_start"
#: Output column: the time of the match's last event.
COLUMN_MATCH_END = "match_end"
#: Output column prefix (option bounds): with a column's name, that column at the match's first
#: event (of its interval, reported or not).
COLUMN_MATCH_START_PREFIX = "match_start_"
#: Output column prefix (option bounds): with a column's name, that column at the match's last
#: event.
COLUMN_MATCH_END_PREFIX = "match_end_"
#: Output column of rows => 'events': the variable an event is reported under.
COLUMN_VARIABLE = "variable"
#: The output columns every match row starts with.
MATCH_COLUMNS = (COLUMN_MATCH_ID, COLUMN_MATCH_START, COLUMN_MATCH_END)

#: Input columns whose names start with this are the adapter's own.
INTERNAL_PREFIX = "__ceql_"
#: Internal column: the FROM name a merged row came from.
INTERNAL_STREAM_COLUMN = "__ceql_stream"
#: Internal column: the FROM position of a merged row's table (orders equal times).
INTERNAL_FROM_ORDER_COLUMN = "__ceql_from"
#: Internal column: the event type filled in from the table's name.
INTERNAL_TYPE_COLUMN = "__ceql_type"

#: Named argument through which the shim (or ceql.spark.match) describes the call (JSON).
CALL_ARGUMENT = "_table_call"
#: Call description key: the table argument's PARTITION BY columns.
CALL_PARTITION_BY = "partition_by"
#: Call description key: PARTITION BY expressions that are not columns (SQL).
CALL_BAD_PARTITION_BY = "bad_partition_by"
#: Call description key: the table argument's ORDER BY expressions (SQL).
CALL_ORDER_BY = "order_by"
#: Call description key: the first ORDER BY expression, if a column.
CALL_ORDER_BY_COLUMN = "order_by_column"
#: Call description key: some ORDER BY expression is DESC.
CALL_DESCENDING = "descending"
#: Call description key: WITH SINGLE PARTITION.
CALL_SINGLE_PARTITION = "single_partition"
#: Call description key: the table's name (the events' type when there is no type column).
CALL_TABLE_NAME = "table_name"
#: Call description key: the FROM names merged into one stream.
CALL_STREAMS = "streams"
#: Call description key: no table argument and no FROM name to read.
CALL_NO_INPUT = "no_input"
#: Environment variable of the Python workers that ceql's shim (or ceql.spark.match_spaseq on
#: the driver) starts for MATCH_SPASEQ: what its dataset option may read, as JSON. A caller of
#: the Python table function cannot set it (unlike the call description, which it writes).
ENV_DATASET_ACCESS = "CEQL_DATASET_ACCESS"
#: ENV_DATASET_ACCESS key: the directories the dataset option may read (the session's
#: CONF_SPASEQ_DATASET_PATHS, as the shim read it).
ACCESS_DATASET_PATHS = "dataset_paths"
#: ENV_DATASET_ACCESS key: the dataset option came from a Python caller (the DataFrame API),
#: not from query text, so it may read any file.
ACCESS_DATASET_TRUSTED = "dataset_trusted"

#: Named argument by which the shim asks analyze for a prefilter (it applies it).
PREFILTER_ARGUMENT = "_prefilter"
#: The value of PREFILTER_ARGUMENT that asks for it.
PREFILTER_ON = "on"
#: Metadata key of the first output column through which analyze hands the prefilter over.
PREFILTER_KEY = "ceql.prefilter"

# ---------------------------------------------------------------- MATCH_RECOGNIZE in SQL

#: The word of the inline clause ``FROM src MATCH_RECOGNIZE ( <body> )`` the shim's parser reads.
MR_CLAUSE = "MATCH_RECOGNIZE"
#: (The shim's parser rewrites that clause into
#: ``MATCH_RECOGNIZE_TABLE(TABLE(src), body => '<body>')``: :data:`MATCH_RECOGNIZE_TABLE`,
#: :data:`OPTION_BODY`.)

# ---------------------------------------------------------------- Spark

#: The class to list in spark.sql.extensions (in the shim jar).
EXTENSION_CLASS = "org.ceql.spark.CeqlSparkSessionExtensions"
#: Every Spark setting of ceql starts with this.
CONF_PREFIX = "spark.ceql."
#: Spark setting: the inline MATCH_CEQL( <CEQL> ) syntax (see ceql.spark.conf).
CONF_PARSER_ENABLED = "spark.ceql.parser.enabled"
#: Spark setting: the row filter below MATCH_CEQL's shuffle (see ceql.spark.conf).
CONF_PREFILTER_ENABLED = "spark.ceql.prefilter.enabled"
#: Spark setting: the Python the shim starts (see ceql.spark.conf).
CONF_PYTHON = "spark.ceql.python"
#: Spark setting: MATCH_CEQL's FROM may name files (`format`.`path`) (see ceql.spark.conf).
CONF_FROM_FILES = "spark.ceql.from.files"
#: Spark setting: where MATCH_SPASEQ's dataset option may read (see ceql.spark.conf).
CONF_SPASEQ_DATASET_PATHS = "spark.ceql.spaseq.datasetPaths"
#: Spark setting: the bytes of one output batch of MATCH_CEQL, MATCH_SPASEQ and match_stream
#: (see ceql.spark.conf).
CONF_OUTPUT_MAX_BATCH_BYTES = "spark.ceql.output.maxBatchBytes"

#: The shim's table functions; a new one is one more entry (and its Python class).
TABLE_FUNCTIONS = (
    TableFunction(
        name=MATCH_CEQL,
        python_module="ceql.spark.udtf.match_ceql",
        python_class="MatchCeql",
        usage="MATCH_CEQL(TABLE(t) [PARTITION BY c] [ORDER BY (ts)], query => '<CEQL>' "
              "[, time => 'ts'] [, time_unit => 's'] [, time_format => 'yyyy-MM-dd HH:mm:ss'] "
              "[, type => 'type'] "
              "[, rows => 'matches'|'events'] [, bounds => 'col']) - the complex events the "
              "CEQL query finds in t, one row per match. Also MATCH_CEQL('<CEQL>') and "
              "MATCH_CEQL( <CEQL> ): the tables come from FROM.",
        inline_ceql=True,
    ),
    TableFunction(
        name=MATCH_SPASEQ,
        python_module="ceql.spark.udtf.match_spaseq",
        python_class="MatchSpaseq",
        usage="MATCH_SPASEQ(TABLE(t) [PARTITION BY c] [ORDER BY (time)], query => '<SPAseq>' "
              "[, time => 'time'] [, stream => 'stream'] [, graph => 'graph'] "
              "[, dataset => 'http://graph=/path/kb.ttl,/path/more.trig'] "
              "[, types => 'var bigint, ...']) - the matches of the SPAseq query over t's "
              "events (a stream, a time and an RDF graph per row), one row per match.",
        inline_ceql=False,
    ),
    TableFunction(
        name=MATCH_RECOGNIZE_TABLE,
        python_module="ceql.spark.udtf.match_recognize",
        python_class="MatchRecognizeTable",
        usage="MATCH_RECOGNIZE_TABLE(TABLE(t), body => '[PARTITION BY k] [ORDER BY ts] "
              "[MEASURES …] [ONE ROW PER MATCH | ALL ROWS PER MATCH …] [AFTER MATCH SKIP …] "
              "PATTERN (…) [SUBSET …] [DEFINE …]' [, tie_break => 'col']) - SQL's row pattern "
              "recognition over t (the body of FROM t MATCH_RECOGNIZE ( … )).",
        inline_ceql=False,
    ),
)
