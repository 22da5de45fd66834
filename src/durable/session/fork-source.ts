import type { EntryRef } from "../../core/append";
import { headFor } from "../../core/append";
import type { StoredEntry } from "../../core/entries";
import type { ForkPathEntry } from "../../core/fork";
import { nonBlank } from "../../core/info";
import { PREVIEW_CHARS } from "../../core/limits";
import { contentText } from "../../core/messages";
import type { LeafOptions } from "../../core/storage";
import type { Sql } from "../sql";
import type { ForkStart, PathFigures } from "../types";
import { readPathPage } from "./copied-rows";
import type { EntryRows, Node } from "./entry-rows";
import type { PathReads } from "./path-reads";

/*
 * The source side of a fork. A fork is answered from what costs the same however long the path:
 * the head's row (which carries what the path holds, see entry-rows.ts), the path's first page
 * from the head up, and what `forkExtras` needs to make labels and the name read as in the source
 * (found through the type and label indexes; the path is walked only as far up as the highest of
 * them). The rest of the path crosses later, a page at a time from where the last one ended
 * (`readPathPage`), while the fork copies it in the background.
 */

type Step = { seq: number; id: string; type: string; parent_id: string | null; depth: number };

export function forkStart(
  rows: EntryRows,
  paths: PathReads,
  storage: SqlStorage,
  sql: Sql,
  targetId: string,
  position: LeafOptions["position"],
  pageBytes: number,
): Omit<ForkStart, "header" | "name"> {
  const target = rows.node(targetId);
  const [targetEntry] = target ? rows.entries([target.seq]) : [];
  const leafId = headFor(targetId, targetEntry, position);
  if (leafId === null) {
    return {
      leafId,
      figures: { entries: 0, messages: 0, bytes: 0, blobBytes: 0 },
      ...NO_SHAPING,
      page: null,
    };
  }
  const head = paths.treeNode(leafId);
  const { entryName, ...shaped } = shaping(rows, paths, sql, head);
  const figures = pathFigures(rows, paths, sql, head);
  return {
    leafId,
    figures: entryName ? { ...figures, entryName } : figures,
    ...shaped,
    page: readPathPage(rows, storage, sql, head.seq, pageBytes),
  };
}

/** Which of `ids` are entries on the path root → `from` (the row of seq `from`), as the planner sees them. */
export function refsOnPath(
  rows: EntryRows,
  paths: PathReads,
  sql: Sql,
  from: number,
  ids: readonly string[],
): Record<string, EntryRef> {
  const bound = rows.nodeAt(from)?.depth ?? 0;
  const found = sql<Step>`SELECT seq, id, type, parent_id, depth FROM entries
    WHERE id IN (SELECT value FROM json_each(${JSON.stringify(ids)})) AND depth <= ${bound}`.toArray();
  return Object.fromEntries(
    onPath(paths, from, found).map((step) => [
      step.id,
      { type: step.type, parentId: step.parent_id } as EntryRef,
    ]),
  );
}

const NO_SHAPING = { labels: {}, path: [], sourceLabels: {}, refs: {} };

/** Those of `steps` on the path root → `from`: walked from `from` up to the highest of them. */
function onPath(paths: PathReads, from: number, steps: readonly Step[]): Step[] {
  if (steps.length === 0) return [];
  const walked = new Set(paths.ancestors(from, Math.min(...steps.map((s) => s.depth))));
  return steps.filter((step) => walked.has(step.seq));
}

/**
 * What the path holds (its entries, messages, bytes and preview), from the head's row; a path of
 * rows stored before paths were counted is counted here, once.
 */
function pathFigures(rows: EntryRows, paths: PathReads, sql: Sql, head: Node): PathFigures {
  const preview = (seq: number | null) => {
    if (seq === null) return undefined;
    const [entry] = rows.entries([seq]);
    const text = entry?.type === "message" ? contentText(entry.message.content) : "";
    return text ? text.slice(0, PREVIEW_CHARS) : undefined;
  };
  if (head.path_bytes !== null && head.depth !== null) {
    const figures: PathFigures = {
      entries: head.depth + 1,
      messages: head.path_messages ?? 0,
      bytes: head.path_bytes,
      blobBytes: head.path_blob_bytes ?? 0,
    };
    const text = preview(head.path_preview);
    if (text !== undefined) figures.preview = text;
    return figures;
  }
  const seqs = paths.ancestors(head.seq).reverse();
  const all = JSON.stringify(seqs);
  const counts = sql<{ entries: number; messages: number; blob_bytes: number }>`
    SELECT count(*) AS entries, total(type = 'message') AS messages, total(blob_bytes) AS blob_bytes
    FROM entries WHERE seq IN (SELECT value FROM json_each(${all}))`.one();
  const figures: PathFigures = {
    entries: counts.entries,
    messages: counts.messages,
    bytes: rows.storedBytes(seqs),
    blobBytes: counts.blob_bytes,
  };
  const users = sql<{ seq: number }>`SELECT seq FROM entries
    WHERE seq IN (SELECT value FROM json_each(${all})) AND type = 'message' AND role = 'user' ORDER BY seq`;
  for (const { seq } of users) {
    const text = preview(seq);
    if (text !== undefined) {
      figures.preview = text;
      break;
    }
  }
  return figures;
}

/**
 * What makes the fork's labels and name read as the source's: the label index its path's label
 * entries make, its name, and what `forkExtras` reads (label and name entries on the path, the
 * entries the source labels or a label on the path names, and the head).
 */
function shaping(
  rows: EntryRows,
  paths: PathReads,
  sql: Sql,
  head: Node,
): Pick<ForkStart, "labels" | "path" | "sourceLabels" | "refs"> & Pick<PathFigures, "entryName"> {
  const depth = head.depth ?? 0;
  // CROSS JOIN keeps the label index the outer loop: joined the other way, SQLite read every entry
  // of the session on every fork (a fork of a 1,000,000-entry path took half a second).
  const candidates = sql<Step>`
    SELECT seq, id, type, parent_id, depth FROM entries
    WHERE type IN ('label', 'session_info') AND depth <= ${depth}
    UNION
    SELECT e.seq, e.id, e.type, e.parent_id, e.depth FROM labels l CROSS JOIN entries e ON e.id = l.target_id
    WHERE e.depth <= ${depth}`.toArray();
  const shaping = onPath(paths, head.seq, candidates);
  const payloads = new Map<number, StoredEntry>(
    rows
      .entries(
        shaping
          .filter((s) => s.type === "label" || s.type === "session_info")
          .map((s) => s.seq)
          .sort((a, b) => a - b),
      )
      .map((entry) => [entry.seq, entry]),
  );
  // The entries a label on the path names (its label may have been cleared off the path).
  const named = [...payloads.values()].flatMap((e) => (e.type === "label" ? [e.targetId] : []));
  const targets = onPath(
    paths,
    head.seq,
    sql<Step>`SELECT seq, id, type, parent_id, depth FROM entries
      WHERE id IN (SELECT value FROM json_each(${JSON.stringify(named)})) AND depth <= ${depth}`.toArray(),
  );
  const steps = new Map<number, Step>();
  for (const step of [...shaping, ...targets, { ...head, depth } as Step]) steps.set(step.seq, step);
  const sourceLabels = rows.labels();
  // Maps, not assignments: an entry may be named `__proto__`.
  const labels = new Map<string, string>();
  const refs = new Map<string, EntryRef>();
  const labelled = new Map<string, string>();
  const path: ForkPathEntry[] = [];
  let entryName: PathFigures["entryName"];
  for (const step of [...steps.values()].sort((a, b) => a.seq - b.seq)) {
    refs.set(step.id, { type: step.type, parentId: step.parent_id } as EntryRef);
    if (Object.hasOwn(sourceLabels, step.id)) labelled.set(step.id, sourceLabels[step.id] as string);
    const entry = payloads.get(step.seq);
    if (entry?.type === "label") {
      path.push({ id: step.id, type: step.type, targetId: entry.targetId, label: entry.label });
      const label = nonBlank(entry.label);
      if (label === undefined) labels.delete(entry.targetId);
      else labels.set(entry.targetId, label);
    } else if (entry?.type === "session_info") {
      path.push({ id: step.id, type: step.type, name: entry.name });
      const name = nonBlank(entry.name);
      entryName = name === undefined ? {} : { name };
    } else {
      path.push({ id: step.id, type: step.type });
    }
  }
  return {
    labels: Object.fromEntries(labels),
    path,
    sourceLabels: Object.fromEntries(labelled),
    refs: Object.fromEntries(refs),
    ...(entryName ? { entryName } : {}),
  };
}
