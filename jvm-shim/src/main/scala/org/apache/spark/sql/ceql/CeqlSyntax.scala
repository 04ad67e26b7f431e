package org.apache.spark.sql.ceql

import scala.collection.mutable.ArrayBuffer

/**
 * Lexical reading of the inline syntax `MATCH_CEQL( <CEQL> [, name => value]... )`, for every
 * table function whose entry has `inlineCeql` (MATCH_CEQL).
 *
 * It finds such calls in SQL text (skipping Spark strings, quoted names and comments), finds
 * where the CEQL text ends (skipping CEQL strings, quoted names and comments, balancing
 * parentheses) and rewrites each into the table function call
 * `MATCH_CEQL(query => '<CEQL>' [, name => value]...)`. It never interprets CEQL: the engine
 * compiles the text when the table function is analysed.
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
    var i = 0
    val n = sql.length
    while (i < n) {
      val c = sql.charAt(i)
      if (c == '\'' || c == '"') i = skipSqlString(sql, i)
      else if (c == '`') i = skipQuotedName(sql, i)
      else if (sql.startsWith("--", i)) i = skipLine(sql, i)
      else if (sql.startsWith("/*", i)) i = skipSqlComment(sql, i)
      else if (isSqlWordChar(c)) {
        val w = wordEnd(sql, i)
        val function = functions.find(f =>
          w - i == f.length && sql.regionMatches(true, i, f, 0, w - i))
        if (function.isDefined && (i == 0 || sql.charAt(i - 1) != '.')) {
          inlineCall(function.get, sql, i, w, loose) match {
            case Some(call) =>
              out += call
              i = call.end(n)
            case None => i = w
          }
        } else {
          i = w
        }
      } else i += 1
    }
    out.result()
  }

  /** `sql` with every inline call (text starting with SELECT) rewritten; unchanged when there
   * is none. */
  def rewrite(sql: String): String = rewrite(sql, loose = false)

  /** `sql` with every inline call rewritten (see the object's doc for `loose`); unchanged when
   * there is none. */
  def rewrite(sql: String, loose: Boolean): String = {
    val found = calls(sql, loose)
    if (found.isEmpty) return sql
    val sb = new java.lang.StringBuilder
    var last = 0
    for (call <- found) {
      if (!call.closed) throw new UnclosedCall(call)
      sb.append(sql, last, call.open + 1)
      sb.append(CeqlConstants.OptionQuery).append(" => ").append(sqlString(ceqlText(sql, call)))
      sb.append(sql, call.bodyEnd, call.close + 1)
      last = call.close + 1
    }
    sb.append(sql, last, sql.length)
    sb.toString
  }

  /** The CEQL text of a call, with the CLI's escaped `\;` turned back into `;`. */
  def ceqlText(sql: String, call: Call): String =
    sql.substring(call.bodyStart, call.bodyEnd).replace("\\;", ";").stripTrailing()

  /** A Spark SQL string literal holding `s` exactly. */
  def sqlString(s: String): String =
    "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"

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

  private def inlineCall(function: String, sql: String, start: Int,
      afterName: Int, loose: Boolean): Option[Call] = {
    val open = skipSqlSpace(sql, afterName)
    if (open >= sql.length || sql.charAt(open) != '(') return None
    val body = skipSqlSpace(sql, open + 1)
    val w = wordEnd(sql, body)
    val select = w - body == 6 && sql.regionMatches(true, body, "SELECT", 0, 6)
    if (!select && !(loose && looksLikeCeql(sql, body, w))) return None
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
        return Some(Call(function, start, open, body, i, closeOfOptions(sql, i)))
      } else i += 1
    }
    Some(Call(function, start, open, body, sql.length, -1))
  }

  /** A call's first word `[body, w)` that is not SELECT but starts CEQL text rather than a SQL
   * argument: a name, not TABLE, followed by something other than `(`, `.`, `,`, `)`, `=>`. */
  private def looksLikeCeql(sql: String, body: Int, w: Int): Boolean = {
    if (w == body || !isCeqlNameStart(sql.charAt(body))) return false
    if (w - body == 5 && sql.regionMatches(true, body, "TABLE", 0, 5)) return false
    val next = skipSqlSpace(sql, w)
    next < sql.length && !"(.,)".contains(sql.charAt(next)) && !sql.startsWith("=>", next)
  }

  /** True if `name =>` follows (after spaces): the CEQL text has ended, options begin. */
  private def startsOption(sql: String, from: Int): Boolean = {
    val w0 = skipSqlSpace(sql, from)
    val w1 = wordEnd(sql, w0)
    w1 > w0 && sql.startsWith("=>", skipSqlSpace(sql, w1))
  }

  /** The `)` closing a call whose options (SQL) start at `from`; -1 if there is none. */
  private def closeOfOptions(sql: String, from: Int): Int = {
    var depth = 0
    var i = from
    while (i < sql.length) {
      val c = sql.charAt(i)
      if (c == '\'' || c == '"') i = skipSqlString(sql, i)
      else if (c == '`') i = skipQuotedName(sql, i)
      else if (sql.startsWith("--", i)) i = skipLine(sql, i)
      else if (sql.startsWith("/*", i)) i = skipSqlComment(sql, i)
      else if (c == '(') { depth += 1; i += 1 }
      else if (c == ')' && depth == 0) return i
      else if (c == ')') { depth -= 1; i += 1 }
      else i += 1
    }
    -1
  }

  // ------------------------------------------------------------------ lexical helpers

  private def isSqlWordChar(c: Char): Boolean = c == '_' || Character.isLetterOrDigit(c)

  private def isCeqlNameStart(c: Char): Boolean = c == '_' || Character.isLetter(c)

  private def wordEnd(s: String, from: Int): Int = {
    var i = from
    while (i < s.length && isSqlWordChar(s.charAt(i))) i += 1
    i
  }

  private def ceqlWordEnd(s: String, from: Int): Int = wordEnd(s, from)

  /** Spark string: quote-delimited, backslash escapes a character. */
  private def skipSqlString(s: String, from: Int): Int = {
    val q = s.charAt(from)
    var i = from + 1
    while (i < s.length && s.charAt(i) != q) i += (if (s.charAt(i) == '\\') 2 else 1)
    math.min(i + 1, s.length)
  }

  /** CEQL string: single-quoted, `''` is a quote. */
  private def skipCeqlString(s: String, from: Int): Int = {
    var i = from + 1
    while (i < s.length) {
      if (s.charAt(i) == '\'') {
        if (i + 1 < s.length && s.charAt(i + 1) == '\'') i += 2 else return i + 1
      } else i += 1
    }
    s.length
  }

  /** Backquoted name; a doubled backquote stands for one. */
  private def skipQuotedName(s: String, from: Int): Int = {
    var i = from + 1
    while (i < s.length) {
      if (s.charAt(i) == '`') {
        if (i + 1 < s.length && s.charAt(i + 1) == '`') i += 2 else return i + 1
      } else i += 1
    }
    s.length
  }

  private def skipLine(s: String, from: Int): Int = {
    val nl = s.indexOf('\n', from)
    if (nl < 0) s.length else nl + 1
  }

  /** Spark's bracketed comments nest. */
  private def skipSqlComment(s: String, from: Int): Int = {
    var depth = 0
    var i = from
    while (i < s.length) {
      if (s.startsWith("/*", i)) { depth += 1; i += 2 }
      else if (s.startsWith("*/", i)) {
        depth -= 1
        i += 2
        if (depth == 0) return i
      } else i += 1
    }
    s.length
  }

  /** CEQL's block comments do not nest. */
  private def skipCeqlComment(s: String, from: Int): Int = {
    val e = s.indexOf("*/", from + 2)
    if (e < 0) s.length else e + 2
  }

  private def skipSqlSpace(s: String, from: Int): Int = {
    var i = from
    var moved = true
    while (moved && i < s.length) {
      moved = false
      while (i < s.length && Character.isWhitespace(s.charAt(i))) { i += 1; moved = true }
      if (s.startsWith("--", i)) { i = skipLine(s, i); moved = true }
      else if (s.startsWith("/*", i)) { i = skipSqlComment(s, i); moved = true }
    }
    i
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
