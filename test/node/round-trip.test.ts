import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createClient } from "../../src/client";
import { MemoryRepo } from "../../src/core/memory";
import { exportNative, parseNative } from "../../src/core/native-format";
import type { Session } from "../../src/core/session";
import { JSONLRepo } from "../../src/node";
import { assistant, user } from "../conformance/fixtures";
import type { DevServer } from "../support/dev-server";
import { startDevServer } from "../support/dev-server";

let server: DevServer;
let folder: string;

beforeAll(async () => {
  server = await startDevServer();
  folder = mkdtempSync(join(tmpdir(), "round-trip-"));
}, 120_000);

afterAll(async () => {
  await server?.stop();
  rmSync(folder, { recursive: true, force: true });
});

async function text(session: Session): Promise<string> {
  let out = "";
  for await (const line of exportNative(session)) out += line;
  return out;
}

it("moves a session memory → native → JSONL files → the service → native, exactly", async () => {
  const memory = await new MemoryRepo().create({
    id: "trip",
    name: "first",
    systemPrompt: "sys",
    metadata: { k: [1, 2] },
  });
  const q = await memory.appendMessage(user("question"));
  const a = await memory.appendMessage(assistant("answer"));
  await memory.appendLabel(a, "good");
  await memory.appendMessage(assistant("other answer"), { parentId: q });
  await memory.appendSessionName("renamed");
  await memory.appendCompaction({ summary: "S", tokensBefore: 10, firstKeptEntryId: q });
  await memory.setLeafId(a);
  await memory.appendMessage({
    role: "user",
    content: [{ type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" }],
    timestamp: 9,
  });
  const original = await text(memory);

  const files = new JSONLRepo(folder);
  const onDisk = await files.importSession(parseNative(original));
  expect(await text(onDisk)).toBe(original);
  await files.cleanup();
  const reopened = await new JSONLRepo(folder).open("trip");
  const fromDisk = await text(reopened);
  expect(fromDisk).toBe(original);

  const client = createClient({ baseUrl: server.url });
  const { session: remote } = await client.importFile(fromDisk, { id: "trip" });
  let exported = "";
  for await (const line of client.storage(remote.id).exportLines()) exported += line;
  expect(exported).toBe(original);
  expect(await remote.buildContext()).toEqual(await memory.buildContext());
  expect(await remote.getTree()).toEqual(await memory.getTree());
}, 60_000);
