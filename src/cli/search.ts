import type { RemoteRepo } from "../client";
import type { HeaderMatch, SearchHit, SessionMatch, TenantSearchResult } from "../core/search";
import { type Output, oneLine, oneOf, terminalSafe } from "./output";

/*
 * `cf-sessions search <query> [--session <id>]`: the tenant's sessions matching a query, best first,
 * or one session's entries, newest first (after its name or system prompt when they match), each
 * with its matches marked «so». The tenant's best sessions are read whole, over as many answers as
 * the service needs to carry them.
 */

/** A snippet with its matches marked for a terminal: «match». */
function markMatches(snippet: string, highlights: readonly [number, number][]): string {
  let out = "";
  let at = 0;
  for (const [start, end] of highlights) {
    out += `${snippet.slice(at, start)}«${snippet.slice(start, end)}»`;
    at = end;
  }
  return oneLine(out + snippet.slice(at), 160);
}

function headerLine(match: HeaderMatch): string {
  const field = match.field === "name" ? "name" : "system prompt";
  return `${"".padStart(6)}  header  ${field}  ${markMatches(match.snippet, match.highlights)}`;
}

function hitLine(hit: SearchHit): string {
  const where = `${hit.role ?? hit.type}${hit.onBranch ? "" : " (off branch)"}${hit.field === "thinking" ? " [thinking]" : ""}`;
  return terminalSafe(
    `${String(hit.seq).padStart(6)}  ${hit.entryId}  ${where}  ${markMatches(hit.snippet, hit.highlights)}`,
  );
}

export async function search(
  client: RemoteRepo,
  query: string,
  output: Output,
  options: { session?: string; limit?: number; order?: string; thinking?: boolean; json: boolean },
): Promise<number> {
  const limit = options.limit === undefined ? {} : { limit: options.limit };
  if (options.session !== undefined) {
    const order = oneOf("order", options.order, ["newest", "rank"] as const);
    const page = await client.storage(options.session).search({
      q: query,
      ...limit,
      ...(order === undefined ? {} : { order }),
      ...(options.thinking ? { thinking: true } : {}),
    });
    if (page.indexing)
      output.err(
        "note: entries of a large write are still being indexed; a search a moment later finds them too\n",
      );
    if (options.json) output.out(JSON.stringify(page));
    else {
      const lines = [...(page.header ?? []).map(headerLine), ...page.hits.map(hitLine)];
      output.out(lines.length === 0 ? "no matches" : lines.join("\n"));
    }
    return 0;
  }
  const results: TenantSearchResult[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.search(query, { ...limit, ...(cursor === undefined ? {} : { cursor }) });
    results.push(...page.results);
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
  if (options.json) output.out(JSON.stringify(results));
  else if (results.length === 0) output.out("no matches");
  else {
    const lines: string[] = [];
    for (const result of results) {
      lines.push(terminalSafe(`${result.session.id}  ${result.session.name ?? ""}`.trimEnd()));
      for (const match of result.matches as SessionMatch[])
        lines.push(terminalSafe(`    ${match.field}: ${markMatches(match.snippet, match.highlights)}`));
    }
    output.out(lines.join("\n"));
  }
  return 0;
}
