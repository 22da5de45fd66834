import type { ForkPathEntry, LeafOptions } from "../../core/internal";
import { headFor } from "../../core/internal";
import type { Sql } from "../sql";
import type { ForkSource } from "../types";
import type { EntryRows, Node } from "./entry-rows";
import type { PathReads } from "./path-reads";

/*
 * The source side of a fork: which rows the new session copies (the path root → target, as stored,
 * in pages) and what `forkExtras` needs to make labels and the name read as in the source. The path
 * is walked by seq alone, and of its entries only those `forkExtras` can act on are read (labels,
 * names, the entries labelled in the source or by a label on the path, and the target), so a fork
 * of a million-entry path holds its seqs, not its entries.
 */

export function forkSource(
  rows: EntryRows,
  paths: PathReads,
  sql: Sql,
  targetId: string,
  position: LeafOptions["position"],
): Omit<ForkSource, "header" | "name"> {
  const target = rows.node(targetId);
  const [targetEntry] = target ? rows.entries([target.seq]) : [];
  const leafId = headFor(targetId, targetEntry, position);
  const seqs = paths.pathSeqs(leafId);
  const labels = rows.labels();
  const onPath = JSON.stringify(seqs);
  // Labels and names on the path, and the entries the source labels: what the extras depend on.
  const shaping = sql<{ seq: number; id: string; type: string }>`
    SELECT seq, id, type FROM entries
    WHERE seq IN (SELECT value FROM json_each(${onPath}))
      AND (type IN ('label', 'session_info') OR id IN (SELECT value FROM json_each(${JSON.stringify(Object.keys(labels))})))`.toArray();
  const payloads = new Map(
    rows
      .entries(shaping.filter((r) => r.type === "label" || r.type === "session_info").map((r) => r.seq))
      .map((e) => [e.seq, e]),
  );
  // And the entries a label on the path names (its label may have been cleared off the path).
  const named = [...payloads.values()].flatMap((e) => (e.type === "label" ? [e.targetId] : []));
  const targets = sql<{ seq: number; id: string; type: string }>`
    SELECT seq, id, type FROM entries
    WHERE seq IN (SELECT value FROM json_each(${onPath})) AND id IN (SELECT value FROM json_each(${JSON.stringify(named)}))`.toArray();
  const last = seqs.at(-1);
  const tail = last === undefined ? [] : [rows.nodeAt(last) as Node];
  const steps = new Map<number, { seq: number; id: string; type: string }>();
  for (const step of [...shaping, ...targets, ...tail]) steps.set(step.seq, step);
  const path: ForkPathEntry[] = [...steps.values()]
    .sort((a, b) => a.seq - b.seq)
    .map((step) => {
      const entry = payloads.get(step.seq);
      if (entry?.type === "label")
        return { id: step.id, type: step.type, targetId: entry.targetId, label: entry.label };
      if (entry?.type === "session_info") return { id: step.id, type: step.type, name: entry.name };
      return { id: step.id, type: step.type };
    });
  return { leafId, seqs, bytes: rows.storedBytes(seqs), path, labels };
}
