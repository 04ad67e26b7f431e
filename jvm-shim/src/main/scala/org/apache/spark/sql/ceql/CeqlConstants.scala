// Generated from python/ceql/constants.py by `python -m ceql.shim.jar`; do not edit.
package org.apache.spark.sql.ceql

import scala.collection.immutable.ListMap

/** The names ceql shares between its Python code and this shim (python/ceql/constants.py). */
object CeqlConstants {

  /** A table function of the Spark shim: its SQL name and the Python UDTF class behind it. */
  final case class TableFunction(
    name: String,
    pythonModule: String,
    pythonClass: String,
    usage: String,
    inlineCeql: Boolean
  )

  // ---------------------------------------------------------------- CEQL clauses

  /** `STRATEGY_ALL`: Selection strategy (SELECT ALL). */
  final val StrategyAll = "ALL"

  /** `STRATEGY_ANY`: Selection strategy (SELECT ANY). */
  final val StrategyAny = "ANY"

  /** `STRATEGY_NEXT`: Selection strategy (SELECT NEXT). */
  final val StrategyNext = "NEXT"

  /** `STRATEGY_LAST`: Selection strategy (SELECT LAST). */
  final val StrategyLast = "LAST"

  /** `STRATEGY_MAX`: Selection strategy (SELECT MAX). */
  final val StrategyMax = "MAX"

  /** `STRATEGY_STRICT`: Selection strategy (SELECT STRICT). */
  final val StrategyStrict = "STRICT"

  /** `STRATEGIES`: The selection strategies, in the order messages list them. */
  val Strategies: Seq[String] = Seq("ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT")

  /** `CONSUME_NONE`: Consumption policy (CONSUME BY NONE, the default). */
  final val ConsumeNone = "NONE"

  /** `CONSUME_ANY`: Consumption policy (CONSUME BY ANY: across all partitions). */
  final val ConsumeAny = "ANY"

  /** `CONSUME_PARTITION`: Consumption policy (CONSUME BY PARTITION). */
  final val ConsumePartition = "PARTITION"

  /** `CONSUME_POLICIES`: The consumption policies. */
  val ConsumePolicies: Seq[String] = Seq("NONE", "ANY", "PARTITION")

  /** `WITHIN_UNIT_MILLIS`: WITHIN keyword units and their length in milliseconds. */
  val WithinUnitMillis: ListMap[String, Long] = ListMap(
    "HOURS" -> 3600000L,
    "HOUR" -> 3600000L,
    "MINUTES" -> 60000L,
    "MINUTE" -> 60000L,
    "SECONDS" -> 1000L,
    "SECOND" -> 1000L,
    "MILLISECONDS" -> 1L,
    "MILLISECOND" -> 1L
  )

  /** `WITHIN_UNITS`: The WITHIN keyword units. */
  val WithinUnits: Seq[String] = Seq(
    "HOURS",
    "HOUR",
    "MINUTES",
    "MINUTE",
    "SECONDS",
    "SECOND",
    "MILLISECONDS",
    "MILLISECOND"
  )

  /** `WITHIN_EVENTS`: WITHIN kind: a number of events. */
  final val WithinEvents = "events"

  /** `WITHIN_TIME`: WITHIN kind: a time span (the amount in seconds). */
  final val WithinTime = "time"

  /** `WITHIN_ATTR`: WITHIN kind: a span of an attribute's values. */
  final val WithinAttr = "attr"

  /** `WITHIN_KINDS`: The WITHIN kinds. */
  val WithinKinds: Seq[String] = Seq("events", "time", "attr")

  // ---------------------------------------------------------------- event input

  /** `TIME_UNIT_PER_SECOND`: Numeric time units and how many of each make a second. */
  val TimeUnitPerSecond: ListMap[String, Long] = ListMap(
    "s" -> 1L,
    "ms" -> 1000L,
    "us" -> 1000000L,
    "ns" -> 1000000000L
  )

  /** `TIME_UNITS`: What a numeric time may count. */
  val TimeUnits: Seq[String] = Seq("s", "ms", "us", "ns")

  /** `DEFAULT_TIME_UNIT`: What a numeric time counts unless told. */
  final val DefaultTimeUnit = "s"

  /** `DEFAULT_TYPE_COLUMN`: The column holding each event's type unless told. */
  final val DefaultTypeColumn = "type"

  /** `DEFAULT_STREAM_COLUMN`: The column holding each event's stream (FROM name) unless told. */
  final val DefaultStreamColumn = "stream"

  /**
   * `DEFAULT_TIME_COLUMN`: The column MATCH_CEQL takes as the time when it is not told and there is
   * no ORDER BY.
   */
  final val DefaultTimeColumn = "ts"

  // ---------------------------------------------------------------- MATCH_CEQL

  /** `MATCH_CEQL`: The SQL name of the table function. */
  final val MatchCeql = "MATCH_CEQL"

  /** `MATCH_SPASEQ`: The SQL name of the SPAseq table function (docs/spark.md, MATCH_SPASEQ). */
  final val MatchSpaseq = "MATCH_SPASEQ"

  /**
   * `MATCH_RECOGNIZE_TABLE`: The SQL name of the MATCH_RECOGNIZE table function (docs/spark.md,
   * MATCH_RECOGNIZE); the shim's parser writes ``FROM t MATCH_RECOGNIZE ( … )`` as a call of it.
   */
  final val MatchRecognizeTable = "MATCH_RECOGNIZE_TABLE"

  /** `OPTION_BODY`: Option of MATCH_RECOGNIZE_TABLE: the MATCH_RECOGNIZE clause's body. */
  final val OptionBody = "body"

  /** `OPTION_QUERY`: Option: the CEQL query text (also the first unnamed argument). */
  final val OptionQuery = "query"

  /** `OPTION_TIME`: Option: the time column. */
  final val OptionTime = "time"

  /** `OPTION_TIME_UNIT`: Option: what a numeric time counts (one of TIME_UNITS). */
  final val OptionTimeUnit = "time_unit"

  /**
   * `OPTION_TIME_FORMAT`: Option: the Spark datetime pattern of a time column of text (as
   * to_timestamp takes).
   */
  final val OptionTimeFormat = "time_format"

  /** `OPTION_TIE_BREAK`: Option: columns (comma-separated) ordering events with equal times. */
  final val OptionTieBreak = "tie_break"

  /** `OPTION_TYPE`: Option: the event-type column. */
  final val OptionType = "type"

  /** `OPTION_ROWS`: Option: one row per match or per (match, event) (one of ROWS). */
  final val OptionRows = "rows"

  /**
   * `OPTION_BOUNDS`: Option: columns (comma-separated) to report at the match's interval's first
   * and last events.
   */
  final val OptionBounds = "bounds"

  /** `OPTIONS`: The options MATCH_CEQL accepts as named arguments. */
  val Options: Seq[String] = Seq(
    "query",
    "time",
    "time_unit",
    "time_format",
    "tie_break",
    "type",
    "rows",
    "bounds"
  )

  /** `ROWS_MATCHES`: rows => 'matches': one row per match. */
  final val RowsMatches = "matches"

  /** `ROWS_EVENTS`: rows => 'events': one row per (match, event). */
  final val RowsEvents = "events"

  /** `ROWS`: The values of the rows option. */
  val Rows: Seq[String] = Seq("matches", "events")

  /** `DEFAULT_ROWS`: The rows option's default. */
  final val DefaultRows = "matches"

  /**
   * `COLUMN_MATCH_ID`: Output column: the match's id (BIGINT, stable over the same ordered input).
   */
  final val ColumnMatchId = "match_id"

  /** `COLUMN_MATCH_START`: Output column: the time of the match's first event. */
  final val ColumnMatchStart = "match_start"

  /** `COLUMN_MATCH_END`: Output column: the time of the match's last event. */
  final val ColumnMatchEnd = "match_end"

  /**
   * `COLUMN_MATCH_START_PREFIX`: Output column prefix (option bounds): with a column's name, that
   * column at the match's first event (of its interval, reported or not).
   */
  final val ColumnMatchStartPrefix = "match_start_"

  /**
   * `COLUMN_MATCH_END_PREFIX`: Output column prefix (option bounds): with a column's name, that
   * column at the match's last event.
   */
  final val ColumnMatchEndPrefix = "match_end_"

  /**
   * `COLUMN_VARIABLE`: Output column of rows => 'events': the variable an event is reported under.
   */
  final val ColumnVariable = "variable"

  /** `MATCH_COLUMNS`: The output columns every match row starts with. */
  val MatchColumns: Seq[String] = Seq("match_id", "match_start", "match_end")

  /** `INTERNAL_PREFIX`: Input columns whose names start with this are the adapter's own. */
  final val InternalPrefix = "__ceql_"

  /** `INTERNAL_STREAM_COLUMN`: Internal column: the FROM name a merged row came from. */
  final val InternalStreamColumn = "__ceql_stream"

  /**
   * `INTERNAL_FROM_ORDER_COLUMN`: Internal column: the FROM position of a merged row's table
   * (orders equal times).
   */
  final val InternalFromOrderColumn = "__ceql_from"

  /** `INTERNAL_TYPE_COLUMN`: Internal column: the event type filled in from the table's name. */
  final val InternalTypeColumn = "__ceql_type"

  /**
   * `CALL_ARGUMENT`: Named argument through which the shim (or ceql.spark.match) describes the call
   * (JSON).
   */
  final val CallArgument = "_table_call"

  /** `CALL_PARTITION_BY`: Call description key: the table argument's PARTITION BY columns. */
  final val CallPartitionBy = "partition_by"

  /**
   * `CALL_BAD_PARTITION_BY`: Call description key: PARTITION BY expressions that are not columns
   * (SQL).
   */
  final val CallBadPartitionBy = "bad_partition_by"

  /** `CALL_ORDER_BY`: Call description key: the table argument's ORDER BY expressions (SQL). */
  final val CallOrderBy = "order_by"

  /** `CALL_ORDER_BY_COLUMN`: Call description key: the first ORDER BY expression, if a column. */
  final val CallOrderByColumn = "order_by_column"

  /** `CALL_DESCENDING`: Call description key: some ORDER BY expression is DESC. */
  final val CallDescending = "descending"

  /** `CALL_SINGLE_PARTITION`: Call description key: WITH SINGLE PARTITION. */
  final val CallSinglePartition = "single_partition"

  /**
   * `CALL_TABLE_NAME`: Call description key: the table's name (the events' type when there is no
   * type column).
   */
  final val CallTableName = "table_name"

  /** `CALL_STREAMS`: Call description key: the FROM names merged into one stream. */
  final val CallStreams = "streams"

  /** `CALL_NO_INPUT`: Call description key: no table argument and no FROM name to read. */
  final val CallNoInput = "no_input"

  /**
   * `ENV_DATASET_ACCESS`: Environment variable of the Python workers that ceql's shim (or
   * ceql.spark.match_spaseq on the driver) starts for MATCH_SPASEQ: what its dataset option may
   * read, as JSON. A caller of the Python table function cannot set it (unlike the call
   * description, which it writes).
   */
  final val EnvDatasetAccess = "CEQL_DATASET_ACCESS"

  /**
   * `ACCESS_DATASET_PATHS`: ENV_DATASET_ACCESS key: the directories the dataset option may read
   * (the session's CONF_SPASEQ_DATASET_PATHS, as the shim read it).
   */
  final val AccessDatasetPaths = "dataset_paths"

  /**
   * `ACCESS_DATASET_TRUSTED`: ENV_DATASET_ACCESS key: the dataset option came from a Python caller
   * (the DataFrame API), not from query text, so it may read any file.
   */
  final val AccessDatasetTrusted = "dataset_trusted"

  /**
   * `PREFILTER_ARGUMENT`: Named argument by which the shim asks analyze for a prefilter (it applies
   * it).
   */
  final val PrefilterArgument = "_prefilter"

  /** `PREFILTER_ON`: The value of PREFILTER_ARGUMENT that asks for it. */
  final val PrefilterOn = "on"

  /**
   * `PREFILTER_KEY`: Metadata key of the first output column through which analyze hands the
   * prefilter over.
   */
  final val PrefilterKey = "ceql.prefilter"

  // ---------------------------------------------------------------- MATCH_RECOGNIZE in SQL

  /**
   * `MR_CLAUSE`: The word of the inline clause ``FROM src MATCH_RECOGNIZE ( <body> )`` the shim's
   * parser reads.
   */
  final val MrClause = "MATCH_RECOGNIZE"

  // ---------------------------------------------------------------- Spark

  /** `EXTENSION_CLASS`: The class to list in spark.sql.extensions (in the shim jar). */
  final val ExtensionClass = "org.ceql.spark.CeqlSparkSessionExtensions"

  /** `CONF_PREFIX`: Every Spark setting of ceql starts with this. */
  final val ConfPrefix = "spark.ceql."

  /**
   * `CONF_PARSER_ENABLED`: Spark setting: the inline MATCH_CEQL( <CEQL> ) syntax (see
   * ceql.spark.conf).
   */
  final val ConfParserEnabled = "spark.ceql.parser.enabled"

  /**
   * `CONF_PREFILTER_ENABLED`: Spark setting: the row filter below MATCH_CEQL's shuffle (see
   * ceql.spark.conf).
   */
  final val ConfPrefilterEnabled = "spark.ceql.prefilter.enabled"

  /** `CONF_PYTHON`: Spark setting: the Python the shim starts (see ceql.spark.conf). */
  final val ConfPython = "spark.ceql.python"

  /**
   * `CONF_FROM_FILES`: Spark setting: MATCH_CEQL's FROM may name files (`format`.`path`) (see
   * ceql.spark.conf).
   */
  final val ConfFromFiles = "spark.ceql.from.files"

  /**
   * `CONF_SPASEQ_DATASET_PATHS`: Spark setting: where MATCH_SPASEQ's dataset option may read (see
   * ceql.spark.conf).
   */
  final val ConfSpaseqDatasetPaths = "spark.ceql.spaseq.datasetPaths"

  /**
   * `CONF_OUTPUT_MAX_BATCH_BYTES`: Spark setting: the bytes of one output batch of MATCH_CEQL,
   * MATCH_SPASEQ and match_stream (see ceql.spark.conf).
   */
  final val ConfOutputMaxBatchBytes = "spark.ceql.output.maxBatchBytes"

  /**
   * `TABLE_FUNCTIONS`: The shim's table functions; a new one is one more entry (and its Python
   * class).
   */
  val TableFunctions: Seq[TableFunction] = Seq(
    TableFunction(
      name = "MATCH_CEQL",
      pythonModule = "ceql.spark.udtf.match_ceql",
      pythonClass = "MatchCeql",
      usage = "MATCH_CEQL(TABLE(t) [PARTITION BY c] [ORDER BY (ts)], query => '<CEQL>' [, time " +
              "=> 'ts'] [, time_unit => 's'] [, time_format => 'yyyy-MM-dd HH:mm:ss'] [, type " +
              "=> 'type'] [, rows => 'matches'|'events'] [, bounds => 'col']) - the complex " +
              "events the CEQL query finds in t, one row per match. Also MATCH_CEQL('<CEQL>') " +
              "and MATCH_CEQL( <CEQL> ): the tables come from FROM.",
      inlineCeql = true
    ),
    TableFunction(
      name = "MATCH_SPASEQ",
      pythonModule = "ceql.spark.udtf.match_spaseq",
      pythonClass = "MatchSpaseq",
      usage = "MATCH_SPASEQ(TABLE(t) [PARTITION BY c] [ORDER BY (time)], query => '<SPAseq>' " +
              "[, time => 'time'] [, stream => 'stream'] [, graph => 'graph'] [, dataset => " +
              "'http://graph=/path/kb.ttl,/path/more.trig'] [, types => 'var bigint, ...']) - " +
              "the matches of the SPAseq query over t's events (a stream, a time and an RDF " +
              "graph per row), one row per match.",
      inlineCeql = false
    ),
    TableFunction(
      name = "MATCH_RECOGNIZE_TABLE",
      pythonModule = "ceql.spark.udtf.match_recognize",
      pythonClass = "MatchRecognizeTable",
      usage = "MATCH_RECOGNIZE_TABLE(TABLE(t), body => '[PARTITION BY k] [ORDER BY ts] " +
              "[MEASURES …] [ONE ROW PER MATCH | ALL ROWS PER MATCH …] [AFTER MATCH SKIP …] " +
              "PATTERN (…) [SUBSET …] [DEFINE …]' [, tie_break => 'col']) - SQL's row pattern " +
              "recognition over t (the body of FROM t MATCH_RECOGNIZE ( … )).",
      inlineCeql = false
    )
  )
}
