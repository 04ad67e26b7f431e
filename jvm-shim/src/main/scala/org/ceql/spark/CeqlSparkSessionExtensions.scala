package org.ceql.spark

import org.apache.spark.sql.{SparkSession, SparkSessionExtensions}
import org.apache.spark.sql.ceql.{CeqlSqlParser, MatchCeqlFunction}

/**
 * Wires ceql into Spark SQL; list it in `spark.sql.extensions`.
 *
 * It only injects: the MATCH_CEQL table function (a Python UDTF built on the JVM side) and the
 * parser that reads `MATCH_CEQL( <CEQL> )`. The work is done by the classes it names.
 */
class CeqlSparkSessionExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    extensions.injectTableFunction(MatchCeqlFunction.description)
    extensions.injectParser(CeqlSqlParser.inject)
  }
}

object CeqlSparkSessionExtensions {
  /** Registers MATCH_CEQL in a session that was started without the extension. */
  def register(session: SparkSession): Unit = MatchCeqlFunction.register(session)
}
