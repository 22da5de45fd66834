import type { SessionEvent, StoredEntry } from "../core/internal";

/** One line for an event of `cf-sessions tail`; `describe` gives an entry's gist. */
export function eventLine(event: SessionEvent, describe: (entry: Record<string, unknown>) => string): string {
  switch (event.event) {
    case "entry": {
      const entry = event.data as StoredEntry;
      const gist = "message" in entry || "summary" in entry || "customType" in entry ? describe(entry) : "";
      const role = "role" in event.data && event.data.role ? ` ${event.data.role}` : "";
      return `${String(entry.seq).padStart(6)}  ${entry.type.padEnd(21)} ${entry.id}  ← ${entry.parentId ?? "-"}  ${gist || role.trim()}`;
    }
    case "leaf":
      return `        leaf → ${event.data.leafId ?? "(none)"}`;
    case "session":
      return `        session ${event.data.id}${event.data.name ? ` “${event.data.name}”` : ""}: ${event.data.entryCount} entries`;
    case "compaction":
      return `        automatic compaction: ${event.data.state}${event.data.lastError ? ` (${event.data.lastError})` : ""}`;
    case "deleted":
      return `        deleted ${event.data.id}`;
    case "closed":
      return `        closed: ${event.data.reason}`;
  }
}
