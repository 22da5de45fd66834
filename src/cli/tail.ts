import type { SessionEvent, StoredEntry } from "../core/internal";
import { entryLine, gist } from "./entry-line";

/** One line for an event of `cf-sessions tail`. */
export function eventLine(event: SessionEvent): string {
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
    case "deleted":
      return `        deleted ${event.data.id}`;
    case "closed":
      return `        closed: ${event.data.reason}`;
  }
}
