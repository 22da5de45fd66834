import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
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
import type { Session, SessionContext, SessionRepo } from "../../../src/core";
import { exportPi, parsePi } from "../../../src/core";
import type { DevServer } from "../../support/dev-server";
import { startDevServer } from "../../support/dev-server";
import { backends } from "../backends";
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
  writeFileSync(path, text);
  return SessionManager.open(path, scratch);
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
