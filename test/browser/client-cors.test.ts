import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import type { BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type DevServer, startDevServer } from "../support/dev-server";
import { launchChromium } from "./chromium";

/*
 * The typed client in a real browser, on a page of another origin: the service lets an origin
 * in CORS_ALLOWED_ORIGINS create, write and read, and refuses any other before anything is
 * written.
 */

const REPO = fileURLToPath(new URL("../..", import.meta.url));

/** The page's script: the library's own client, bundled for the browser. */
const ENTRY = `
import { createClient } from "./src/client";
window.run = async (baseUrl, id) => {
  try {
    const repo = createClient({ baseUrl });
    const session = await repo.create({ id });
    await session.appendMessage({ role: "user", content: "hello from a page", timestamp: 1 });
    const context = await session.buildContext();
    return { ok: true, messages: context.messages.map((m) => m.content) };
  } catch (error) {
    return { ok: false, name: error.name, code: error.code, message: String(error.message) };
  }
};
`;

let service: DevServer;
let browser: BrowserContext;
let userDataDir: string;
const pages: Server[] = [];
let allowed: string;
let other: string;

/** A page server on loopback serving one page and the bundled client. */
async function pageServer(script: string): Promise<string> {
  const server = createServer((request, response) => {
    if (request.url === "/client.js") {
      response.writeHead(200, { "Content-Type": "text/javascript" }).end(script);
    } else {
      response
        .writeHead(200, { "Content-Type": "text/html" })
        .end('<!doctype html><title>an app</title><script src="/client.js"></script>');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  pages.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  const bundle = await build({
    stdin: { contents: ENTRY, resolveDir: REPO, loader: "ts" },
    bundle: true,
    format: "iife",
    platform: "browser",
    write: false,
    logLevel: "warning",
  });
  const script = bundle.outputFiles[0]?.text ?? "";
  allowed = await pageServer(script);
  other = await pageServer(script);
  service = await startDevServer({ vars: { CORS_ALLOWED_ORIGINS: allowed }, timeoutMs: 90_000 });
  userDataDir = await mkdtemp(join(tmpdir(), "cf-sessions-cors-chromium-"));
  browser = await launchChromium(userDataDir);
});

afterAll(async () => {
  await browser?.close();
  await service?.stop();
  for (const server of pages) server.close();
  if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
});

async function runOn(origin: string, id: string) {
  const page = await browser.newPage();
  await page.goto(origin);
  const result = await page.evaluate(
    ([baseUrl, sessionId]) =>
      (window as unknown as { run(b: string, s: string): Promise<unknown> }).run(
        baseUrl as string,
        sessionId as string,
      ),
    [service.url, id],
  );
  await page.close();
  return result as { ok: boolean; messages?: unknown[]; name?: string; message?: string };
}

describe("the client from a page of another origin", () => {
  test("works from an origin in CORS_ALLOWED_ORIGINS", async () => {
    const result = await runOn(allowed, "from-allowed-page");
    expect(result).toEqual({ ok: true, messages: ["hello from a page"] });
  });

  test("is refused from any other origin, with nothing written", async () => {
    const result = await runOn(other, "from-other-page");
    expect(result.ok).toBe(false);
    expect(result.message).toContain(service.url);
    const res = await fetch(`${service.url}/v1/sessions/from-other-page`);
    expect(res.status).toBe(404);
  });
});
