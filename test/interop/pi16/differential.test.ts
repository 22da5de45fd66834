import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type SessionEntry as PiEntry,
  buildSessionContext as piBuildSessionContext,
  SessionManager,
} from "@earendil-works/pi-coding-agent";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../../src/client";
import type { SessionContext } from "../../../src/core/context";
import { MemoryRepo } from "../../../src/core/memory";
import { exportPi, parsePi } from "../../../src/core/pi-format";
import type { SessionRepo } from "../../../src/core/repo";
import type { Session } from "../../../src/core/session";
import type { DevServer } from "../../support/dev-server";
import { startDevServer } from "../../support/dev-server";
import { backends } from "../backends";
import { withDistinctIds } from "../pi-opening";
import { sessionArbitrary, writePiSession } from "./pi16-sessions";

/*
 * Random sessions written by pi 1.6's own SessionManager import into every backend (memory, JSONL
 * files, and the service: its Durable Objects through the HTTP client) with pi 1.6's context at
 * the head and at every entry, and our pi export, reopened by pi 1.6, gives the same contexts.
 */

const scratch = mkdtempSync(join(tmpdir(), "pi16-differential-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

let file = 0;
/** pi's reading of a file, written to disk as pi would find it. */
function openInPi(text: string): SessionManager {
  const path = join(scratch, `${++file}.jsonl`);
  return withDistinctIds(() => {
    writeFileSync(path, text);
    return SessionManager.open(path, scratch);
  });
}

type PiContext = ReturnType<typeof piBuildSessionContext>;

function expectSame(ours: SessionContext, pi: PiContext, where: string): void {
  expect({ where, messages: ours.messages }).toEqual({ where, messages: pi.messages });
  expect(ours.thinkingLevel, where).toBe(pi.thinkingLevel);
  expect(ours.model, where).toEqual(pi.model);
}

async function exported(session: Session): Promise<string> {
  let text = "";
  for await (const line of exportPi(session)) text += line;
  return text;
}

/** A pi file's text imported into a backend, with the repairs the import reported. */
type Importer = (text: string) => Promise<{ session: Session; warnings: readonly unknown[] }>;

function viaRepo(repo: SessionRepo): Importer {
  return async (text) => {
    const parsed = parsePi(text);
    return { session: await repo.importSession(parsed), warnings: parsed.warnings };
  };
}

/** The whole round: import, contexts at the head and at every entry, export, pi's reading of the export. */
async function roundTrip(importer: Importer, text: string): Promise<void> {
  const pi = openInPi(text);
  const entries = pi.getEntries();
  const { session, warnings } = await importer(text);
  expect(warnings).toEqual([]);
  expectSame(await session.buildContext(), pi.buildSessionContext(), "at the head");
  for (const entry of entries) {
    expectSame(
      await session.buildContext({ leafId: entry.id }),
      piBuildSessionContext(entries, entry.id),
      entry.id,
    );
  }
  const back = openInPi(await exported(session));
  expect(back.buildSessionContext()).toEqual(pi.buildSessionContext());
  const backEntries = back.getEntries() as PiEntry[];
  for (const entry of entries) {
    expect(piBuildSessionContext(backEntries, entry.id), entry.id).toEqual(
      piBuildSessionContext(entries, entry.id),
    );
  }
}

describe.each(backends())("pi 1.6 sessions on $name", (backend) => {
  it("import with pi 1.6's context at the head and every entry, and export as pi 1.6 reads them", async () => {
    await fc.assert(
      fc.asyncProperty(sessionArbitrary, async (ops) =>
        roundTrip(viaRepo(await backend.repo()), writePiSession(ops)),
      ),
      { numRuns: 60 },
    );
  });
});

describe("files pi wrote before 1.6 (test/fixtures/pi)", () => {
  const folder = join(import.meta.dirname, "../../fixtures/pi");
  /** Each fixture, and the line pi skips in it (corrupt by hand; test/interop/pi-fixtures.test.ts refuses it). */
  const files: Array<[string, number | undefined]> = [
    ["before-compaction.jsonl", undefined],
    ["large-session.jsonl", undefined],
    ["hand-edited/session.jsonl", 440],
    ["hand-edited/compact.jsonl", 1013],
  ];

  it("are all the fixtures", () => {
    const found = [
      ...readdirSync(folder).filter((name) => name.endsWith(".jsonl")),
      ...readdirSync(join(folder, "hand-edited")).map((name) => `hand-edited/${name}`),
    ];
    expect(found.sort()).toEqual(files.map(([name]) => name).sort());
  });

  it.each(files)("%s has pi 1.6's context at the head and at every 20th entry", async (name, corrupt) => {
    const text = readFileSync(join(folder, name), "utf8");
    const lines = text.split("\n");
    const readable =
      corrupt === undefined ? text : [...lines.slice(0, corrupt - 1), ...lines.slice(corrupt)].join("\n");
    const pi = openInPi(text);
    const entries = pi.getEntries();
    const session = await new MemoryRepo().importSession(parsePi(readable));
    expectSame(await session.buildContext(), pi.buildSessionContext(), "at the head");
    // A version 1 file has no ids: pi and we each give its entries new ones, in file order.
    const ours: string[] = [];
    for await (const entry of session.allEntries()) if (entry.type !== "leaf") ours.push(entry.id);
    expect(ours).toHaveLength(entries.length);
    for (let i = 0; i < entries.length; i += 20) {
      const where = `entry ${i}`;
      expectSame(
        await session.buildContext({ leafId: ours[i] as string }),
        piBuildSessionContext(entries, (entries[i] as PiEntry).id),
        where,
      );
    }
  });
});

describe("pi 1.6 sessions on the service (Durable Objects, through the HTTP client)", () => {
  let server: DevServer;
  beforeAll(async () => {
    server = await startDevServer();
  }, 120_000);
  afterAll(async () => server?.stop());

  it("import with pi 1.6's context at the head and every entry, and export as pi 1.6 reads them", async () => {
    const client = createClient({ baseUrl: server.url });
    // The service reads the pi file itself (its own parse, in the Worker).
    const importer: Importer = (text) => client.importFile(text, { format: "pi" });
    await fc.assert(
      fc.asyncProperty(sessionArbitrary, async (ops) => roundTrip(importer, writePiSession(ops))),
      { numRuns: 15 },
    );
  }, 300_000);
});
