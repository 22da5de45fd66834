import { DurableObject } from "cloudflare:workers";
import type { EntryInput, SessionHeader } from "../src/core";
import { newId, nowIso } from "../src/core";
import type { SessionDirectory } from "../src/durable";
import { EntryRows } from "../src/durable/entry-rows";
import { PathReads } from "../src/durable/path-reads";
import { sqlOf } from "../src/durable/sql";
import { SqliteSession } from "../src/durable/sqlite-session";
import { createApp } from "../src/http";

export { SessionDirectory, SessionObject } from "../src/durable";

/*
 * A Durable Object that runs the real session store (the code SessionObject runs) and times it
 * from inside, where the clock is the object's own: batch appends, buildContext, raw SQLite.
 */
export class BenchObject extends DurableObject {
  readonly #session: SqliteSession;
  /** The session's path reads without the kept head context: a context as read from storage. */
  readonly #paths: PathReads;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env as never);
    this.#session = ctx.storage.transactionSync(() => new SqliteSession(ctx.storage));
    const sql = sqlOf(ctx.storage.sql);
    this.#paths = new PathReads(new EntryRows(ctx.storage.sql, sql), sql);
  }

  #ensure(): void {
    if (this.#session.exists) return;
    const header: SessionHeader = { id: "bench", createdAt: nowIso(), metadata: {} };
    this.ctx.storage.transactionSync(() => this.#session.init("bench", newId(), header));
  }

  /** Appends a batch; answers milliseconds inside the object and the new leaf. */
  appendBatch(entries: EntryInput[]): { ms: number; leafId: string | null } {
    this.#ensure();
    const start = performance.now();
    // Entries arrive validated, as from the router (which checks them against the schemas).
    const result = this.#session.appendEntries(entries, { validated: true });
    return { ms: performance.now() - start, leafId: result.leafId };
  }

  /**
   * The context at the head as the object answers it: the kept context when there is one, else
   * read, projected and serialized from storage page by page. Timed inside.
   */
  buildContext(): { ms: number; messages: number; bytes: number } {
    const start = performance.now();
    const { first, rest } = this.#session.context();
    let json = first;
    for (let next = rest.next(); !next.done; next = rest.next()) json += next.value;
    const ms = performance.now() - start;
    const messages = (JSON.parse(json) as { messages: unknown[] }).messages.length;
    return { ms, messages, bytes: json.length };
  }

  /**
   * The context at the head from storage, as when nothing is kept in memory (plan, pages,
   * projection, JSON), `iterations` times: the average, finer than the object's millisecond clock.
   */
  buildFromStorage(iterations: number): { ms: number; messages: number } {
    let messages = 0;
    const start = performance.now();
    for (let i = 0; i < iterations; i++) {
      const plan = this.#paths.contextPlan(this.#session.state.leafId);
      const parts: string[] = [];
      for (const page of this.#paths.messagePages(plan)) parts.push(...page);
      messages = parts.join(",").length > 0 ? parts.length : 0;
    }
    return { ms: (performance.now() - start) / iterations, messages };
  }

  /** Nothing: the floor of a request that reaches an object. */
  noop(): { ok: true } {
    return { ok: true };
  }

  /** Raw SQLite: `count` inserts of `size`-character rows in one transaction, then reading them back. */
  rawSql(count: number, size: number): { insertMs: number; readMs: number } {
    const sql = this.ctx.storage.sql;
    sql.exec("CREATE TABLE IF NOT EXISTS raw (id INTEGER PRIMARY KEY, body TEXT)");
    sql.exec("DELETE FROM raw");
    const body = "x".repeat(size);
    const t0 = performance.now();
    this.ctx.storage.transactionSync(() => {
      for (let i = 0; i < count; i++) sql.exec("INSERT INTO raw (id, body) VALUES (?, ?)", i, body);
    });
    const t1 = performance.now();
    let read = 0;
    for (const row of sql.exec<{ body: string }>("SELECT body FROM raw")) read += row.body.length;
    const t2 = performance.now();
    if (read !== count * size) throw new Error("raw read mismatch");
    return { insertMs: t1 - t0, readMs: t2 - t1 };
  }
}

/** Fills a tenant's directory with `count` listed sessions (reports as session objects send them). */
async function fillDirectory(directory: DurableObjectStub<SessionDirectory>, count: number): Promise<void> {
  const base = Date.parse("2026-01-01T00:00:00.000Z");
  for (let i = 0; i < count; i++) {
    const at = new Date(base + i * 1000).toISOString();
    await directory.put({
      info: {
        id: `listed-${i}`,
        metadata: {},
        createdAt: at,
        updatedAt: at,
        leafId: null,
        entryCount: i % 50,
        messageCount: i % 50,
        bytes: (i % 50) * 200,
        preview: `session number ${i}`,
      },
      incarnation: "bench",
      version: 1,
    });
  }
}

const app = createApp();

export default {
  async fetch(request: Request, env: { BENCH: DurableObjectNamespace<BenchObject> }, ctx: ExecutionContext) {
    const url = new URL(request.url);
    if (url.pathname === "/bench-directory/fill") {
      const directory = (env as unknown as { DIRECTORY: DurableObjectNamespace<SessionDirectory> }).DIRECTORY;
      await fillDirectory(
        directory.getByName(url.searchParams.get("tenant") ?? "local"),
        Number(url.searchParams.get("count")),
      );
      return Response.json({ ok: true });
    }
    const match = /^\/bench\/([^/]+)\/([a-zA-Z]+)$/.exec(url.pathname);
    if (!match) return app.fetch(request, env as never, ctx);
    const stub = env.BENCH.getByName(match[1] as string);
    const body = request.method === "POST" ? ((await request.json()) as unknown[]) : [];
    switch (match[2]) {
      case "appendBatch":
        return Response.json(await stub.appendBatch(body as EntryInput[]));
      case "buildContext":
        return Response.json(await stub.buildContext());
      case "buildFromStorage":
        return Response.json(await stub.buildFromStorage(Number(url.searchParams.get("iterations") ?? 1)));
      case "noop":
        return Response.json(await stub.noop());
      case "rawSql":
        return Response.json(
          await stub.rawSql(Number(url.searchParams.get("count")), Number(url.searchParams.get("size"))),
        );
      default:
        return new Response("no such bench route", { status: 404 });
    }
  },
};
