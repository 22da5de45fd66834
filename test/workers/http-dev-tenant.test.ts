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

async function request(url: string, headers: Record<string, string>, workerEnv = devEnv, method = "GET") {
  const init: RequestInit = { method, headers };
  if (method === "POST") {
    init.body = JSON.stringify({ id: sid("dev") });
    (init.headers as Record<string, string>)["Content-Type"] = "application/json";
  }
  const res = await worker.fetch(new Request(url, init), workerEnv, ctx());
  const body = (await res.json()) as { error?: { code: string } };
  return { status: res.status, code: body.error?.code };
}

describe("dev tenant", () => {
  it("serves a request without a key from a loopback address to a loopback host", async () => {
    for (const [url, address] of [
      ["http://127.0.0.1:8787/v1/sessions", "127.0.0.1"],
      ["http://localhost:8787/v1/sessions", "127.0.0.1"],
      ["http://[::1]:8787/v1/sessions", "::1"],
      ["http://127.0.0.2:8787/v1/sessions", "127.0.0.2"],
    ] as const) {
      expect((await request(url, { "CF-Connecting-IP": address })).status, url).toBe(200);
    }
    expect(
      (
        await request(
          "http://127.0.0.1:8787/v1/sessions",
          { "CF-Connecting-IP": "127.0.0.1" },
          devEnv,
          "POST",
        )
      ).status,
    ).toBe(201);
  });

  it("refuses a loopback Host from an address that is not loopback, or from no known address", async () => {
    for (const headers of <Array<Record<string, string>>>[
      {},
      { "CF-Connecting-IP": "10.77.0.1" },
      { "CF-Connecting-IP": "192.168.1.20" },
      { "CF-Connecting-IP": "::ffff:10.0.0.1" },
      { "CF-Connecting-IP": "127.0.0.1.example.com" },
      { "CF-Connecting-IP": "127.0.0.256" },
      { "CF-Connecting-IP": "127.0.0.1, 10.77.0.1" },
      { "CF-Connecting-IP": "" },
    ]) {
      for (const url of ["http://localhost/v1/sessions", "http://127.0.0.1:8787/v1/sessions"]) {
        const get = await request(url, headers);
        expect(get, `${url} ${JSON.stringify(headers)}`).toEqual({ status: 401, code: "unauthorized" });
        const post = await request(url, headers, devEnv, "POST");
        expect(post, `${url} ${JSON.stringify(headers)}`).toEqual({ status: 401, code: "unauthorized" });
      }
    }
  });

  it("refuses a foreign Host on a loopback connection (DNS rebinding)", async () => {
    for (const url of ["http://rebind.example.com:8787/v1/sessions", "http://127.0.0.1.nip.io/v1/sessions"]) {
      expect(await request(url, { "CF-Connecting-IP": "127.0.0.1" })).toEqual({
        status: 401,
        code: "unauthorized",
      });
    }
  });

  it("does not exist without DEV_TENANT", async () => {
    const deployed = { ...env, DEV_TENANT: undefined, API_KEYS: undefined };
    expect(
      await request("http://127.0.0.1:8787/v1/sessions", { "CF-Connecting-IP": "127.0.0.1" }, deployed),
    ).toEqual({
      status: 401,
      code: "unauthorized",
    });
  });
});
