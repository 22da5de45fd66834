import type { GenerationChunk, RemoteSession } from "../client";
import type { StoredEntry } from "../core/entries";
import { SessionError } from "../core/errors";
import type { SessionEvent } from "../core/events";
import type { GenerationInfo } from "../core/generations/generation-schemas";
import { entryLine, gist } from "./entry-line";
import { type Output, terminalSafe } from "./output";

/** One line for an event of `cf-sessions tail` (to print through `terminalSafe`). */
function eventLine(event: SessionEvent): string {
  switch (event.event) {
    case "entry": {
      const entry = event.data as StoredEntry;
      const text = "message" in entry || "summary" in entry || "customType" in entry ? gist(entry) : "";
      const role = "role" in event.data && event.data.role ? String(event.data.role) : "";
      return entryLine(entry, text || role);
    }
    case "leaf":
      return `        leaf → ${event.data.leafId ?? "(none)"}`;
    case "session":
      return `        session ${event.data.id}${event.data.name ? ` “${event.data.name}”` : ""}: ${event.data.entryCount} entries`;
    case "compaction":
      return `        automatic compaction: ${event.data.state}${event.data.lastError ? ` (${event.data.lastError})` : ""}`;
    case "generation": {
      const { id, state, parentId, format, entryIds, stoppedBy } = event.data;
      if (state === "open") return `        generation ${id} started under ${parentId ?? "-"} (${format})`;
      const how =
        state === "stopped" ? `stopped${stoppedBy === "abandoned" ? " (abandoned)" : ""}` : "finished";
      return `        generation ${id} ${how} → ${(entryIds ?? []).join(", ")}`;
    }
    case "deleted":
      return `        deleted ${event.data.id}`;
    case "closed":
      return `        closed: ${event.data.reason}`;
  }
}

/** Indentation of in-flight text, under the event lines. */
const TEXT_INDENT = "        ";

/**
 * Follows a session for `cf-sessions tail`: its events, one line each, and the text of answers in
 * flight as it is generated (each generation from its stream, from its start when tail joins
 * late), then the entry it became. With `json`, one JSON object a line: the events, and for
 * in-flight text `{"event":"chunk","generation":…,"offset":…,"text":…}`.
 */
export async function followSession(
  session: RemoteSession,
  output: Output,
  { after, json, signal }: { after?: number; json: boolean; signal: AbortSignal },
): Promise<void> {
  const followers = new Map<string, Promise<void>>();
  // The generation whose text line is open (written without its line end yet).
  let open: string | undefined;
  const closeLine = () => {
    if (open !== undefined) output.write("\n");
    open = undefined;
  };
  const line = (text: string) => {
    closeLine();
    output.out(text);
  };
  const text = (generation: string, chunk: GenerationChunk) => {
    if (json)
      return line(JSON.stringify({ event: "chunk", generation, offset: chunk.offset, text: chunk.text }));
    if (chunk.text === "") return;
    if (open !== generation) {
      closeLine();
      output.write(`${TEXT_INDENT}▸ `);
      open = generation;
    }
    // The answer's own lines stay lines, indented; a tab is layout, the other controls are shown.
    const lines = chunk.text.split(/\r?\n/).map((part) => terminalSafe(part.replace(/\t/g, "    ")));
    output.write(lines.join(`\n${TEXT_INDENT}  `));
  };
  const follow = async (generation: GenerationInfo) => {
    try {
      for await (const chunk of session.follow(generation, { signal })) text(generation.id, chunk);
    } catch (error) {
      // Gone already (its stream's retention window closed): its entry tells what it was.
      if (error instanceof SessionError && error.code === "not_found") return;
      line(
        terminalSafe(
          `${TEXT_INDENT}(the text of ${generation.id} cannot be followed: ${(error as Error).message})`,
        ),
      );
    }
  };
  for await (const event of session.watch({ after, signal })) {
    // An answer's entry comes once its text has all been shown.
    if (event.event === "entry") await followers.get(event.data.id);
    line(json ? JSON.stringify(event) : terminalSafe(eventLine(event)));
    if (event.event === "generation" && event.data.state === "open" && !followers.has(event.data.id))
      followers.set(event.data.id, follow(event.data));
  }
  closeLine();
}
