import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { WorkerEnv } from "../../src/http/env";
import worker from "../../src/worker";
import { sid } from "./helpers";

/*
 * The dev tenant of `npm start`, as the Worker sees requests: the URL's host comes from the Host
 * header, the connecting address from CF-Connecting-IP (which workerd's local server sets from the
 * socket). test/node/dev-tenant.test.ts runs the real server on a non-loopback address.
 */

const ctx = () => ({ waitUntil() {}, passThroughOnException() {}, props: {} }) as unknown as ExecutionContext;

const devEnv: WorkerEnv = { ...env, DEV_TENANT: "dev", API_KEYS: undefined };

const LOCAL = { "CF-Connecting-IP": "127.0.0.1" };

async function send(
  url: string,
  headers: Record<string, string>,
  init: { method?: string; id?: string } = {},
) {
  const method = init.method ?? "GET";
  const body = method === "POST" ? JSON.stringify({ id: init.id ?? sid("dev") }) : undefined;
  const res = await worker.fetch(
    new Request(url, {
      method,
      headers: body ? { ...headers, "Content-Type": "application/json" } : headers,
      body,
    }),
    devEnv,
    ctx(),
  );
  const json = (await res.json()) as { error?: { code: string } };
  return { status: res.status, code: json.error?.code };
}

const refused = { status: 401, code: "unauthorized" };

describe("dev tenant", () => {
  it("serves a request without a key from a loopback address to a loopback host", async () => {
    for (const [url, address] of [
      ["http://127.0.0.1:8787/v1/sessions", "127.0.0.1"],
      ["http://localhost:8787/v1/sessions", "127.0.0.1"],
      ["http://[::1]:8787/v1/sessions", "::1"],
      ["http://127.0.0.2:8787/v1/sessions", "127.0.0.2"],
      // IPv4 loopback as IPv6, in each way it is written.
      ["http://[::ffff:127.0.0.1]:8787/v1/sessions", "::ffff:7f00:1"],
      ["http://127.0.0.1:8787/v1/sessions", "0:0:0:0:0:ffff:127.0.0.1"],
    ] as const) {
      expect((await send(url, { "CF-Connecting-IP": address })).status, url).toBe(200);
    }
    const id = sid("dev");
    expect((await send("http://127.0.0.1:8787/v1/sessions", LOCAL, { method: "POST", id })).status).toBe(201);
    expect((await send(`http://127.0.0.1:8787/v1/sessions/${id}`, LOCAL)).status).toBe(200);
  });

  it("refuses a loopback Host from an address that is not loopback, or from no known address", async () => {
    const claims: Array<Record<string, string>> = [
      {},
      { "CF-Connecting-IP": "10.77.0.1" },
      { "CF-Connecting-IP": "192.168.1.20" },
      { "CF-Connecting-IP": "::ffff:10.0.0.1" },
      { "CF-Connecting-IP": "127.0.0.1.example.com" },
      { "CF-Connecting-IP": "127.0.0.256" },
      // Shortened, octal or hex IPv4 is no address an edge or a socket writes.
      { "CF-Connecting-IP": "127.1" },
      { "CF-Connecting-IP": "0177.0.0.1" },
      { "CF-Connecting-IP": "0x7f.0.0.1" },
      { "CF-Connecting-IP": "::ffff:a00:1" },
      { "CF-Connecting-IP": "127.0.0.1, 10.77.0.1" },
      { "CF-Connecting-IP": "" },
    ];
    const attempted: string[] = [];
    for (const headers of claims) {
      for (const url of ["http://localhost/v1/sessions", "http://127.0.0.1:8787/v1/sessions"]) {
        const what = `${url} ${JSON.stringify(headers)}`;
        expect(await send(url, headers), what).toEqual(refused);
        attempted.push(sid("dev"));
        expect(await send(url, headers, { method: "POST", id: attempted.at(-1) }), what).toEqual(refused);
      }
    }
    for (const id of attempted) {
      expect((await send(`http://127.0.0.1:8787/v1/sessions/${id}`, LOCAL)).status).toBe(404);
    }
  });

  it("refuses a foreign Host on a loopback connection (DNS rebinding)", async () => {
    for (const url of ["http://rebind.example.com:8787/v1/sessions", "http://127.0.0.1.nip.io/v1/sessions"]) {
      expect(await send(url, LOCAL), url).toEqual(refused);
    }
  });

  it("does not exist without DEV_TENANT", async () => {
    const deployed = { ...env, DEV_TENANT: undefined, API_KEYS: undefined };
    const res = await worker.fetch(
      new Request("http://127.0.0.1:8787/v1/sessions", { headers: LOCAL }),
      deployed,
      ctx(),
    );
    expect(res.status).toBe(401);
  });
});
