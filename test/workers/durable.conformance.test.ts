import { env } from "cloudflare:workers";
import type { DurableEnv } from "../../src/durable";
import { DurableRepo } from "../../src/durable";
import { storageConformance } from "../conformance/storage";

storageConformance(
  "DurableRepo (SQLite in a Durable Object)",
  async () => new DurableRepo(env as unknown as DurableEnv, "conformance"),
);
