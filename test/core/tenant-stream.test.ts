import { describe, expect, it } from "vitest";
import { MemoryRepo } from "../../src/core/memory";
import { exportNative } from "../../src/core/native-format";
import type { NumberedLine } from "../../src/core/ndjson";
import { ndjsonLines } from "../../src/core/ndjson";
import { exportTenant, importTenant } from "../../src/core/tenant-stream";
import { assistant, user } from "../conformance/fixtures";

/*
 * The tenant stream on the library's own backend: every session of one repo out as one stream
 * and into another, the same session for session. The service runs the same code over its
 * Durable Objects (test/workers/http-backup.test.ts).
 */

async function text(lines: AsyncIterable<string>): Promise<string> {
  let out = "";
  for await (const line of lines) out += line;
  return out;
}

async function* numbered(stream: string): AsyncGenerator<NumberedLine> {
  yield* ndjsonLines(stream);
}

describe("tenant stream", () => {
  it("copies every session of a memory repo into another, each export the same", async () => {
    const from = new MemoryRepo();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const session = await from.create({ id: `s${i}`, name: `session ${i}`, metadata: { i } });
      const q = await session.appendMessage(user(`question ${i}`));
      await session.appendMessage(assistant(`answer ${i}`));
      await session.appendMessage(assistant(`another answer ${i}`), { parentId: q });
      await session.appendLabel(q, `label ${i}`);
      ids.push(session.id);
    }
    const source = { list: from.list.bind(from), open: from.open.bind(from) };
    const stream = await text(exportTenant(source));
    const to = new MemoryRepo();
    const report = await importTenant(numbered(stream), {
      begin: async (header) => to.createStorage(header),
      finish: async () => undefined,
    });
    expect(report).toMatchObject({ imported: 7, skipped: 0, refused: 0, failed: 0 });
    for (const id of ids) {
      expect(await text(exportNative(await to.open(id)))).toBe(await text(exportNative(await from.open(id))));
      expect(await (await to.open(id)).buildContext()).toEqual(await (await from.open(id)).buildContext());
    }
    // A second import finds them all there.
    const again = await importTenant(numbered(stream), {
      begin: async (header) => to.createStorage(header),
      finish: async () => undefined,
    });
    expect(again.skipped).toBe(7);
  });

  it("takes a session an export stopped in as cut short, and the whole one of the export resumed after it", async () => {
    const from = new MemoryRepo();
    for (let i = 0; i < 3; i++) {
      const session = await from.create({ id: `cut${i}` });
      for (let n = 0; n < 4; n++) await session.appendMessage(user(`message ${n} of ${i}`));
    }
    const source = { list: from.list.bind(from), open: from.open.bind(from) };
    const whole = (await text(exportTenant(source))).split("\n");
    // The export stopped two entries into the second session: resumed after the first's cursor line.
    const cursors = whole.filter((line) => line.includes('"type":"cursor"'));
    const headers = whole.filter((line) => line.includes('"type":"session"'));
    const order = headers.map((line) => (JSON.parse(line) as { id: string }).id);
    const second = whole.indexOf(headers[1] as string);
    const stopped = whole.slice(0, second + 3);
    const after = (JSON.parse(cursors[0] as string) as { cursor: string }).cursor;
    const resumed = await text(exportTenant(source, after));
    const to = new MemoryRepo();
    const report = await importTenant(numbered(`${stopped.join("\n")}\n${resumed}`), {
      begin: async (header) => to.createStorage(header),
      finish: async () => undefined,
    });
    expect(report).toMatchObject({ imported: 3, skipped: 0, refused: 0, failed: 1 });
    expect(report.sessions.map(({ id, status }) => `${id} ${status}`)).toEqual([
      `${order[0]} imported`,
      `${order[1]} failed`,
      `${order[1]} imported`,
      `${order[2]} imported`,
    ]);
    expect(report.sessions[1]).toMatchObject({ error: { message: expect.stringMatching(/cut short/) } });
    for (let i = 0; i < 3; i++) {
      const id = `cut${i}`;
      expect(await text(exportNative(await to.open(id)))).toBe(await text(exportNative(await from.open(id))));
    }
  });

  it("closes a session deleted while it was sent with a not_found error line, which an import skips", async () => {
    const from = new MemoryRepo();
    for (const id of ["kept-0", "gone", "kept-1"]) {
      const session = await from.create({ id });
      for (let n = 0; n < 3; n++) await session.appendMessage(user(`message ${n} of ${id}`));
    }
    const source = { list: from.list.bind(from), open: from.open.bind(from) };
    let stream = "";
    for await (const line of exportTenant(source)) {
      stream += line;
      // Deleted once its header is sent: its entries can no longer be read.
      if (line.startsWith('{"type":"session"') && line.includes('"id":"gone"')) await from.delete("gone");
    }
    const lines = stream.trimEnd().split("\n");
    const header = lines.findIndex((line) => line.includes('"id":"gone"'));
    expect(JSON.parse(lines[header + 1] as string)).toEqual({
      type: "error",
      id: "gone",
      error: { code: "not_found", message: expect.any(String) },
    });
    expect(lines.at(-1)).toBe('{"type":"end","sessions":2}');
    const to = new MemoryRepo();
    const report = await importTenant(numbered(stream), {
      begin: async (header) => to.createStorage(header),
      finish: async () => undefined,
    });
    expect(report).toMatchObject({ imported: 2, skipped: 1, refused: 0, failed: 0, warnings: [] });
    expect(report.sessions.find((s) => s.id === "gone")).toEqual({
      id: "gone",
      status: "skipped",
      error: { code: "not_found", message: expect.stringMatching(/deleted/), line: header + 2 },
    });
    expect((await to.list({})).sessions.map((s) => s.id).sort()).toEqual(["kept-0", "kept-1"]);
  });

  it("imports the sessions of a stream that also holds streams into a store that keeps none, reporting the streams", async () => {
    const from = new MemoryRepo();
    const session = await from.create({ id: "with-streams" });
    await session.appendMessage(user("hello"));
    const source = {
      list: from.list.bind(from),
      open: from.open.bind(from),
      async *streams() {
        yield {
          header: {
            path: "notes",
            contentType: "text/plain",
            ttlSeconds: null,
            expiresAt: null,
            closed: true,
          },
          async *appends() {
            yield { base64: "aGVsbG8=" };
          },
        };
      },
    };
    const stream = await text(exportTenant(source));
    expect(stream).toContain('{"type":"stream","path":"notes","contentType":"text/plain"');
    expect(stream).toContain('{"type":"stream_append","base64":"aGVsbG8="}');
    expect(stream.trimEnd().split("\n").at(-1)).toBe('{"type":"end","sessions":1,"streams":1}');
    const to = new MemoryRepo();
    const report = await importTenant(numbered(stream), {
      begin: async (header) => to.createStorage(header),
      finish: async () => undefined,
    });
    expect(report).toMatchObject({ imported: 1, failed: 0, warnings: [] });
    expect(report.streams).toEqual([
      {
        path: "notes",
        status: "failed",
        error: { code: "invalid_request", message: "this store keeps no streams", line: 5 },
      },
    ]);
    expect(await text(exportNative(await to.open("with-streams")))).toBe(
      await text(exportNative(await from.open("with-streams"))),
    );
  });
});
