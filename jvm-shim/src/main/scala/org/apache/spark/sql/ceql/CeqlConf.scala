// Generated from python/ceql/spark/conf.py by `python -m ceql.shim.jar`; do not edit.
package org.apache.spark.sql.ceql

import org.apache.spark.internal.config.{ConfigEntry, OptionalConfigEntry}
import org.apache.spark.sql.internal.SQLConf

/**
 * ceql's Spark settings, registered with Spark's SQLConf (SET -v lists them); jvm-shim/README.md
 * documents them.
 */
object CeqlConf {

  /**
   * `spark.ceql.parser.enabled`: Whether the shim's parser reads MATCH_CEQL( <CEQL> ) with the CEQL
   * query written inline and FROM t MATCH_RECOGNIZE ( ... ), and keeps their ';' together when the
   * spark-sql CLI splits statements. When false, Spark's parser alone reads every statement (the
   * string-literal and TABLE(t) spellings still work).
   */
  val ParserEnabled: ConfigEntry[Boolean] =
    SQLConf.buildConf(CeqlConstants.ConfParserEnabled)
      .doc("Whether the shim's parser reads MATCH_CEQL( <CEQL> ) with the CEQL query written " +
           "inline and FROM t MATCH_RECOGNIZE ( ... ), and keeps their ';' together when the " +
           "spark-sql CLI splits statements. When false, Spark's parser alone reads every " +
           "statement (the string-literal and TABLE(t) spellings still work).")
      .version("0.1.0")
      .booleanConf
      .createWithDefault(true)

  /**
   * `spark.ceql.prefilter.enabled`: Whether MATCH_CEQL drops the rows no run can use (a filter from
   * the query's event types and predicates) before shuffling its input. The result is the same
   * either way.
   */
  val PrefilterEnabled: ConfigEntry[Boolean] =
    SQLConf.buildConf(CeqlConstants.ConfPrefilterEnabled)
      .doc("Whether MATCH_CEQL drops the rows no run can use (a filter from the query's event " +
           "types and predicates) before shuffling its input. The result is the same either " +
           "way.")
      .version("0.1.0")
      .booleanConf
      .createWithDefault(true)

  /**
   * `spark.ceql.python`: The Python executable MATCH_CEQL starts (it must be able to import ceql).
   * When unset: spark.pyspark.python, else $PYSPARK_PYTHON, else python3.
   */
  val Python: OptionalConfigEntry[String] =
    SQLConf.buildConf(CeqlConstants.ConfPython)
      .doc("The Python executable MATCH_CEQL starts (it must be able to import ceql). When " +
           "unset: spark.pyspark.python, else $PYSPARK_PYTHON, else python3.")
      .version("0.1.0")
      .stringConf
      .createOptional

  /**
   * `spark.ceql.from.files`: Whether the FROM of a MATCH_CEQL query without a table argument may
   * name a file, as `format.path` (binaryFile./etc/hosts), which Spark reads when
   * spark.sql.runSQLOnFiles is true. When false, FROM names only tables and views: query text reads
   * no file.
   */
  val FromFiles: ConfigEntry[Boolean] =
    SQLConf.buildConf(CeqlConstants.ConfFromFiles)
      .doc("Whether the FROM of a MATCH_CEQL query without a table argument may name a file, " +
           "as `format.path` (binaryFile./etc/hosts), which Spark reads when " +
           "spark.sql.runSQLOnFiles is true. When false, FROM names only tables and views: " +
           "query text reads no file.")
      .version("0.1.0")
      .booleanConf
      .createWithDefault(false)

  /**
   * `spark.ceql.spaseq.datasetPaths`: Comma-separated directories whose files the dataset option of
   * MATCH_SPASEQ in SQL may read (symbolic links and '..' resolved first). When unset, that option
   * reads no file; ceql.spark.match_spaseq(dataset=...) on a classic session's driver is not
   * limited, and through Spark Connect it reads no file.
   */
  val SpaseqDatasetPaths: OptionalConfigEntry[String] =
    SQLConf.buildConf(CeqlConstants.ConfSpaseqDatasetPaths)
      .doc("Comma-separated directories whose files the dataset option of MATCH_SPASEQ in SQL " +
           "may read (symbolic links and '..' resolved first). When unset, that option reads " +
           "no file; ceql.spark.match_spaseq(dataset=...) on a classic session's driver is not " +
           "limited, and through Spark Connect it reads no file.")
      .version("0.1.0")
      .stringConf
      .createOptional

  /**
   * `spark.ceql.output.maxBatchBytes`: About how many bytes one Arrow batch of MATCH_CEQL's,
   * MATCH_SPASEQ's or match_stream's output holds (a size as Spark writes them: 1048576, 512k, 64m,
   * 1g), besides spark.sql.execution.arrow.maxRecordsPerBatch rows. A large answer flows as many
   * batches; a task fails when one output row alone is larger.
   */
  val OutputMaxBatchBytes: ConfigEntry[String] =
    SQLConf.buildConf(CeqlConstants.ConfOutputMaxBatchBytes)
      .doc("About how many bytes one Arrow batch of MATCH_CEQL's, MATCH_SPASEQ's or " +
           "match_stream's output holds (a size as Spark writes them: 1048576, 512k, 64m, 1g), " +
           "besides spark.sql.execution.arrow.maxRecordsPerBatch rows. A large answer flows as " +
           "many batches; a task fails when one output row alone is larger.")
      .version("0.1.0")
      .stringConf
      .createWithDefault("64m")

  /** Every setting. */
  val All: Seq[ConfigEntry[_]] = Seq(
    ParserEnabled,
    PrefilterEnabled,
    Python,
    FromFiles,
    SpaseqDatasetPaths,
    OutputMaxBatchBytes
  )

  /**
   * Registers the settings with SQLConf (done once, when this object is first used), so that SET -v
   * lists them and values are checked.
   */
  def register(): Unit = ()
}
