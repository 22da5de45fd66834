import type { Context } from "hono";
import { summarizerFromConfig } from "../core/summarizers";
import type { Summarizer } from "../core/summarizers/summarizer";
import type { MetricPoint } from "../durable/internal";
import { measuredSummarizer, tenantHash, writeMetric } from "../durable/internal";
import type { AppEnv } from "./env";

/*
 * The Worker's metrics (the dataset's layout is in durable/metrics.ts): one data point per request,
 * and the domain events whose work happens in the Worker (forks, imports, compactions asked for
 * over HTTP, and the summarizer calls they make). Without the METRICS binding, nothing is written.
 */

/** Requests without a caller (unauthenticated, health, the viewer) share this index. */
const NO_TENANT = "-";

type RequestPoint = Extract<MetricPoint, { kind: "request" }>;
type RequestFigures = Omit<RequestPoint, "kind" | "route" | "errorCode">;

/** A request's data point: one no route matched is "(none)", one that did not fail has no error code. */
export function recordRequest(
  dataset: AnalyticsEngineDataset | undefined,
  tenant: string | null,
  request: RequestFigures & { route: string | null; errorCode: string | null },
): void {
  const route = request.route ?? "(none)";
  writeMetric(dataset, tenant ?? NO_TENANT, {
    ...request,
    kind: "request",
    route,
    errorCode: request.errorCode ?? "",
  });
}

/** Writes one domain event for the caller's tenant. */
export async function recordEvent(c: Context<AppEnv>, point: MetricPoint): Promise<void> {
  if (!c.env.METRICS) return;
  writeMetric(c.env.METRICS, await tenantHash(c.get("caller").tenant), point);
}

/** The configured summarizer, each of its calls for this session written as a `summary` event. */
export async function summarizerFor(c: Context<AppEnv>, sessionId: string): Promise<Summarizer> {
  const summarizer = summarizerFromConfig(c.env);
  const dataset = c.env.METRICS;
  if (!dataset) return summarizer;
  const tenant = await tenantHash(c.get("caller").tenant);
  return measuredSummarizer(summarizer, (outcome, durationMs) =>
    writeMetric(dataset, tenant, {
      kind: "summary",
      sessionId,
      summarizer: summarizer.name,
      outcome,
      durationMs,
    }),
  );
}

/** Runs `work`, timing it; `record` gets how it ended ("ok" or the error code) and how long it took. */
export async function timed<T>(
  work: () => Promise<T>,
  record: (outcome: string, durationMs: number) => Promise<void>,
): Promise<T> {
  const started = Date.now();
  try {
    const result = await work();
    await record("ok", Date.now() - started);
    return result;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    await record(typeof code === "string" ? code : "internal", Date.now() - started);
    throw error;
  }
}
