import { spawn } from "node:child_process";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../src/client";
import { user } from "../conformance/fixtures";
import type { DevServer } from "../support/dev-server";
import { startDevServer } from "../support/dev-server";

/* `cf-sessions tail` against the real service (wrangler dev), as a person runs it. */

const root = resolve(import.meta.dirname, "../..");
let server: DevServer;

beforeAll(async () => {
  server = await startDevServer();
}, 120_000);

afterAll(async () => {
  await server?.stop();
});

/** Runs the command line, handing its output over line by line. */
function run(args: string[]) {
  const child = spawn(process.execPath, [join(root, "dist/cli.js"), ...args], {
    env: { ...process.env, CF_SESSIONS_URL: server.url },
  });
  const lines: string[] = [];
  let rest = "";
  let waiting: (() => void) | undefined;
  child.stdout.on("data", (chunk: Buffer) => {
    rest += chunk.toString("utf8");
    const parts = rest.split("\n");
    rest = parts.pop() ?? "";
    lines.push(...parts);
    waiting?.();
  });
  const exited = new Promise<number>((done) => child.on("close", (code) => done(code ?? 1)));
  return {
    lines,
    exited,
    async until(match: (line: string) => boolean, timeoutMs = 15_000): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (!lines.some(match)) {
        if (Date.now() > deadline) throw new Error(`no such line in ${JSON.stringify(lines)}`);
        await new Promise<void>((resolve) => {
          waiting = resolve;
          setTimeout(resolve, 100);
        });
      }
    },
  };
}

describe("cf-sessions tail", () => {
  it("follows a session as it is written, from a seq, and stops when it is deleted", async () => {
    const client = createClient({ baseUrl: server.url });
    const session = await client.create({ id: `tail-${Date.now()}` });
    await session.appendMessage(user("before"));
    await session.appendMessage(user("replayed"));
    const tail = run(["tail", session.id, "--after", "1", "--json"]);
    await tail.until((line) => line.includes('"event":"leaf"'));
    await session.appendMessage(user("live one"));
    await tail.until((line) => line.includes("live one"));
    await session.delete();
    expect(await tail.exited).toBe(0);
    const events = tail.lines.map((line) => JSON.parse(line));
    expect(events.map((e) => e.event)).toEqual(["session", "entry", "leaf", "entry", "leaf", "deleted"]);
    expect(events.filter((e) => e.event === "entry").map((e) => e.data.message.content)).toEqual([
      "replayed",
      "live one",
    ]);
  }, 60_000);

  it("prints one readable line per event", async () => {
    const client = createClient({ baseUrl: server.url });
    const session = await client.create({ id: `tail-text-${Date.now()}`, name: "followed" });
    const tail = run(["tail", session.id]);
    await tail.until((line) => line.includes("leaf →"));
    await session.appendMessage(user("hello there"));
    await tail.until((line) => line.includes("user: hello there"));
    await session.delete();
    expect(await tail.exited).toBe(0);
    expect(tail.lines[0]).toMatch(/session tail-text-\d+ “followed”: 0 entries/);
    expect(tail.lines.some((line) => /^\s+1 {2}message\s+\S+ {2}← - {2}user: hello there$/.test(line))).toBe(
      true,
    );
    expect(tail.lines[tail.lines.length - 1]).toMatch(/deleted tail-text-/);
  }, 60_000);

  it("prints an answer's text as it is generated, then the entry it became", async () => {
    const client = createClient({ baseUrl: server.url });
    const session = await client.create({ id: `tail-generation-${Date.now()}` });
    await session.appendMessage(user("tell me"));
    const writer = await session.generate();
    await writer.append("The first words, ");
    // Joining late, tail shows what was written before it came, then the rest as it comes.
    const tail = run(["tail", session.id]);
    await tail.until((line) => line.includes(`generation ${writer.id} started`));
    await writer.append("then more\nand a second line");
    await writer.complete();
    await tail.until((line) => line.includes(`generation ${writer.id} finished`));
    await session.delete();
    expect(await tail.exited).toBe(0);
    const text = tail.lines.filter((line) => line.startsWith("        ▸ ") || /^ {10}\S/.test(line));
    expect(text).toEqual(["        ▸ The first words, then more", "          and a second line"]);
    const answer = tail.lines.findIndex((line) => line.includes(writer.id) && line.includes("assistant:"));
    expect(answer).toBeGreaterThan(tail.lines.indexOf(text[1] as string));
  }, 60_000);

  it("prints a session's name and an answer's text as visible escapes, never as controls the terminal obeys", async () => {
    const client = createClient({ baseUrl: server.url });
    const name = "evil\u001b]0;owned\u0007\u001b[2J\nFAKE row";
    const session = await client.create({ id: `tail-controls-${Date.now()}`, name });
    await session.appendMessage(user("tell me"));
    const tail = run(["tail", session.id]);
    await tail.until((line) => line.includes("leaf →"));
    const writer = await session.generate();
    await writer.append("first\u001b[2J line\r\nsecond\u009b\tline");
    await writer.complete();
    await tail.until((line) => line.includes(`generation ${writer.id} finished`));
    await session.delete();
    expect(await tail.exited).toBe(0);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds.
    expect(tail.lines.join("\n")).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(tail.lines[0]).toMatch(
      /^ +session tail-controls-\d+ “evil\\u001b\]0;owned\\u0007\\u001b\[2J\\u000aFAKE row”: 1 entries$/,
    );
    expect(tail.lines.filter((line) => line.includes("FAKE row"))).toHaveLength(1);
    const text = tail.lines.filter((line) => line.startsWith("        ▸ ") || /^ {10}\S/.test(line));
    expect(text).toEqual(["        ▸ first\\u001b[2J line", "          second\\u009b    line"]);
  }, 60_000);

  it("prints in-flight chunks as JSON lines with --json", async () => {
    const client = createClient({ baseUrl: server.url });
    const session = await client.create({ id: `tail-chunks-${Date.now()}` });
    const tail = run(["tail", session.id, "--json"]);
    await tail.until((line) => line.includes('"event":"leaf"'));
    const writer = await session.generate();
    await tail.until((line) => line.includes('"event":"generation"'));
    await writer.append("live ");
    await tail.until((line) => line.includes('"event":"chunk"'));
    await writer.append("text");
    await writer.stop();
    await tail.until((line) => line.includes('"state":"stopped"'));
    await session.delete();
    expect(await tail.exited).toBe(0);
    const chunks = tail.lines.map((line) => JSON.parse(line)).filter((event) => event.event === "chunk");
    expect(chunks.map((chunk) => chunk.text).join("")).toBe("live text");
    expect(chunks.every((chunk) => chunk.generation === writer.id && typeof chunk.offset === "string")).toBe(
      true,
    );
  }, 60_000);
});
