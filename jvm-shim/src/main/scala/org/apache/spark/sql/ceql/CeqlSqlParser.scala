package org.apache.spark.sql.ceql

import scala.util.control.NonFatal

import org.slf4j.LoggerFactory

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.{FunctionIdentifier, TableIdentifier}
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.parser.{ParameterContext, ParseException, ParserInterface, SqlStatement, SqlStatementSplitResult, TemporalIdentifier}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.trees.Origin
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{DataType, StructType}

/**
 * Spark's parser, plus the inline syntaxes `FROM t MATCH_RECOGNIZE ( … )` (see
 * [[MatchRecognizeSyntax]]) and `MATCH_CEQL( <CEQL> )` (see [[CeqlSyntax]]).
 *
 * Statements are rewritten by [[CeqlSyntax]] into the table function call, then handed to
 * Spark's parser; everything else goes to Spark's parser untouched. When Spark's parser refuses
 * a statement that holds a call whose text starts with another word than SELECT (a misspelt
 * `SELCT`), that call is read as CEQL too and the statement parsed again, so that the engine
 * reports the mistake with its caret. Statement splitting (the `spark-sql` CLI) keeps a CEQL
 * query's `;` inside its call, and a MATCH_RECOGNIZE body's inside its parentheses.
 */
class CeqlSqlParser(val delegate: ParserInterface) extends ParserInterface {

  private def enabled: Boolean = SQLConf.get.getConf(CeqlConf.ParserEnabled)

  /** `sqlText` with inline MATCH_RECOGNIZE clauses, then inline CEQL calls, rewritten
   * (unchanged when disabled or absent). */
  def rewrite(sqlText: String, loose: Boolean = false): String = {
    if (!enabled) return sqlText
    val clauses = MatchRecognizeSyntax.mayHaveClauses(sqlText)
    if (!clauses && !CeqlSyntax.mayHaveCalls(sqlText)) return sqlText
    val conf = SQLConf.get
    val how = CeqlSyntax.Literals(conf.escapedStringLiterals,
      conf.ansiEnabled && conf.doubleQuotedIdentifiers)
    def refuse(what: String, e: Exception) = new ParseException(Some(sqlText), Origin(),
      "PARSE_SYNTAX_ERROR", Map("error" -> s"'$what'", "hint" -> s": ${e.getMessage}"))
    val text =
      if (!clauses) sqlText
      else try MatchRecognizeSyntax.rewrite(sqlText, loose, how)
      catch {
        case e: MatchRecognizeSyntax.UnclosedClause => throw refuse(CeqlConstants.MrClause, e)
        case e: CeqlSyntax.UnwritableQuery => throw refuse(CeqlConstants.MrClause, e)
      }
    if (!CeqlSyntax.mayHaveCalls(text)) return text
    try CeqlSyntax.rewrite(text, loose, how)
    catch {
      case e: CeqlSyntax.UnclosedCall => throw refuse(s"${e.call.function}(", e)
      case e: CeqlSyntax.UnwritableQuery =>
        throw refuse(s"${CeqlSyntax.functions.mkString("/")}(", e)
    }
  }

  /** `parse` of the rewritten text; if Spark's parser refuses it, of the text with loose calls
   * rewritten too (when that changes anything). */
  private def parsing[T](sqlText: String)(parse: String => T): T = {
    val text = rewrite(sqlText)
    try parse(text)
    catch {
      case e: ParseException =>
        val again = try rewrite(sqlText, loose = true) catch { case _: ParseException => text }
        if (again == text) throw e
        parse(again)
    }
  }

  override def parsePlan(sqlText: String): LogicalPlan = parsing(sqlText)(delegate.parsePlan)

  override def parsePlanWithParameters(
      sqlText: String, paramContext: ParameterContext): LogicalPlan =
    parsing(sqlText)(delegate.parsePlanWithParameters(_, paramContext))

  override def parseQuery(sqlText: String): LogicalPlan = parsing(sqlText)(delegate.parseQuery)

  override def splitStatements(sqlText: String): SqlStatementSplitResult = {
    if (!enabled) return delegate.splitStatements(sqlText)
    val n = sqlText.length
    val clauses =
      if (MatchRecognizeSyntax.mayHaveClauses(sqlText)) {
        MatchRecognizeSyntax.clauses(sqlText, loose = true)
      } else Vector.empty
    // CEQL calls are read with the clauses' bodies blanked (MATCH_RECOGNIZE's text is not SQL)
    val blanked = sqlText.toCharArray
    for (c <- clauses; i <- c.bodyStart until c.bodyEnd(n)) blanked(i) = ' '
    val bodies = clauses.map(c => (c.bodyStart, c.end(n))) ++
      CeqlSyntax.calls(new String(blanked), loose = true).map(c => (c.bodyStart, c.end(n)))
    if (bodies.isEmpty) return delegate.splitStatements(sqlText)
    val masked = sqlText.toCharArray
    for ((from, to) <- bodies; i <- from until to if masked(i) == ';') masked(i) = ' '
    val maskedText = new String(masked)
    val split = delegate.splitStatements(maskedText)
    var cursor = 0
    def original(piece: String): Option[String] = {
      if (piece.isEmpty) return Some(piece)
      val at = maskedText.indexOf(piece, cursor)
      if (at < 0) return None
      cursor = at + piece.length
      Some(sqlText.substring(at, cursor))
    }
    val statements = split.completeStatements.map(s => original(s.statement).map(
      SqlStatement(_, s.terminator)))
    val partial = original(split.partialStatement)
    if (statements.exists(_.isEmpty) || partial.isEmpty) delegate.splitStatements(sqlText)
    else SqlStatementSplitResult(statements.flatten, partial.get, split.hasUnclosedComment)
  }

  override def parseExpression(sqlText: String): Expression = delegate.parseExpression(sqlText)
  override def parseTableIdentifier(sqlText: String): TableIdentifier =
    delegate.parseTableIdentifier(sqlText)
  override def parseFunctionIdentifier(sqlText: String): FunctionIdentifier =
    delegate.parseFunctionIdentifier(sqlText)
  override def parseMultipartIdentifier(sqlText: String): Seq[String] =
    delegate.parseMultipartIdentifier(sqlText)
  override def parseTemporalTableIdentifier(sqlText: String): TemporalIdentifier =
    delegate.parseTemporalTableIdentifier(sqlText)
  override def parseRoutineParam(sqlText: String): StructType =
    delegate.parseRoutineParam(sqlText)
  override def parseTableSchema(sqlText: String): StructType = delegate.parseTableSchema(sqlText)
  override def parseDataType(sqlText: String): DataType = delegate.parseDataType(sqlText)
}

object CeqlSqlParser {
  private val log = LoggerFactory.getLogger(classOf[CeqlSqlParser])

  /** For `injectParser`: this parser over Spark's, or Spark's alone if this one fails or
   * `spark.ceql.parser.enabled` is false at start-up. */
  def inject(session: SparkSession, delegate: ParserInterface): ParserInterface = {
    try {
      if (!session.sparkContext.getConf.get(CeqlConf.ParserEnabled)) return delegate
      val parser = new CeqlSqlParser(delegate)
      CeqlSyntax.functions.foreach(f =>
        CeqlSyntax.rewrite(s"SELECT * FROM $f( SELECT * FROM s WHERE A ; B )"))
      MatchRecognizeSyntax.rewrite(
        s"SELECT * FROM s ${CeqlConstants.MrClause} ( PATTERN (A B) DEFINE A AS x > 0 )")
      parser
    } catch {
      case e: Throwable if NonFatal(e) || e.isInstanceOf[LinkageError] =>
        val f = CeqlSyntax.functions.mkString("/")
        log.warn(s"ceql: the $f( <CEQL> ) syntax is off, Spark's parser is used alone " +
          s"(the shim's parser failed to start: $e). $f(TABLE(t), query => '...') " +
          "still works.", e)
        delegate
    }
  }
}
