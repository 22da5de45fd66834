import { env } from "cloudflare:workers";
import type { DurableEnv } from "../../src/durable/internal";
import { DurableRepo } from "../../src/durable/internal";
import { storageConformance } from "../conformance/storage";

storageConformance(
  "DurableRepo (SQLite in a Durable Object)",
  async () => new DurableRepo(env as unknown as DurableEnv, "conformance"),
);
