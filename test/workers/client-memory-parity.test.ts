import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createClient } from "../../src/client";
import { SessionError } from "../../src/core/errors";
import { MemoryRepo } from "../../src/core/memory";
import type { SessionRepo } from "../../src/core/repo";
import type { Session } from "../../src/core/session";
import type { HeaderPatch } from "../../src/core/session-schemas";
import { user } from "../conformance/fixtures";
import { KEY_A, sid } from "./helpers";

/*
 * The same calls on MemoryRepo and on the client against the Worker: code written against one
 * backend runs unchanged against the other, so each answers alike, or refuses with the same code
 * and writes nothing.
 */

const client = () =>
  createClient({
    baseUrl: "http://sessions.test",
    token: KEY_A,
    fetch: (request) => exports.default.fetch(request),
  });

type Outcome = { ok: unknown } | { error: string };

/** What a call came to: its value, or the code it was refused with. */
async function outcome(call: () => Promise<unknown>): Promise<Outcome> {
  try {
    return { ok: await call() };
  } catch (error) {
    if (error instanceof SessionError) return { error: error.code };
    throw error;
  }
}

/** Runs `case_` on a fresh session of each backend; answers each one's outcome and the session after. */
async function onBoth(
  case_: (repo: SessionRepo, session: Session) => Promise<unknown>,
): Promise<Array<{ outcome: Outcome; entries: number; name?: string; metadata: unknown }>> {
  const results = [];
  for (const repo of [new MemoryRepo(), client()] as SessionRepo[]) {
    const session = await repo.create({ id: sid(), name: "first", metadata: { kept: true } });
    await session.appendMessage(user("hello"));
    const result = await outcome(() => case_(repo, session));
    const info = await session.getInfo();
    results.push({
      outcome: result,
      entries: (await session.getEntries()).length,
      name: info.name,
      metadata: info.metadata,
    });
  }
  return results;
}

async function expectAlike(
  case_: (repo: SessionRepo, session: Session) => Promise<unknown>,
  expected: Outcome,
): Promise<void> {
  const [memory, remote] = await onBoth(case_);
  expect(remote).toEqual(memory);
  expect(memory?.outcome).toEqual(expected);
  // Nothing was written: the session is as it was made.
  expect(memory).toMatchObject({ entries: 1, name: "first", metadata: { kept: true } });
}

describe("MemoryRepo and the client answer the same calls alike", () => {
  it("refuses an entry-type filter that names no type, or an unknown type", async () => {
    await expectAlike((_repo, session) => session.getEntries({ type: [] }), { error: "invalid_request" });
    await expectAlike((_repo, session) => session.getEntries({ type: "bogus" as "message" }), {
      error: "invalid_request",
    });
    await expectAlike((_repo, session) => session.getEntries({ type: ["message", "bogus" as "message"] }), {
      error: "invalid_request",
    });
  });

  it("refuses a session id that could name no session, opened or forked to", async () => {
    await expectAlike((repo) => repo.open("bad id!"), { error: "invalid_request" });
    await expectAlike((repo) => repo.delete("bad id!"), { error: "invalid_request" });
    await expectAlike((_repo, session) => session.fork("bad id!"), { error: "invalid_request" });
    await expectAlike(
      async (_repo, session) => session.fork((await session.getLeafId()) as string, { id: "bad id!" }),
      { error: "invalid_request" },
    );
  });

  it("refuses options to create a session the service refuses, and creates nothing", async () => {
    for (const options of [
      { name: "x".repeat(300_000) },
      { bogus: 1 },
      { metadata: [] as unknown as Record<string, unknown> },
      { expiresAt: "not a time" },
    ]) {
      const results = [];
      for (const repo of [new MemoryRepo(), client()] as SessionRepo[]) {
        const id = sid();
        const created = await outcome(() => repo.create({ id, ...options }));
        results.push({ created, opened: await outcome(() => repo.open(id).then(() => "opened")) });
      }
      expect(results[1], JSON.stringify(options).slice(0, 80)).toEqual(results[0]);
      expect(results[0]).toEqual({ created: { error: "invalid_request" }, opened: { error: "not_found" } });
    }
  });

  it("refuses a header change the service refuses, and changes nothing", async () => {
    for (const patch of [
      { bogus: 1 },
      { name: "a name is appended, not patched" },
      { metadata: "not an object" },
      { systemPrompt: 7 },
      { autoCompact: { contextWindow: 10, reserveTokens: 20 } },
    ]) {
      await expectAlike((_repo, session) => session.updateHeader(patch as unknown as HeaderPatch), {
        error: "invalid_request",
      });
    }
  });

  it("answers the header as the session was created, imported or forked, its name apart from session_info entries", async () => {
    const headers = [];
    for (const repo of [new MemoryRepo(), client()] as SessionRepo[]) {
      const session = await repo.create({ id: sid(), name: "first", systemPrompt: "be brief" });
      await session.appendSessionName("renamed");
      const header = await session.getHeader();
      const updated = await session.updateHeader({ metadata: { changed: true } });
      headers.push({
        name: header.name,
        systemPrompt: header.systemPrompt,
        updated: { name: updated.name, metadata: updated.metadata },
        info: (await session.getInfo()).name,
      });
    }
    expect(headers[1]).toEqual(headers[0]);
    expect(headers[0]).toEqual({
      name: "first",
      systemPrompt: "be brief",
      updated: { name: "first", metadata: { changed: true } },
      info: "renamed",
    });
  });
});
