import { runConformanceTests } from "@durable-streams/server-conformance-tests";
import { afterAll, beforeAll, describe } from "vitest";
import type { DevServer } from "../support/dev-server";
import { startDevServer } from "../support/dev-server";

/*
 * The Durable Streams protocol's own conformance suite (`@durable-streams/server-conformance-
 * tests`), whole, against the service as `npm start` runs it: loopback requests are the dev
 * tenant's, so the suite's requests need no key. Its optional subscription APIs stay off. The
 * suite sends one CORS preflight from https://example.com, which the service answers only for
 * origins it lists: that one is listed here.
 */

let server: DevServer | undefined;
// The suite reads `baseUrl` when each test runs, so it can be set once the server is up.
const target = { baseUrl: "" };

describe("the Durable Streams conformance suite", () => {
  beforeAll(async () => {
    server = await startDevServer({ vars: { CORS_ALLOWED_ORIGINS: "https://example.com" } });
    target.baseUrl = server.url;
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
  });

  runConformanceTests(target);
});
