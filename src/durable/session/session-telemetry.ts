import { logBackgroundFailure, tenantHash } from "../log-line";
import type { MetricPoint } from "../metrics";
import { writeMetric } from "../metrics";
import type { SessionStore } from "./session-store";

/*
 * What the object tells of its session outside itself: data points for the session's tenant
 * (nothing without the METRICS binding), and log lines for work in the background that failed.
 * Neither needs the session to exist: without one, no data point is written and a log line names
 * no tenant.
 */

export class SessionTelemetry {
  /** The METRICS binding, as the object's environment holds it when a point is written. */
  readonly #metrics: () => AnalyticsEngineDataset | undefined;
  readonly #session: SessionStore;

  constructor(metrics: () => AnalyticsEngineDataset | undefined, session: SessionStore) {
    this.#metrics = metrics;
    this.#session = session;
  }

  /** Whether data points are written at all (the METRICS binding is there). */
  get measuring(): boolean {
    return this.#metrics() !== undefined;
  }

  /** Writes a data point for this session's tenant (nothing without the METRICS binding). */
  async metric(point: MetricPoint): Promise<void> {
    const metrics = this.#metrics();
    if (!metrics || !this.#session.exists) return;
    writeMetric(metrics, await tenantHash(this.#session.state.tenant), point);
  }

  async logFailure(task: string, error: unknown, fields?: Record<string, number | string>): Promise<void> {
    const state = this.#session.exists ? this.#session.state : undefined;
    await logBackgroundFailure(task, state?.tenant ?? "", state?.header.id, error, fields);
  }
}
