import { SessionError } from "./errors";

/*
 * What a person types in a search box, turned into an SQLite FTS5 query that cannot fail to parse.
 * FTS5's own syntax breaks on a stray quote, a lone `-`, `AND` at the end or a column name, so the
 * user's text is never passed through: every word becomes a quoted string (quotes doubled), and
 * only this small syntax is read from it:
 *
 *   error handling     both words (in any order)
 *   "exact phrase"     the words next to each other, in this order (an unclosed quote runs to the end)
 *   deploy*            words starting with `deploy`
 *   kafka OR rabbitmq  either word (OR in capitals joins the terms beside it; elsewhere it is left out)
 *   -draft             leaves out what contains `draft`
 *
 * Words are matched after stemming (`porter unicode61`): "deploying" finds "deployed".
 */

export const MAX_QUERY_CHARS = 500;
export const MAX_QUERY_TERMS = 32;

interface Term {
  /** The term as FTS5 reads it: a quoted string, maybe a prefix. */
  fts: string;
  exclude: boolean;
}

/** Whether text holds anything the tokenizer keeps (a letter or a digit); else it matches nothing. */
const SEARCHABLE = /[\p{L}\p{N}]/u;

const isControl = (char: string) => char.charCodeAt(0) < 0x20 || char === "\u007f";

const quote = (text: string) => `"${text.replace(/"/g, '""')}"`;

/** The terms of a query, in order, with `OR` kept as a marker between them. */
function tokens(query: string): Array<Term | "OR"> {
  const out: Array<Term | "OR"> = [];
  let i = 0;
  while (i < query.length) {
    const char = query[i] as string;
    if (/\s/u.test(char)) {
      i++;
      continue;
    }
    let exclude = false;
    if (char === "-" && i + 1 < query.length && !/\s/u.test(query[i + 1] as string)) {
      exclude = true;
      i++;
    }
    if (query[i] === '"') {
      const close = query.indexOf('"', i + 1);
      const end = close < 0 ? query.length : close;
      const phrase = query.slice(i + 1, end);
      i = end + 1;
      const prefix = query[i] === "*";
      if (prefix) i++;
      if (SEARCHABLE.test(phrase)) out.push({ fts: `${quote(phrase)}${prefix ? " *" : ""}`, exclude });
      continue;
    }
    let end = i;
    while (end < query.length && !/\s/u.test(query[end] as string) && query[end] !== '"') end++;
    const word = query.slice(i, end);
    i = end;
    if (word === "OR" && !exclude) {
      out.push("OR");
      continue;
    }
    const prefix = word.endsWith("*");
    const bare = word.replace(/\*+$/, "");
    if (SEARCHABLE.test(bare)) out.push({ fts: `${quote(bare)}${prefix ? " *" : ""}`, exclude });
  }
  return out;
}

/**
 * The FTS5 expression for a query typed by a person; `columns` restricts it to those columns.
 * An empty query, one with nothing to find, or one of too many terms is `invalid_request`.
 */
export function ftsQuery(query: string, columns?: readonly string[]): string {
  if (query.length > MAX_QUERY_CHARS) {
    throw new SessionError("invalid_request", `the query is longer than ${MAX_QUERY_CHARS} characters`);
  }
  if (!query.trim())
    throw new SessionError("invalid_request", "the query is empty: give words to search for");
  // Control characters (NUL ends a string inside SQLite) separate words like spaces do.
  const parsed = tokens(Array.from(query, (char) => (isControl(char) ? " " : char)).join(""));
  const terms = parsed.filter((t): t is Term => t !== "OR");
  if (terms.length > MAX_QUERY_TERMS) {
    throw new SessionError("invalid_request", `a query holds at most ${MAX_QUERY_TERMS} terms`);
  }
  // Adjacent terms joined by OR form one group; groups are all required.
  const groups: string[][] = [];
  const excluded: string[] = [];
  let joinNext = false;
  for (const token of parsed) {
    if (token === "OR") {
      joinNext = groups.length > 0;
      continue;
    }
    if (token.exclude) excluded.push(token.fts);
    else if (joinNext) (groups[groups.length - 1] as string[]).push(token.fts);
    else groups.push([token.fts]);
    joinNext = false;
  }
  if (groups.length === 0) {
    throw new SessionError(
      "invalid_request",
      "the query has no word to search for (words need a letter or a digit; -word only leaves words out)",
      { query },
    );
  }
  let expression = groups
    .map((group) => (group.length > 1 ? `(${group.join(" OR ")})` : group[0]))
    .join(" AND ");
  if (excluded.length > 0) expression = `(${expression}) NOT (${excluded.join(" OR ")})`;
  return columns ? `{${columns.join(" ")}} : (${expression})` : expression;
}

/** Whether an error thrown by SQLite running a MATCH is about the query, not the database. */
export function isQueryError(error: unknown): boolean {
  return /fts5|syntax error|unterminated|unknown special query|no such column/i.test(String(error));
}
