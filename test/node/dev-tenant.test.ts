import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, startDevServer } from "../support/dev-server";
import { createNetns, type Netns, netnsUnavailable } from "../support/netns";

/*
 * The dev tenant on a server listening on an address other than loopback, as in a container run
 * with --ip 0.0.0.0: the real `wrangler dev`, inside a private network namespace whose `lo` has
 * 10.77.0.1 as well, reached from that address. (test/workers/http-dev-tenant.test.ts covers the
 * rule as the Worker applies it.)
 */

const unavailable = netnsUnavailable();
if (unavailable) console.warn(`skipping the dev tenant tests on a non-loopback address: ${unavailable}`);

describe.skipIf(unavailable !== undefined)("dev tenant on a non-loopback address", () => {
  let netns: Netns;
  const servers: DevServer[] = [];

  beforeAll(async () => {
    netns = await createNetns("10.77.0.1");
  });

  afterAll(async () => {
    for (const server of servers) await server.stop();
    await netns?.close();
  });

  const get = (server: DevServer, headers: Record<string, string>) =>
    netns.request(`${server.url}/v1/sessions`, { headers });

  it("npm start listening there serves no dev tenant, whatever Host or CF-Connecting-IP claim", async () => {
    const server = await startDevServer({ netns, timeoutMs: 90_000 });
    servers.push(server);
    const claims: Array<Record<string, string>> = [
      {},
      { Host: "localhost" },
      { Host: "127.0.0.1:8787" },
      { Host: "localhost", "CF-Connecting-IP": "127.0.0.1" },
    ];
    for (const headers of claims) {
      const res = await get(server, headers);
      expect(res.status, `${JSON.stringify(headers)}: ${res.text}`).toBe(401);
      expect(JSON.parse(res.text).error.code).toBe("unauthorized");
    }
    const write = await netns.request(`${server.url}/v1/sessions`, {
      method: "POST",
      headers: { Host: "localhost", "CF-Connecting-IP": "127.0.0.1", "Content-Type": "application/json" },
      body: JSON.stringify({ id: "written-from-outside" }),
    });
    expect(write.status).toBe(401);
    expect(server.logs()).toMatch(/not a loopback address, so there is no dev tenant/);
  });

  it("a DEV_TENANT set by hand there still refuses a connection from 10.77.0.1 claiming Host: localhost", async () => {
    const server = await startDevServer({ netns, devTenantByHand: true, timeoutMs: 90_000 });
    servers.push(server);
    for (const host of ["localhost", "127.0.0.1:8787", "[::1]:8787"]) {
      const res = await get(server, { Host: host });
      expect(res.status, `${host}: ${res.text}`).toBe(401);
    }
    // Why npm start never sets it there: the local server passes a CF-Connecting-IP written by the
    // client through unchanged, so such a request cannot be told from a local one.
    const forged = await get(server, { Host: "localhost", "CF-Connecting-IP": "127.0.0.1" });
    expect(forged.status).toBe(200);
  });
});
