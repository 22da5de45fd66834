import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { api, createSession, info, KEY_A, sid } from "./helpers";

/** base64 of `bytes` pseudo-random bytes (incompressible, like a real screenshot). */
function base64Image(bytes: number, seed: number): string {
  const data = new Uint8Array(bytes);
  let x = seed;
  for (let i = 0; i < bytes; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    data[i] = x >>> 24;
  }
  let binary = "";
  for (let i = 0; i < bytes; i += 0x8000) binary += String.fromCharCode(...data.subarray(i, i + 0x8000));
  return btoa(binary);
}

const imageMessage = (data: string, id: string) => ({
  type: "message",
  id,
  message: {
    role: "user",
    content: [
      { type: "text", text: `screenshot ${id}` },
      { type: "image", data, mimeType: "image/png" },
    ],
    timestamp: 1,
  },
});

async function readAll(path: string): Promise<{ status: number; text: string; chunks: number }> {
  const res = await exports.default.fetch(`http://sessions.test${path}`, {
    headers: { Authorization: `Bearer ${KEY_A}` },
  });
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = "";
  let chunks = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks++;
    text += decoder.decode(value, { stream: true });
  }
  return { status: res.status, text: text + decoder.decode(), chunks };
}

describe("large entries", () => {
  it("round-trips a 1 MiB image byte for byte through append, context, fork, export and import", async () => {
    const id = await createSession();
    const data = base64Image(1024 * 1024, 7);
    const appended = await api("POST", `/v1/sessions/${id}/entries`, { body: imageMessage(data, "shot") });
    expect(appended.status).toBe(201);
    expect(appended.body.entries[0].message.content[1].data).toBe(data);

    const read = await api("GET", `/v1/sessions/${id}/entries/shot`);
    expect(read.body.message.content[1].data).toBe(data);
    const context = await api("GET", `/v1/sessions/${id}/context`);
    expect(context.body.messages[0].content[1].data).toBe(data);

    const fork = await api("POST", `/v1/sessions/${id}/fork`, { body: { entryId: "shot" } });
    expect(fork.status).toBe(201);
    expect((await api("GET", `/v1/sessions/${fork.body.id}/entries/shot`)).body.message.content[1].data).toBe(
      data,
    );

    const exported = await readAll(`/v1/sessions/${id}/export`);
    const copyId = sid("copy");
    const res = await exports.default.fetch(`http://sessions.test/v1/sessions/import?id=${copyId}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${KEY_A}`, "Content-Type": "application/x-ndjson" },
      body: exported.text,
    });
    expect(res.status).toBe(201);
    expect((await api("GET", `/v1/sessions/${copyId}/entries/shot`)).body.message.content[1].data).toBe(data);
  });

  it("keeps a 12 MiB entry whole (stored in chunks under the 2 MB row limit)", async () => {
    const id = await createSession();
    const data = base64Image(9 * 1024 * 1024, 3);
    expect(
      (await api("POST", `/v1/sessions/${id}/entries`, { body: imageMessage(data, "big") })).status,
    ).toBe(201);
    const back = await api("GET", `/v1/sessions/${id}/entries/big`);
    expect(back.body.message.content[1].data.length).toBe(data.length);
    expect(back.body.message.content[1].data === data).toBe(true);
  });

  it("writes and indexes a batch of many entries of a few hundred KiB each (each stored in its row)", async () => {
    const id = await createSession();
    // 40 messages of 400 KiB: under the size stored in chunks, 16 MiB together in one request.
    const entries = Array.from({ length: 40 }, (_, i) => ({
      id: `b${i}`,
      type: "message",
      message: { role: "user", content: `word${i} ${String(i % 10).repeat(400 * 1024)}`, timestamp: 1 },
    }));
    const written = await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } });
    expect(written.status, written.text.slice(0, 300)).toBe(201);
    const page = await readAll(`/v1/sessions/${id}/entries?limit=1000`);
    const stored = JSON.parse(page.text).entries as Array<{ id: string; message: { content: string } }>;
    expect(stored.map((entry) => entry.id)).toEqual(entries.map((entry) => entry.id));
    expect(stored.every((entry, i) => entry.message.content === entries[i]?.message.content)).toBe(true);
    const found = await api("GET", `/v1/sessions/${id}/search?q=word37`);
    expect(found.status).toBe(200);
    expect(found.body.hits.map((hit: { entryId: string }) => hit.entryId)).toEqual(["b37"]);
  });

  it("serves a session far larger than one RPC answer (32 MiB) page by page", async () => {
    const id = await createSession();
    const count = 48;
    for (let i = 0; i < count; i++) {
      const res = await api("POST", `/v1/sessions/${id}/entries`, {
        body: imageMessage(base64Image(768 * 1024, i), `e${i}`),
      });
      expect(res.status).toBe(201);
    }
    // About 48 MiB of payload: more than one RPC may carry, read in pages on every path.
    const branch = await readAll(`/v1/sessions/${id}/branch`);
    expect(branch.status).toBe(200);
    expect(JSON.parse(branch.text).entries.length).toBe(count);
    const context = await readAll(`/v1/sessions/${id}/context`);
    expect(JSON.parse(context.text).messages.length).toBe(count);
    const page = await readAll(`/v1/sessions/${id}/entries?limit=1000`);
    expect(JSON.parse(page.text).entries.length).toBe(count);
    const exported = await readAll(`/v1/sessions/${id}/export`);
    expect(exported.text.trim().split("\n").length).toBe(count + 1);
    const fork = await api("POST", `/v1/sessions/${id}/fork`, { body: { entryId: `e${count - 1}` } });
    expect(fork.status).toBe(201);
    expect((await info(fork.body.id)).entryCount).toBe(count);
  });

  it("serves a tree whose labels are far more than one RPC answer (32 MiB) whole", async () => {
    const id = await createSession();
    const count = 600;
    const label = (i: number) => `${i}:`.padEnd(65_536, "label ");
    const messages = Array.from({ length: count }, (_, i) => ({
      type: "message",
      id: `m${i}`,
      message: { role: "user", content: `m${i}`, timestamp: 1 },
    }));
    expect((await api("POST", `/v1/sessions/${id}/entries`, { body: { entries: messages } })).status).toBe(
      201,
    );
    // About 39 MiB of labels, each on its own entry; the answer holds every one.
    for (let from = 0; from < count; from += 6) {
      const labels = Array.from({ length: 6 }, (_, i) => ({
        type: "label",
        targetId: `m${from + i}`,
        label: label(from + i),
      }));
      expect((await api("POST", `/v1/sessions/${id}/entries`, { body: { entries: labels } })).status).toBe(
        201,
      );
    }
    const tree = await readAll(`/v1/sessions/${id}/tree`);
    expect(tree.status).toBe(200);
    const labelled: string[] = [];
    let nodes = 0;
    for (let node = JSON.parse(tree.text).roots[0]; node; node = node.children[0]) {
      nodes++;
      if (node.label !== undefined) labelled.push(node.label);
    }
    expect(nodes).toBe(count * 2);
    expect(labelled).toEqual(Array.from({ length: count }, (_, i) => label(i)));
  });
});
