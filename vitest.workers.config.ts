import { createHash } from "node:crypto";
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { configDefaults, defineConfig } from "vitest/config";
import "./test/support/fake-llm.setup.ts";

const sha256 = (key: string) => createHash("sha256").update(key).digest("hex");

/** Keys the Workers tests authenticate with (test/workers/helpers.ts names them). */
const API_KEYS = JSON.stringify({
  [sha256("key-a")]: "tenant-a",
  [sha256("key-b")]: "tenant-b",
  [sha256("key-c")]: "tenant-c",
  [sha256("key-a-read")]: { tenant: "tenant-a", access: "read" },
  [sha256("key-usage")]: "tenant-usage",
  [sha256("key-few-sessions")]: "tenant-few-sessions",
  [sha256("key-small-sessions")]: "tenant-small-sessions",
  [sha256("key-small-tenant")]: "tenant-small-tenant",
  [sha256("key-mid-sessions")]: "tenant-mid-sessions",
  [sha256("key-restore-quota")]: "tenant-restore-quota",
  [sha256("key-parallel-quota")]: "tenant-parallel-quota",
  [sha256("key-one-session")]: "tenant-one-session",
  [sha256("key-lifted-quota")]: "tenant-lifted-quota",
  [sha256("key-held-quota")]: "tenant-held-quota",
  [sha256("key-takeover-quota")]: "tenant-takeover-quota",
  [sha256("key-settled-quota")]: "tenant-settled-quota",
  [sha256("key-few-streams")]: "tenant-few-streams",
  [sha256("key-import-one-stream")]: "tenant-import-one-stream",
  [sha256("key-stream-bytes")]: "tenant-stream-bytes",
  [sha256("key-stream-usage")]: "tenant-stream-usage",
  [sha256("key-stream-retries")]: "tenant-stream-retries",
  [sha256("key-refused-streams")]: "tenant-refused-streams",
  [sha256("key-answer-room")]: "tenant-answer-room",
});

/** Quotas for tenants of their own (test/workers/quotas.test.ts); every other tenant has none. */
const QUOTAS = JSON.stringify({
  tenants: {
    "tenant-few-sessions": { maxSessions: 2 },
    "tenant-small-sessions": { maxSessionBytes: 4000 },
    "tenant-small-tenant": { maxTenantBytes: 6000 },
    "tenant-mid-sessions": { maxSessionBytes: 200_000 },
    "tenant-restore-quota": { maxSessions: 2, maxTenantBytes: 8000 },
    "tenant-parallel-quota": { maxTenantBytes: 20_000 },
    "tenant-one-session": { maxSessions: 1 },
    "tenant-lifted-quota": { maxSessions: 2 },
    "tenant-held-quota": { maxSessions: 2 },
    "tenant-takeover-quota": { maxSessions: 1 },
    "tenant-settled-quota": { maxTenantBytes: 60_000 },
    "tenant-few-streams": { maxStreams: 3 },
    "tenant-import-one-stream": { maxStreams: 1 },
    "tenant-stream-bytes": { maxTenantBytes: 60_000 },
    "tenant-stream-retries": { maxTenantBytes: 60_000 },
    "tenant-refused-streams": { maxStreams: 2 },
    "tenant-answer-room": { maxSessionBytes: 8000, maxTenantBytes: 12_000 },
  },
});

/** The packages the Worker and its tests import, as each is named in an import. */
const BUNDLED_DEPENDENCIES = [
  "zod",
  "uuid",
  "jose",
  "ipaddr.js",
  "fast-check",
  "hono",
  "hono/body-limit",
  "hono/http-exception",
  "hono/route",
  "hono/utils/http-status",
  "@hono/zod-openapi",
  "@modelcontextprotocol/sdk/client/index.js",
  "@modelcontextprotocol/sdk/client/streamableHttp.js",
  "@modelcontextprotocol/sdk/server/mcp.js",
  "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js",
  "@modelcontextprotocol/sdk/shared/protocol.js",
  "@modelcontextprotocol/sdk/types.js",
];

export default defineConfig({
  plugins: [
    cloudflareTest(({ inject }) => ({
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: {
        bindings: {
          API_KEYS,
          QUOTAS,
          DIRECTORY_SYNC_MS: "20",
          // Forks copy in pages of 2 KiB, and only when something needs the rest or a test runs the
          // alarm: every fork in the suite is read, written and removed in the middle of its copy.
          FORK_COPY_PAGE_BYTES: "2048",
          FORK_COPY_PAUSE_MS: "3600000",
          FAKE_LLM_URL: inject("fakeLlmUrl"),
          // The request log's own tests read every line.
          REQUEST_LOG: "all",
          // Signs the blob URLs of `?blobs=url` (test/workers/blobs.test.ts).
          BLOB_URL_SECRET: "a test secret that is at least 32 bytes long",
          // Seals WebSocket tickets (test/workers/http-socket.test.ts).
          SOCKET_TICKET_SECRET: "a test ticket secret of at least 32 bytes",
        },
        // The suite's own traffic must not trip the service's limiter; a tight one is tested apart.
        ratelimits: {
          RATE_LIMITER: { namespace_id: "1001", simple: { limit: 1_000_000, period: 10 } },
          AUTH_FAILURE_LIMITER: { namespace_id: "1003", simple: { limit: 1_000_000, period: 10 } },
          TIGHT_RATE_LIMITER: { namespace_id: "1002", simple: { limit: 5, period: 10 } },
        },
      },
    })),
  ],
  test: {
    name: "workers",
    // Every file imports the Worker's dependencies anew; bundled once, each is one module to load
    // rather than hundreds (zod's locales, ajv, jose), which was most of a file's start.
    deps: { optimizer: { ssr: { enabled: true, include: BUNDLED_DEPENDENCIES } } },
    // After the Node projects, one file at a time (vitest.node.config.ts).
    sequence: { groupOrder: 1 },
    include: ["test/workers/**/*.test.ts"],
    // Tests at scale take minutes: `npm run test:scale` runs them.
    exclude: process.env.SCALE_TESTS
      ? configDefaults.exclude
      : [...configDefaults.exclude, "**/*.scale.test.ts"],
    // The Worker serves the viewer's bundle, which must be built before it loads.
    globalSetup: ["./test/support/fake-llm.setup.ts", "./scripts/build-viewer.mjs"],
    testTimeout: 60_000,
  },
});
