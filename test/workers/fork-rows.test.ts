import { describe, expect, it } from "vitest";
import { api, createSession, info } from "./helpers";

/*
 * A fork moves its path's rows as the source stored them: rows cross as JSON that SQLite writes on
 * one side and reads on the other, in batches and pages of bounded size, and payloads stored in
 * chunks cross whole. What the copy holds must be the source's, byte for byte, whatever the
 * payloads' characters, however many rows and bytes a batch or a page carries.
 */

/** Text of about `chars` characters in which most characters take 2 to 4 UTF-8 bytes. */
function wideText(n: number, chars: number): string {
  const pieces = ["é", "世界", "🙂", '"', "\\", "\n", "\u2028", "a", " ", `${n}`];
  let text = "";
  for (let i = 0; text.length < chars; i++) text += pieces[(n + i) % pieces.length];
  return text;
}

const message = (n: number, chars: number) => ({
  type: "message",
  id: `m${n}`,
  message: { role: "user", content: [{ type: "text", text: wideText(n, chars) }], timestamp: n },
});

async function exported(id: string): Promise<string[]> {
  const res = await api("GET", `/v1/sessions/${id}/export`);
  expect(res.status).toBe(200);
  return res.text.trim().split("\n");
}

describe("a fork's copied rows", () => {
  it("hold the source's entries byte for byte across runs, pages and chunked payloads", async () => {
    const id = await createSession();
    // 2,600 entries (more rows than one run takes), a few of 300,000 characters (more bytes than
    // one run takes), and one of 700,000 (stored in chunks) between them.
    const sizes = Array.from({ length: 2600 }, (_, n) =>
      n === 1300 ? 700_000 : n % 500 === 250 ? 300_000 : 40 + (n % 97),
    );
    for (let from = 0; from < sizes.length; from += 200) {
      const entries = sizes.slice(from, from + 200).map((chars, i) => message(from + i, chars));
      const res = await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } });
      expect(res.status, res.text.slice(0, 500)).toBe(201);
    }
    const fork = `${id}-fork`;
    const forked = await api("POST", `/v1/sessions/${id}/fork`, { body: { entryId: "m2599", id: fork } });
    expect(forked.status, forked.text).toBe(201);

    const [, ...source] = await exported(id);
    const [, ...copy] = await exported(fork);
    expect(copy.length).toBe(2600);
    expect(copy).toEqual(source);
    const [before, after] = [await info(id), await info(fork)];
    expect(after.entryCount).toBe(before.entryCount);
    // The same entries' bytes; each counts its own header beside them (the fork's names its source).
    const headerBytes = (header: object) => JSON.stringify(header).length;
    const sourceHeader = { id, createdAt: before.createdAt, metadata: {} };
    const forkHeader = {
      id: fork,
      createdAt: after.createdAt,
      metadata: {},
      parentSession: after.parentSession,
    };
    expect((after.bytes as number) - headerBytes(forkHeader)).toBe(
      (before.bytes as number) - headerBytes(sourceHeader),
    );
    expect(after.leafId).toBe("m2599");
  }, 120_000);

  it("copies a path that ends at an entry in the middle, and nothing after it", async () => {
    const id = await createSession();
    const entries = Array.from({ length: 30 }, (_, n) => message(n, 50));
    expect((await api("POST", `/v1/sessions/${id}/entries`, { body: { entries } })).status).toBe(201);
    const fork = `${id}-mid`;
    expect(
      (await api("POST", `/v1/sessions/${id}/fork`, { body: { entryId: "m11", id: fork } })).status,
    ).toBe(201);
    const [, ...source] = await exported(id);
    const [, ...copy] = await exported(fork);
    expect(copy).toEqual(source.slice(0, 12));
  });
});
