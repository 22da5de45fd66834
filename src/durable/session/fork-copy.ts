import type { ForkPathEntry, LeafOptions } from "../../core/internal";
import { headFor } from "../../core/internal";
import type { ForkSource } from "../types";
import type { EntryRows } from "./entry-rows";
import type { PathReads } from "./path-reads";

/*
 * The source side of a fork: which rows the new session copies (the path root → target, as stored,
 * in pages) and what `forkExtras` needs to make labels and the name read as in the source.
 */

export function forkSource(
  rows: EntryRows,
  paths: PathReads,
  targetId: string,
  position: LeafOptions["position"],
): Omit<ForkSource, "header" | "name"> {
  const target = rows.node(targetId);
  const [targetEntry] = target ? rows.entries([target.seq]) : [];
  const leafId = headFor(targetId, targetEntry, position);
  const steps = paths.path(leafId);
  const path: ForkPathEntry[] = [];
  const named = steps.filter((r) => r.type === "label" || r.type === "session_info").map((r) => r.seq);
  const payloads = new Map(rows.entries(named).map((e) => [e.seq, e]));
  for (const step of steps) {
    const entry = payloads.get(step.seq);
    if (entry?.type === "label")
      path.push({ id: step.id, type: step.type, targetId: entry.targetId, label: entry.label });
    else if (entry?.type === "session_info") path.push({ id: step.id, type: step.type, name: entry.name });
    else path.push({ id: step.id, type: step.type });
  }
  const seqs = steps.map((step) => step.seq);
  return { leafId, seqs, bytes: rows.storedBytes(seqs), path, labels: rows.labels() };
}
