import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildSessionContext as piBuildSessionContext, SessionManager } from "@mariozechner/pi-coding-agent";
import { afterAll, describe, expect, it } from "vitest";
import type { SessionContext } from "../../src/core/context";
import { MemoryRepo } from "../../src/core/memory";
import { exportPi, parsePi } from "../../src/core/pi-format";
import type { Session } from "../../src/core/session";
import { backends } from "./backends";
import { withDistinctIds } from "./pi-opening";

/*
 * Every real pi session file in test/fixtures/pi (see the README there for where each comes from)
 * imports, and our context equals pi's `buildSessionContext` at the head and at every entry; our
 * pi export, reopened by pi's SessionManager, gives the same contexts and the session's name.
 */

const folder = join(import.meta.dirname, "../fixtures/pi");
const files = readdirSync(folder)
  .filter((name) => name.endsWith(".jsonl"))
  .sort();
const scratch = mkdtempSync(join(tmpdir(), "pi-fixtures-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** pi's reading of a file, from a copy (pi migrates a file it opens in place). */
function openInPi(name: string, text: string): SessionManager {
  const path = join(scratch, name);
  return withDistinctIds(() => {
    writeFileSync(path, text);
    return SessionManager.open(path, scratch);
  });
}

type PiContext = ReturnType<typeof piBuildSessionContext>;

/*
 * Contexts are compared at every entry of files of a thousand entries. Whole, message by message,
 * that is a quadratic amount of data; so at each entry the sequence of messages (role and time of
 * each) is compared, and the first and last message whole: every message of a file is the last one
 * at its own entry, so each is compared whole somewhere, and its place everywhere. At the head,
 * the whole context is compared.
 */
function outline(messages: readonly object[]): string {
  return messages
    .map((message) => {
      const m = message as { role?: unknown; timestamp?: unknown; summary?: unknown };
      return `${String(m.role)}@${String(m.timestamp)}${typeof m.summary === "string" ? `:${m.summary.length}` : ""}`;
    })
    .join("\n");
}

function expectSame(ours: SessionContext | PiContext, pi: PiContext, where: string, whole = false) {
  if (whole) expect({ where, messages: ours.messages }).toEqual({ where, messages: pi.messages });
  else {
    expect(outline(ours.messages), where).toBe(outline(pi.messages));
    expect(ours.messages[0], where).toEqual(pi.messages[0]);
    expect(ours.messages.at(-1), where).toEqual(pi.messages.at(-1));
  }
  expect(ours.thinkingLevel, where).toBe(pi.thinkingLevel);
  expect(ours.model, where).toEqual(pi.model);
}

/** Our ids in append order, without `leaf` records. */
async function entryIds(session: Session): Promise<string[]> {
  const ids: string[] = [];
  for await (const entry of session.allEntries()) if (entry.type !== "leaf") ids.push(entry.id);
  return ids;
}

async function exportText(session: Session): Promise<string> {
  let text = "";
  for await (const line of exportPi(session)) text += line;
  return text;
}

/**
 * Our contexts equal pi's for the same file, at the head and at every entry (or every `every`th
 * and every compaction). A version 1 file has no ids: pi and we each give its entries new ones,
 * in file order, so entries pair up by position.
 */
async function expectContextsLikePi(session: Session, manager: SessionManager, every = 1) {
  const piEntries = manager.getEntries();
  const ours = await entryIds(session);
  expect(ours).toHaveLength(piEntries.length);
  expectSame(await session.buildContext(), manager.buildSessionContext(), "head", true);
  for (const [i, entry] of piEntries.entries()) {
    if (i % every !== 0 && entry.type !== "compaction") continue;
    expectSame(
      await session.buildContext({ leafId: ours[i] as string }),
      piBuildSessionContext(piEntries, entry.id),
      `entry ${i}`,
    );
  }
}

describe("real pi session files", () => {
  it("are there to test", () => {
    expect(files).toEqual(expect.arrayContaining(["before-compaction.jsonl", "large-session.jsonl"]));
  });

  for (const name of files) {
    describe(name, () => {
      const text = readFileSync(join(folder, name), "utf8");

      it("imports with no repair, to pi's context at the head and at every entry", async () => {
        const parsed = parsePi(text);
        expect(parsed.warnings).toEqual([]);
        const session = await new MemoryRepo().importSession(parsed);
        await expectContextsLikePi(session, openInPi(name, text));
      });

      it("exports a file pi opens to the same contexts, with the session's name", async () => {
        const parsed = parsePi(text);
        parsed.header.name = `imported ${name}`;
        const session = await new MemoryRepo().importSession(parsed);
        const reopened = openInPi(`export-${name}`, await exportText(session));
        expect(reopened.getSessionName()).toBe(`imported ${name}`);
        expectSame(await session.buildContext(), reopened.buildSessionContext(), "head", true);
        // Ours equal pi's reading of the original at every entry (above), so pi's reading of the
        // export is compared with that, entry by entry.
        const original = openInPi(name, text).getEntries();
        const exported = reopened.getEntries();
        const ids = await entryIds(session);
        for (const [i, entry] of original.entries()) {
          const id = ids[i] as string;
          expect(exported[i]?.id).toBe(id);
          expectSame(
            piBuildSessionContext(exported, id),
            piBuildSessionContext(original, entry.id),
            `entry ${i}`,
          );
        }
      });

      for (const backend of backends()) {
        it(`stores and reopens to the same head context (${backend.name})`, async () => {
          const repo = await backend.repo();
          const session = await repo.importSession(parsePi(text));
          const expected = openInPi(`head-${name}`, text).buildSessionContext();
          expectSame(await (await repo.open(session.id)).buildContext(), expected, "head", true);
        });
      }
    });
  }
});

describe("hand-edited pi files (a line holding two entries)", () => {
  const cases: Array<[string, number]> = [
    ["compact.jsonl", 1013],
    ["session.jsonl", 440],
  ];
  for (const [name, line] of cases) {
    it(`refuses ${name} naming line ${line}; without it, it imports to what pi shows`, async () => {
      // Deliberate difference: pi skips a corrupt line silently, we refuse the file and name it.
      const text = readFileSync(join(folder, "hand-edited", name), "utf8");
      expect(() => parsePi(text)).toThrow(new RegExp(`^line ${line}: not valid JSON`));
      const lines = text.split("\n");
      const without = [...lines.slice(0, line - 1), ...lines.slice(line)].join("\n");
      const parsed = parsePi(without);
      expect(parsed.warnings).toEqual([]);
      const session = await new MemoryRepo().importSession(parsed);
      // At the head, every compaction and every tenth entry: the files above are checked at all.
      await expectContextsLikePi(session, openInPi(name, text), 10);
    });
  }
});
