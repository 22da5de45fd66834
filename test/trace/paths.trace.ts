import { exports } from "cloudflare:workers";
import { expect, it } from "vitest";
import { newId } from "../../src/core/ids";

/*
 * The source files a request goes through, each run once before it is traced (so that what a
 * first request does once, making tables or loading settings, is not counted): an append over
 * HTTP, a chunk of a generation's stream, a fork. Printed for docs/architecture.md.
 */

const KEY = "key-a";
/** Longer than the directory's report delay in the Workers project (DIRECTORY_SYNC_MS, 20 ms). */
const SETTLE_MS = 300;
const recorder = globalThis as { __entered?: Set<string> };

async function call(method: string, path: string, body?: unknown, contentType = "application/json") {
  const res = await exports.default.fetch(`http://sessions.test${path}`, {
    method,
    headers: { Authorization: `Bearer ${KEY}`, "Content-Type": contentType },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  expect(res.status, text).toBeLessThan(300);
  return text ? JSON.parse(text) : undefined;
}

/** The files `request` enters, the request run twice and traced the second time. */
async function traced(name: string, request: (round: number) => Promise<unknown>): Promise<string[]> {
  await request(0);
  // What the first run left for the alarm (the directory's reports) is done before the trace.
  await scheduler.wait(SETTLE_MS);
  recorder.__entered = new Set();
  await request(1);
  const files = [...recorder.__entered].sort();
  delete recorder.__entered;
  console.log(`${name}: ${files.length} files\n${files.map((file) => `  ${file}`).join("\n")}`);
  expect(files.length).toBeGreaterThan(0);
  return files;
}

const message = (id: string, text: string) => ({
  id,
  type: "message",
  message: { role: "user", content: text, timestamp: 1_700_000_000_000 },
});

it("lists the files an append, a generation's chunk and a fork go through", async () => {
  const id = `trace-${newId()}`;
  await call("POST", "/v1/sessions", { id });
  await traced("POST /v1/sessions/:sid/entries", (round) =>
    call("POST", `/v1/sessions/${id}/entries`, message(`m${round}`, `append ${round}`)),
  );
  const generation = await call("POST", `/v1/sessions/${id}/generations`, { format: "text" });
  await traced("POST a generation's stream (a chunk)", (round) =>
    call("POST", `/v1/sessions/${id}/generations/${generation.id}/stream`, `chunk ${round} `, "text/plain"),
  );
  await traced("POST /v1/sessions/:sid/fork", (round) =>
    call("POST", `/v1/sessions/${id}/fork`, { entryId: "m1", id: `${id}-fork-${round}` }),
  );
});
