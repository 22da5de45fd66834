import type { Summarizer } from "../core/summarizers/summarizer";

/*
 * Metrics, written to Workers Analytics Engine through the optional `METRICS` binding; without it
 * nothing is written and nothing fails. One dataset holds every kind of data point:
 *
 *   index1   the tenant's hash (Analytics Engine samples per index: every tenant keeps its share)
 *   blob1    the kind: "request", or a domain event
 *   blob2…   and double1… as the kind lays them out (`MetricPoint` below, and docs/observability.md, "Metrics")
 *
 * Writing a data point never waits and never throws into the work it measures.
 */

export type MetricPoint =
  /** An HTTP request: its route pattern, method, status class and error code. */
  | {
      kind: "request";
      route: string;
      method: string;
      status: number;
      errorCode: string;
      durationMs: number;
      bytesIn: number;
      bytesOut: number;
    }
  /** Entries written by an append (new ones, not replays). */
  | { kind: "append"; sessionId: string; entries: number; bytes: number }
  /** A context sent: from the head's kept context, or built from the rows. */
  | {
      kind: "context";
      sessionId: string;
      source: "kept" | "built" | "delta";
      bytes: number;
      durationMs: number;
    }
  /** A watcher opened (an event stream or socket), and how many the session has with it. */
  | { kind: "watcher"; sessionId: string; transport: "sse" | "websocket"; watchers: number }
  /** A compaction run, by a caller or by the object itself, and how it ended. */
  | { kind: "compaction"; sessionId: string; trigger: "manual" | "auto"; outcome: string; durationMs: number }
  /** One summarizer call (compaction or branch summary) and how it ended. */
  | { kind: "summary"; sessionId: string; summarizer: string; outcome: "ok" | "failed"; durationMs: number }
  | { kind: "fork"; sessionId: string; sourceId: string; entries: number; bytes: number; durationMs: number }
  | {
      kind: "import";
      sessionId: string;
      format: string;
      entries: number;
      bytes: number;
      warnings: number;
      durationMs: number;
    }
  /** What a session stores, written after each report to the directory (0 once deleted). */
  | { kind: "storage"; sessionId: string; entries: number; bytes: number };

function layout(point: MetricPoint): { blobs: string[]; doubles: number[] } {
  switch (point.kind) {
    case "request": {
      const statusClass = `${Math.floor(point.status / 100)}xx`;
      return {
        blobs: [point.route, point.method, statusClass, point.errorCode],
        doubles: [point.durationMs, point.bytesIn, point.bytesOut, point.status],
      };
    }
    case "append":
      return { blobs: [point.sessionId], doubles: [point.entries, point.bytes] };
    case "context":
      return { blobs: [point.sessionId, point.source], doubles: [point.bytes, point.durationMs] };
    case "watcher":
      return { blobs: [point.sessionId, point.transport], doubles: [point.watchers] };
    case "compaction":
      return { blobs: [point.sessionId, point.trigger, point.outcome], doubles: [point.durationMs] };
    case "summary":
      return { blobs: [point.sessionId, point.summarizer, point.outcome], doubles: [point.durationMs] };
    case "fork":
      return {
        blobs: [point.sessionId, point.sourceId],
        doubles: [point.entries, point.bytes, point.durationMs],
      };
    case "import":
      return {
        blobs: [point.sessionId, point.format],
        doubles: [point.entries, point.bytes, point.durationMs, point.warnings],
      };
    case "storage":
      return { blobs: [point.sessionId], doubles: [point.bytes, point.entries] };
  }
}

/** Writes one data point for the tenant (by its hash), or nothing without the binding. */
export function writeMetric(
  dataset: AnalyticsEngineDataset | undefined,
  tenantHash: string,
  point: MetricPoint,
): void {
  if (!dataset) return;
  const { blobs, doubles } = layout(point);
  try {
    dataset.writeDataPoint({ indexes: [tenantHash], blobs: [point.kind, ...blobs], doubles });
  } catch (error) {
    console.error(JSON.stringify({ type: "metrics", error: String(error).slice(0, 300) }));
  }
}

/** The summarizer, each call timed and written as a `summary` data point. */
export function measuredSummarizer(
  summarizer: Summarizer,
  record: (outcome: "ok" | "failed", durationMs: number) => void,
): Summarizer {
  return {
    name: summarizer.name,
    async summarize(request, signal) {
      const started = Date.now();
      try {
        const result = await summarizer.summarize(request, signal);
        record("ok", Date.now() - started);
        return result;
      } catch (error) {
        record("failed", Date.now() - started);
        throw error;
      }
    },
  };
}
