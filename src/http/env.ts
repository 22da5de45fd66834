import type { DurableEnv } from "../durable";
import type { Caller } from "./auth";

export interface WorkerEnv extends DurableEnv {
  /** Secret: JSON map of SHA-256 (hex) of each API key to its tenant (see README, Auth). */
  API_KEYS?: string;
  /** Local development only: the tenant of requests to a loopback address without a key. */
  DEV_TENANT?: string;
}

export type AppEnv = { Bindings: WorkerEnv; Variables: { caller: Caller } };
