package org.apache.spark.sql.ceql

import java.nio.charset.StandardCharsets
import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._
import scala.sys.process.{Process, ProcessLogger}

import org.apache.spark.SparkEnv
import org.apache.spark.api.python.{PythonFunction, PythonUtils, SimplePythonFunction}
import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.internal.SQLConf

/**
 * The Python side of MATCH_CEQL as Spark's Python runner wants it: a PythonFunction whose
 * command is a pickled reference to the importable class `ceql.spark._udtf.MatchCeql`, so no
 * Python code has to register anything.
 */
object CeqlPython {
  val Module = "ceql.spark._udtf"
  val HandlerClass = "MatchCeql"
  /** Names the Python to start; else `spark.pyspark.python`, `PYSPARK_PYTHON`, `python3`. */
  val PythonConf = "spark.ceql.python"

  private val functions = new ConcurrentHashMap[String, PythonFunction]()

  /** `pickle.dumps` of the class, by reference: protocol 2, GLOBAL opcode, STOP. */
  val command: Array[Byte] =
    ("\u0080\u0002c" + Module + "\n" + HandlerClass + "\n.").getBytes(StandardCharsets.ISO_8859_1)

  /** The Python executable MATCH_CEQL starts, from the settings above. */
  def pythonExec(): String = {
    val fromSql = Option(SQLConf.get.getConfString(PythonConf, "")).filter(_.nonEmpty)
    def fromSpark = Option(SparkEnv.get).flatMap(_.conf.getOption("spark.pyspark.python"))
    fromSql.orElse(fromSpark).orElse(sys.env.get("PYSPARK_PYTHON")).getOrElse("python3")
  }

  /** The function for the current settings (checked once per Python executable). */
  def function(): PythonFunction = {
    val exec = pythonExec()
    val known = functions.get(exec)
    if (known != null) return known
    val created = create(exec)
    functions.putIfAbsent(exec, created)
    created
  }

  private def create(exec: String): PythonFunction = {
    val pythonPath = PythonUtils.mergePythonPaths(
      PythonUtils.sparkPythonPath, sys.env.getOrElse("PYTHONPATH", ""))
    val version = probe(exec, pythonPath)
    SimplePythonFunction(
      command = command.toSeq,
      envVars = Map("PYTHONPATH" -> pythonPath).asJava,
      pythonIncludes = List.empty[String].asJava,
      pythonExec = exec,
      pythonVer = version,
      broadcastVars = List.empty.asJava,
      accumulator = null)
  }

  /** Starts `exec` once: it must import the handler; returns its `major.minor` version. */
  private def probe(exec: String, pythonPath: String): String = {
    val script =
      s"import sys, $Module; print('%d.%d' % sys.version_info[:2])"
    val out = new StringBuilder
    val err = new StringBuilder
    val code =
      try {
        Process(Seq(exec, "-c", script), None, "PYTHONPATH" -> pythonPath)
          .!(ProcessLogger(line => out.append(line).append('\n'),
            line => err.append(line).append('\n')))
      } catch {
        case e: java.io.IOException =>
          err.append(e.getMessage)
          -1
      }
    if (code != 0) {
      val why = err.toString.trim.linesIterator.toSeq.lastOption.getOrElse(s"exit code $code")
      throw new AnalysisException(
        errorClass = "TABLE_VALUED_FUNCTION_FAILED_TO_ANALYZE_IN_PYTHON",
        messageParameters = Map("msg" ->
          (s"MATCH_CEQL cannot use the Python '$exec' ($why). Point PYSPARK_PYTHON (or " +
            s"$PythonConf) to a Python where `import ceql` works, e.g. the one ceql is " +
            "installed in.")))
    }
    out.toString.trim
  }
}
