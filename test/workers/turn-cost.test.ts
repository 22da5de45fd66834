import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sessionObjectName } from "../../src/durable/internal";
import { api, sid } from "./helpers";

/*
 * An agent's turn costs the same whatever the history: its message appended, the context by delta
 * (`?since=`), the model's answer appended. Its time is the benchmark's (bench/live.ts, `npm run
 * bench`); what cannot be noisy is tested here: the bytes on the wire, and the rows the session's
 * SQLite reads (the runtime's own count, `rowsRead` of every statement, which is also what the
 * platform bills), at 100, 1,000 and 100,000 entries of history.
 *
 * The object reports to its directory shard on an alarm of its own clock, once for however many
 * writes came before it, DIRECTORY_SYNC_MS after the first. So that each turn counts that report
 * exactly once, the test holds the object's alarm while the turn runs, then runs it itself once the
 * report is due: a turn quicker than DIRECTORY_SYNC_MS would otherwise leave its report, and the
 * rows it reads, to the next turn.
 */

const TURNS = 3;

/** A history entry: short, so that 100,000 are written in seconds; ids of one width at every size. */
const historyId = (i: number) => `h${String(i).padStart(6, "0")}`;
const historyLine = (i: number) =>
  JSON.stringify({
    type: "message",
    id: historyId(i),
    parentId: i === 0 ? null : historyId(i - 1),
    timestamp: "2026-01-01T00:00:00.000Z",
    message: {
      role: i % 2 === 0 ? "user" : "assistant-note",
      content: `m${i}`,
      timestamp: 1_767_225_600_000 + i,
    },
  });

/**
 * A history entry of an agent written through a framework's adapter: its messages, each followed
 * by a custom entry of its state (a few KiB) and by a context edit leaving out the message before.
 */
const frameworkLine = (i: number) => {
  const entry = JSON.parse(historyLine(i));
  if (i % 3 === 1)
    return JSON.stringify({
      ...entry,
      message: undefined,
      type: "custom",
      customType: "app:state",
      data: { step: i, state: "s".repeat(4096) },
    });
  if (i % 3 === 2)
    return JSON.stringify({
      ...entry,
      message: undefined,
      type: "context_edit",
      targetId: historyId(i - 2),
      replacement: null,
    });
  return JSON.stringify(entry);
};

/** A session holding `size` entries on one branch, imported in one request. */
async function sessionWithHistory(size: number, line = historyLine, id = sid("turn-cost")): Promise<string> {
  const header = {
    type: "session",
    format: "cf-session",
    version: 1,
    id,
    createdAt: "2026-01-01T00:00:00.000Z",
  };
  const lines = [JSON.stringify(header), ...Array.from({ length: size }, (_, i) => line(i))];
  const imported = await api("POST", "/v1/sessions/import", {
    raw: `${lines.join("\n")}\n`,
    headers: { "Content-Type": "application/x-ndjson" },
  });
  expect(imported.status, imported.text).toBe(201);
  expect(imported.body.entryCount).toBe(size);
  return id;
}

/** Counts the rows every statement of the session's object reads, and holds its alarm. */
async function meterSession(id: string) {
  const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
  const cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
  const queries: string[] = [];
  let alarm: (() => Promise<void>) | undefined;
  await runInDurableObject(stub, (instance, state) => {
    const sql = state.storage.sql;
    const exec = sql.exec.bind(sql);
    sql.exec = ((query: string, ...bindings: SqlStorageValue[]) => {
      const cursor = exec(query, ...bindings);
      cursors.push(cursor);
      queries.push(query);
      return cursor;
    }) as typeof sql.exec;
    alarm = instance.alarm.bind(instance);
    instance.alarm = async () => {};
  });
  return {
    /** The rows read since the last call (a cursor is the object's: read inside it). */
    take: () =>
      runInDurableObject(stub, () => {
        const rows = cursors.reduce((sum, cursor) => sum + cursor.rowsRead, 0);
        cursors.length = 0;
        queries.length = 0;
        return rows;
      }),
    /**
     * The statements run since the last `take` that read the session's entries, in order. Work the
     * write leaves to run after its answer (arming the alarm, which asks whether entries wait to be
     * indexed for search) may land before or after this is read, and reads no entry.
     */
    entryStatements: () =>
      runInDurableObject(stub, () =>
        queries
          .map((query) => query.replace(/\s+/g, " ").trim())
          .filter((query) => /\bentries\b/.test(query)),
      ),
    /** Runs the object's own alarm once, when the report the turn's writes call for is due. */
    runAlarm: () =>
      runInDurableObject(stub, async () => {
        await scheduler.wait(Number(env.DIRECTORY_SYNC_MS) + 1);
        await (alarm as () => Promise<void>)();
      }),
  };
}

/**
 * A body's size in bytes, its seq numbers written as 0: they count the history (3 digits at 100
 * entries, 6 at 100,000), in `seq` and in the context's version.
 */
const wireBytes = (text: string) =>
  new TextEncoder().encode(
    text.replace(/"seq":\d+/g, '"seq":0').replace(/("(?:version|since)":"[0-9a-f]+-)\d+/g, "$10"),
  ).length;

/** A message of the turn: the same text at every history size. */
const turnEntry = (role: "user" | "assistant-note", turn: number) =>
  JSON.stringify({
    type: "message",
    message: { role, content: `turn ${turn} ${role}`, timestamp: 1_767_312_000_000 + turn },
  });

interface TurnCost {
  /** Request and answer bodies of the three requests. */
  bytes: number;
  /** Rows read by the three requests. */
  requestRows: number;
  /** Rows read by the directory report the turn's writes call for. */
  reportRows: number;
}

async function measureTurns(size: number, line = historyLine): Promise<TurnCost[]> {
  const id = await sessionWithHistory(size, line);
  const meter = await meterSession(id);
  let version = (await api("GET", `/v1/sessions/${id}/context`)).body.version as string;
  await meter.runAlarm();
  await meter.take();
  const costs: TurnCost[] = [];
  for (let turn = 0; turn < TURNS; turn++) {
    const question = turnEntry("user", turn);
    const asked = await api("POST", `/v1/sessions/${id}/entries`, {
      raw: question,
      headers: { "Content-Type": "application/json" },
    });
    expect(asked.status, asked.text).toBe(201);
    const delta = await api("GET", `/v1/sessions/${id}/context?since=${version}`);
    expect(delta.body.since, "the turn's context is a delta").toBe(version);
    // The question, after the previous turn's answer.
    expect(delta.body.append, delta.text).toHaveLength(turn === 0 ? 1 : 2);
    version = delta.body.version;
    const answer = turnEntry("assistant-note", turn);
    const answered = await api("POST", `/v1/sessions/${id}/entries`, {
      raw: answer,
      headers: { "Content-Type": "application/json" },
    });
    expect(answered.status, answered.text).toBe(201);
    const requestRows = await meter.take();
    await meter.runAlarm();
    const reportRows = await meter.take();
    costs.push({
      bytes: [question, asked.text, delta.text, answer, answered.text].reduce((n, t) => n + wireBytes(t), 0),
      requestRows,
      reportRows,
    });
  }
  return costs;
}

describe("an agent turn", () => {
  it("moves the same bytes and reads the same rows at 100 and at 100,000 entries of history", async () => {
    const small = await measureTurns(100);
    const mid = await measureTurns(1_000);
    const large = await measureTurns(100_000);
    const field = (costs: TurnCost[], key: keyof TurnCost) => costs.map((cost) => cost[key]);
    // Something was counted: the meter sees the object's statements.
    for (const cost of small) {
      expect(cost.requestRows).toBeGreaterThan(0);
      expect(cost.reportRows).toBeGreaterThan(0);
    }
    for (const costs of [mid, large]) {
      expect(field(costs, "bytes")).toEqual(field(small, "bytes"));
      expect(field(costs, "requestRows")).toEqual(field(small, "requestRows"));
    }
    // The report's digest reads the session's newest and oldest texts: the same from 1,000 entries
    // to 100,000, fewer at 100, where the two overlap.
    expect(field(large, "reportRows")).toEqual(field(mid, "reportRows"));
    for (const [turn, cost] of small.entries())
      expect(cost.reportRows).toBeLessThanOrEqual(mid[turn]?.reportRows as number);
  }, 120_000);

  it("reads the same rows at 100 and 3,000 entries of history holding custom entries and context edits", async () => {
    const small = await measureTurns(100, frameworkLine);
    const large = await measureTurns(3_000, frameworkLine);
    expect(large.map((cost) => cost.requestRows)).toEqual(small.map((cost) => cost.requestRows));
  }, 60_000);
});

describe("an append naming an entry far up the branch", () => {
  it("checks an edit's target and a compaction's kept entry in the same statements at 100 and 3,000 entries", async () => {
    const statements: string[][][] = [];
    for (const size of [100, 3_000]) {
      // The meter holds the object's alarm from before the session exists: no work the alarm does
      // (indexing the import for search, reporting to the directory) runs while the appends are
      // counted, part-done at one size and done at the other.
      const id = sid("turn-cost");
      const meter = await meterSession(id);
      await sessionWithHistory(size, historyLine, id);
      const leaf = historyId(size - 1);
      const side = await api("POST", `/v1/sessions/${id}/entries`, {
        body: {
          type: "message",
          id: "side",
          parentId: historyId(0),
          message: { role: "user", content: "side", timestamp: 1 },
        },
      });
      expect(side.status, side.text).toBe(201);
      const counted: string[][] = [];
      const append = async (body: unknown, status: number) => {
        await meter.take();
        const res = await api("POST", `/v1/sessions/${id}/entries`, { body });
        expect(res.status, res.text).toBe(status);
        counted.push(await meter.entryStatements());
      };
      // Off the branch: the side entry, one below the root.
      await append({ type: "context_edit", targetId: "side", parentId: leaf, replacement: null }, 422);
      await append(
        { type: "compaction", summary: "S", tokensBefore: 1, firstKeptEntryId: "side", parentId: leaf },
        422,
      );
      // On it: the root.
      await append(
        {
          entries: [
            { type: "context_edit", targetId: historyId(0), parentId: leaf, replacement: null },
            { type: "compaction", summary: "S", tokensBefore: 1, firstKeptEntryId: historyId(0) },
          ],
        },
        201,
      );
      statements.push(counted);
    }
    // Something was counted: each append's checks read entries.
    for (const counted of statements[0] ?? []) expect(counted.length).toBeGreaterThan(0);
    expect(statements[1]).toEqual(statements[0]);
  }, 60_000);
});
