package org.apache.spark.sql.ceql

import scala.collection.mutable.ArrayBuffer

import org.antlr.v4.runtime.{CharStream, CharStreams, CodePointCharStream, Token}
import org.antlr.v4.runtime.misc.Interval

import org.apache.spark.sql.catalyst.parser.SqlBaseLexer

/**
 * Lexical reading of the inline syntax `MATCH_CEQL( <CEQL> [, name => value]... )`, for every
 * table function whose entry has `inlineCeql` (MATCH_CEQL).
 *
 * It finds such calls among the tokens Spark's own lexer reads in SQL text (so nothing inside
 * a string, raw string, quoted name or comment is ever a call), finds where the CEQL text ends
 * (skipping CEQL strings, quoted names and comments, balancing parentheses) and rewrites each
 * into the table function call `MATCH_CEQL(query => <CEQL as a string literal> [, name =>
 * value]...)`; after a call, Spark's lexer reads on from its `)`. It never interprets CEQL: the
 * engine compiles the text when the table function is analysed.
 *
 * A call's text is CEQL when it starts with SELECT. With `loose`, also when it starts with
 * another word followed by neither `(`, `.`, `,`, `)` nor `=>` (so not a SQL expression
 * argument such as `TABLE(t)`, `concat(...)` or a variable): a misspelt `SELCT * FROM ...`,
 * which then reaches the engine and gets its caret message. The parser asks for loose calls
 * only when Spark's parser refused the statement.
 */
object CeqlSyntax {

  /** One inline call: `function` at `start`, CEQL text in [bodyStart, bodyEnd), options in
   * [bodyEnd, close) (empty or starting with a comma), `)` at `close` (-1 if unclosed). */
  final case class Call(function: String, start: Int, open: Int, bodyStart: Int, bodyEnd: Int,
      close: Int) {
    def closed: Boolean = close >= 0
    def end(textLength: Int): Int = if (closed) close + 1 else textLength
  }

  /** An inline call without its closing parenthesis. */
  final class UnclosedCall(val call: Call) extends IllegalArgumentException(
    s"${call.function}( at position ${call.start} has no closing parenthesis; end the CEQL " +
      "query with ')'")

  /** The names of the functions that take CEQL inline. */
  val functions: Seq[String] = CeqlConstants.TableFunctions.filter(_.inlineCeql).map(_.name)

  /** False if `sql` certainly holds no inline call (a quick test before [[calls]]). */
  def mayHaveCalls(sql: String): Boolean = {
    val upper = sql.toUpperCase(java.util.Locale.ROOT)
    functions.exists(f => upper.contains(f.toUpperCase(java.util.Locale.ROOT)))
  }

  /** Every inline CEQL call of `sql` (text starting with SELECT), in text order. */
  def calls(sql: String): Vector[Call] = calls(sql, loose = false)

  /** Every inline CEQL call of `sql`, in text order (see the object's doc for `loose`). */
  def calls(sql: String, loose: Boolean): Vector[Call] = {
    val out = Vector.newBuilder[Call]
    var toks = new SqlTokens(sql, 0)
    var k = 0
    def at(j: Int): Tok = toks(j)
    while (at(k).code) {
      val t = at(k)
      val function =
        if (t.kind == "IDENTIFIER") functions.find(_.equalsIgnoreCase(t.text)) else None
      val call =
        if (function.isEmpty || (k > 0 && at(k - 1).kind == "DOT") ||
          at(k + 1).kind != "LEFT_PAREN") None
        else inlineCall(function.get, sql, t.start, at(k + 1).start, at(k + 2), at(k + 3), loose)
      call match {
        case Some(c) if !c.closed =>
          out += c
          return out.result()
        case Some(c) =>
          out += c
          toks = new SqlTokens(sql, c.close + 1)
          k = 0
        case None => k += 1
      }
    }
    out.result()
  }

  /** `sql` with every inline call (text starting with SELECT) rewritten; unchanged when there
   * is none. */
  def rewrite(sql: String): String = rewrite(sql, loose = false, DefaultLiterals)

  /** `sql` with every inline call rewritten (see the object's doc for `loose`; `how`: how
   * Spark reads the string literal the CEQL text becomes); unchanged when there is none. */
  def rewrite(sql: String, loose: Boolean, how: Literals): String = {
    val found = calls(sql, loose)
    if (found.isEmpty) return sql
    val sb = new java.lang.StringBuilder
    var last = 0
    for (call <- found) {
      if (!call.closed) throw new UnclosedCall(call)
      sb.append(sql, last, call.open + 1)
      sb.append(CeqlConstants.OptionQuery).append(" => ")
        .append(sqlString(ceqlText(sql, call), how))
      sb.append(sql, call.bodyEnd, call.close + 1)
      last = call.close + 1
    }
    sb.append(sql, last, sql.length)
    sb.toString
  }

  /** The CEQL text of a call, with the CLI's escaped `\;` turned back into `;`. */
  def ceqlText(sql: String, call: Call): String =
    sql.substring(call.bodyStart, call.bodyEnd).replace("\\;", ";").stripTrailing()

  /** How Spark reads string literals: `escaped` is `spark.sql.parser.escapedStringLiterals`,
   * `doubleQuotedNames` is true when `"..."` is a name (`spark.sql.ansi.doubleQuotedIdentifiers`
   * in ANSI mode). */
  final case class Literals(escaped: Boolean, doubleQuotedNames: Boolean)

  /** Spark's default reading of literals. */
  val DefaultLiterals: Literals = Literals(escaped = false, doubleQuotedNames = false)

  /** A text (`what`: "CEQL query", "MATCH_RECOGNIZE body") that no string literal can hold
   * under the session's settings. */
  final class UnwritableQuery(what: String = "CEQL query") extends IllegalArgumentException(
    s"this $what has a quote (') that no SQL string literal can hold while " +
      "spark.sql.parser.escapedStringLiterals and spark.sql.ansi.doubleQuotedIdentifiers are " +
      "both true; set either to false for this statement")

  /** A Spark SQL string literal (adjacent literals, which Spark joins, where one cannot do)
   * whose value is `s` when Spark reads literals as `how` says. When a literal's text is its
   * value (`escaped`; the setting does not make raw strings `R'...'` raw), no literal can end
   * in a lone backslash: such an `s` gets a newline after it. */
  def sqlString(s: String, how: Literals): String = sqlString(s, how, "CEQL query")

  /** [[sqlString]], naming `what` the text is when no literal can hold it. */
  def sqlString(s: String, how: Literals, what: String): String = {
    if (!how.escaped) return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"
    // Spark's lexer still reads `\` and the character after it as one, which then stays in
    // the value as written: so a quote alone changes the quote the literal is written in
    val sb = new java.lang.StringBuilder
    var q = '\''
    sb.append(q)
    var i = 0
    while (i < s.length) {
      val c = s.charAt(i)
      val unit = if (c == '\\' && i + 1 < s.length) 2 else 1
      if (unit == 1 && c == q) {        // end the piece, and write c in the other quote
        if (how.doubleQuotedNames) throw new UnwritableQuery(what)
        q = if (q == '\'') '"' else '\''
        sb.append(c).append(' ').append(q).append(c)
      } else if (unit == 1 && c == '\\') {
        sb.append("\\\n")                     // the lone backslash at the end
      } else sb.append(s, i, i + unit)
      i += unit
    }
    sb.append(q).toString
  }

  /** The names in the FROM clause of a CEQL text (empty when there is none to read). */
  def fromNames(ceql: String): Seq[String] = {
    val names = ArrayBuffer.empty[String]
    var i = skipCeqlSpace(ceql, 0)
    var seenFrom = false
    while (i < ceql.length && !seenFrom) {
      val c = ceql.charAt(i)
      if (c == '\'') i = skipCeqlString(ceql, i)
      else if (c == '`') i = skipQuotedName(ceql, i)
      else if (isCeqlNameStart(c)) {
        val w = ceqlWordEnd(ceql, i)
        seenFrom = ceql.substring(i, w).equalsIgnoreCase("FROM")
        i = w
      } else i += 1
      i = skipCeqlSpace(ceql, i)
    }
    var more = seenFrom
    while (more && i < ceql.length) {
      val c = ceql.charAt(i)
      val (name, next) =
        if (c == '`') {
          val e = skipQuotedName(ceql, i)
          (Some(ceql.substring(i + 1, math.max(i + 1, e - 1)).replace("``", "`")), e)
        } else if (isCeqlNameStart(c)) {
          val e = ceqlWordEnd(ceql, i)
          (Some(ceql.substring(i, e)), e)
        } else (None, i)
      name.foreach(names += _)
      i = skipCeqlSpace(ceql, next)
      more = name.isDefined && i < ceql.length && ceql.charAt(i) == ','
      if (more) i = skipCeqlSpace(ceql, i + 1)
    }
    names.toSeq
  }

  // ------------------------------------------------------------------ the call's extent

  /** The call of `function` (its name at `start`, `(` at `open`) whose first tokens after
   * `(` are `first` and `second`; None when its text is not CEQL. */
  private[ceql] def inlineCall(function: String, sql: String, start: Int, open: Int, first: Tok,
      second: Tok, loose: Boolean): Option[Call] = {
    val body = first.start
    if (first.kind != "SELECT" && !(loose && looksLikeCeql(first, second))) return None
    var depth = 0
    var i = body
    while (i < sql.length) {
      val c = sql.charAt(i)
      if (c == '\'') i = skipCeqlString(sql, i)
      else if (c == '`') i = skipQuotedName(sql, i)
      else if (sql.startsWith("--", i)) i = skipLine(sql, i)
      else if (sql.startsWith("/*", i)) i = skipCeqlComment(sql, i)
      else if (c == '(') { depth += 1; i += 1 }
      else if (c == ')' && depth > 0) { depth -= 1; i += 1 }
      else if (c == ')') return Some(Call(function, start, open, body, i, i))
      else if (c == ',' && depth == 0 && startsOption(sql, i + 1)) {
        return Some(Call(function, start, open, body, i, closeOfOptions(sql, i + 1)))
      } else i += 1
    }
    Some(Call(function, start, open, body, sql.length, -1))
  }

  /** A call's first token that is not SELECT but starts CEQL text rather than a SQL argument:
   * a name, not TABLE, followed by something other than `(`, `.`, `,`, `)`, `=>`. */
  private def looksLikeCeql(first: Tok, second: Tok): Boolean =
    first.text.nonEmpty && isCeqlNameStart(first.text.charAt(0)) &&
      first.text.forall(isSqlWordChar) && !first.text.equalsIgnoreCase("TABLE") &&
      second.code && !Set("LEFT_PAREN", "DOT", "COMMA", "RIGHT_PAREN", "FAT_ARROW")(second.kind)

  /** True if SQL `name =>` follows: the CEQL text has ended, options begin. */
  private def startsOption(sql: String, from: Int): Boolean = {
    val toks = new SqlTokens(sql, from)
    toks(0).code && toks(0).text.nonEmpty && toks(0).text.forall(isSqlWordChar) &&
      toks(1).kind == "FAT_ARROW"
  }

  /** The `)` closing a call whose options (SQL) start at `from`; -1 if there is none. */
  private def closeOfOptions(sql: String, from: Int): Int = {
    val toks = new SqlTokens(sql, from)
    var depth = 0
    var k = 0
    while (toks(k).code) {
      toks(k).kind match {
        case "LEFT_PAREN" => depth += 1
        case "RIGHT_PAREN" if depth == 0 => return toks(k).start
        case "RIGHT_PAREN" => depth -= 1
        case _ =>
      }
      k += 1
    }
    -1
  }

  // ------------------------------------------------------------------ Spark's tokens

  /** One token of Spark's lexer: its symbolic name (`IDENTIFIER`, `LEFT_PAREN`, `SELECT`,
   * `EOF`, ...), where it lies in the text ([start, end), in chars), and its text. */
  private[ceql] final case class Tok(kind: String, start: Int, end: Int, text: String) {
    /** False at the end, and at a quote Spark's lexer found no end for (an unterminated
     * string or quoted name: Spark's parser refuses the statement, and what follows it is
     * that literal's text to the user, so nothing after it is read as a call). */
    def code: Boolean =
      kind != "EOF" && !(kind == "UNRECOGNIZED" && (text == "'" || text == "\"" || text == "`"))
  }

  /** The tokens Spark's parser reads in `sql` from `from` (comments and spaces left out),
   * lexed by Spark's own lexer as it is read, so strings (with escapes, raw, in either
   * quote), quoted names, comments (nested) and hints are found exactly as Spark finds them.
   * Token kinds are read by name, never by number: the numbers differ between Spark lines. */
  private[ceql] final class SqlTokens(sql: String, from: Int) {
    private val lexer =
      new SqlBaseLexer(new UpperCased(CharStreams.fromString(sql.substring(from))))
    lexer.removeErrorListeners()
    private val vocabulary = lexer.getVocabulary
    private val read = ArrayBuffer.empty[Tok]
    private var codePoint = 0   // a code point index of the lexed text (ANTLR counts those)...
    private var char = from     // ...and the same place in `sql`, in chars

    private def offset(cp: Int): Int = {
      char = sql.offsetByCodePoints(char, cp - codePoint)
      codePoint = cp
      char
    }

    /** The `k`-th token (the end's token, kind `EOF`, from there on). */
    def apply(k: Int): Tok = {
      while (read.length <= k && (read.isEmpty || read.last.kind != "EOF")) {
        val t = lexer.nextToken()
        if (t.getType == Token.EOF) read += Tok("EOF", sql.length, sql.length, "")
        else if (t.getChannel == Token.DEFAULT_CHANNEL) {
          val start = offset(t.getStartIndex)
          val end = offset(t.getStopIndex + 1)
          read += Tok(vocabulary.getSymbolicName(t.getType), start, end,
            sql.substring(start, end))
        }
      }
      read(math.min(k, read.length - 1))
    }
  }

  /** Spark's lexer matches the text upper-cased (its keywords are upper case); token texts
   * stay as written. */
  private final class UpperCased(text: CodePointCharStream) extends CharStream {
    override def LA(i: Int): Int = {
      val c = text.LA(i)
      if (c <= 0) c else Character.toUpperCase(c)
    }
    override def consume(): Unit = text.consume()
    override def mark(): Int = text.mark()
    override def release(marker: Int): Unit = text.release(marker)
    override def index(): Int = text.index()
    override def seek(index: Int): Unit = text.seek(index)
    override def size(): Int = text.size()
    override def getSourceName: String = text.getSourceName
    override def getText(interval: Interval): String = text.getText(interval)
  }

  // ------------------------------------------------------------------ lexical helpers

  private[ceql] def isSqlWordChar(c: Char): Boolean = c == '_' || Character.isLetterOrDigit(c)

  private def isCeqlNameStart(c: Char): Boolean = c == '_' || Character.isLetter(c)

  private def wordEnd(s: String, from: Int): Int = {
    var i = from
    while (i < s.length && isSqlWordChar(s.charAt(i))) i += 1
    i
  }

  private def ceqlWordEnd(s: String, from: Int): Int = wordEnd(s, from)

  /** CEQL string: single-quoted, `''` is a quote. */
  private[ceql] def skipCeqlString(s: String, from: Int): Int = {
    var i = from + 1
    while (i < s.length) {
      if (s.charAt(i) == '\'') {
        if (i + 1 < s.length && s.charAt(i + 1) == '\'') i += 2 else return i + 1
      } else i += 1
    }
    s.length
  }

  /** Backquoted name; a doubled backquote stands for one. */
  private[ceql] def skipQuotedName(s: String, from: Int): Int = {
    var i = from + 1
    while (i < s.length) {
      if (s.charAt(i) == '`') {
        if (i + 1 < s.length && s.charAt(i + 1) == '`') i += 2 else return i + 1
      } else i += 1
    }
    s.length
  }

  private[ceql] def skipLine(s: String, from: Int): Int = {
    val nl = s.indexOf('\n', from)
    if (nl < 0) s.length else nl + 1
  }

  /** CEQL's block comments do not nest. */
  private[ceql] def skipCeqlComment(s: String, from: Int): Int = {
    val e = s.indexOf("*/", from + 2)
    if (e < 0) s.length else e + 2
  }

  private def skipCeqlSpace(s: String, from: Int): Int = {
    var i = from
    var moved = true
    while (moved && i < s.length) {
      moved = false
      while (i < s.length && Character.isWhitespace(s.charAt(i))) { i += 1; moved = true }
      if (s.startsWith("--", i)) { i = skipLine(s, i); moved = true }
      else if (s.startsWith("/*", i)) { i = skipCeqlComment(s, i); moved = true }
    }
    i
  }
}
