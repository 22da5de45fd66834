import { DurableObject } from "cloudflare:workers";
import type { EntryInput } from "../src/core/entries";
import { newId, nowIso } from "../src/core/ids";
import type { SessionHeader } from "../src/core/session-schemas";
import type { DurableEnv } from "../src/durable/internal";
import { directoryShard, shardCount, shardOf } from "../src/durable/names";
import { EntryRows } from "../src/durable/session/entry-rows";
import { PathReads } from "../src/durable/session/path-reads";
import { SessionStore } from "../src/durable/session/session-store";
import { sqlOf } from "../src/durable/sql";
import { recordsOf } from "../src/durable/stream/create";
import { StreamStore } from "../src/durable/stream/store";
import type { DirectoryReport } from "../src/durable/types";
import { createApp } from "../src/http";

export { SessionDirectory, SessionObject, StreamObject } from "../src/durable/internal";

/*
 * A Durable Object that runs the real session store (the code SessionObject runs) and times it
 * from inside, where the clock is the object's own: batch appends, buildContext, raw SQLite.
 */
export class BenchObject extends DurableObject {
  readonly #session: SessionStore;
  /** The session's path reads without the kept head context: a context as read from storage. */
  readonly #paths: PathReads;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env as never);
    this.#session = ctx.storage.transactionSync(() => new SessionStore(ctx.storage));
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
    const result = this.#session.writes.appendEntries(entries, { validated: true }, undefined);
    return { ms: performance.now() - start, leafId: result.leafId };
  }

  /**
   * The context at the head as the object answers it: the kept context when there is one, else
   * read, projected and serialized from storage page by page. Timed inside.
   */
  buildContext(): { ms: number; messages: number; bytes: number } {
    const start = performance.now();
    const answer = this.#session.contexts.context();
    let json = "text" in answer ? answer.text : `${answer.head}[`;
    if (!("text" in answer)) {
      json += [...answer.pages]
        .filter((page) => page.length > 0)
        .map((page) => page.join(","))
        .join(",");
      json += "]}";
    }
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

  /**
   * The search index alone: `count` rows of `size` characters into an FTS5 table like a session's,
   * in one transaction, as an append of that batch indexes them.
   */
  indexBatch(count: number, size: number): { ms: number } {
    const sql = this.ctx.storage.sql;
    sql.exec(
      "CREATE VIRTUAL TABLE IF NOT EXISTS bench_text USING fts5(text, thinking, tokenize='porter unicode61')",
    );
    sql.exec("DELETE FROM bench_text");
    const rows = Array.from({ length: count }, (_, i) => [
      i + 1,
      `${i} ${"lorem ipsum dolor sit amet ".repeat(Math.ceil(size / 27))}`.slice(0, size),
      "",
    ]);
    const start = performance.now();
    this.ctx.storage.transactionSync(() => {
      sql.exec(
        "INSERT INTO bench_text (rowid, text, thinking) SELECT value->>0, value->>1, value->>2 FROM json_each(?)",
        JSON.stringify(rows),
      );
    });
    return { ms: performance.now() - start };
  }

  /**
   * `entries` appended one at a time (each its own transaction, as single appends are), then the
   * same number of one-row transactions into a plain table and into an FTS5 table like a
   * session's: milliseconds per write of each, inside the object.
   */
  singleWrites(entries: EntryInput[]): { appendMs: number; rowMs: number; indexMs: number } {
    this.#ensure();
    const count = entries.length;
    const sql = this.ctx.storage.sql;
    const t0 = performance.now();
    for (const entry of entries) this.#session.writes.appendEntries([entry], { validated: true }, undefined);
    const t1 = performance.now();
    sql.exec("CREATE TABLE IF NOT EXISTS single_rows (id INTEGER PRIMARY KEY, body TEXT)");
    sql.exec(
      "CREATE VIRTUAL TABLE IF NOT EXISTS single_text USING fts5(text, thinking, tokenize='porter unicode61')",
    );
    const texts = entries.map((entry) => JSON.stringify(entry));
    const t2 = performance.now();
    for (const text of texts) {
      this.ctx.storage.transactionSync(() => sql.exec("INSERT INTO single_rows (body) VALUES (?)", text));
    }
    const t3 = performance.now();
    for (const text of texts) {
      this.ctx.storage.transactionSync(() =>
        sql.exec("INSERT INTO single_text (text, thinking) VALUES (?, '')", text),
      );
    }
    const t4 = performance.now();
    return { appendMs: (t1 - t0) / count, rowMs: (t3 - t2) / count, indexMs: (t4 - t3) / count };
  }

  /** Nothing: the floor of a request that reaches an object. */
  noop(): { ok: true } {
    return { ok: true };
  }

  /**
   * What the stream store writes to SQLite for `appends` appends of `size` bytes to a new stream
   * (JSON: one-digit messages for an append of 1 MiB, else one string message an append).
   */
  streamStorage(json: boolean, size: number, appends: number): { appended: number; stored: number } {
    const before = this.ctx.storage.sql.databaseSize;
    const store = this.ctx.storage.transactionSync(() => new StreamStore(this.ctx.storage.sql));
    const contentType = json ? "application/json" : "application/octet-stream";
    const expiry = { ttlSeconds: null, expiresAt: null };
    let stream = this.ctx.storage.transactionSync(() =>
      store.create("bench", { contentType, expiry, closed: false, fork: null, now: Date.now() }, []),
    );
    const encoder = new TextEncoder();
    const body = !json
      ? new Uint8Array(size).fill(7)
      : size >= 1024
        ? encoder.encode(`[${"1,".repeat(size / 2 - 1)}1]`)
        : encoder.encode(JSON.stringify("x".repeat(size - 2)));
    const records = recordsOf(contentType, body);
    for (let i = 0; i < appends; i++) {
      this.ctx.storage.transactionSync(() =>
        store.append(stream, { records, close: false, producer: null, streamSeq: null, now: Date.now() }),
      );
      stream = store.get("bench") ?? stream;
    }
    return { appended: body.byteLength * appends, stored: this.ctx.storage.sql.databaseSize - before };
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

/** Words of the reports' text: a tenant search for one of them finds 1 session in RARE_WORDS. */
const RARE_WORDS = 5000;
/** Characters of message text a report carries: a long session's whole digest. */
const DIGEST_CHARS = 8000;

/** A report as a session object sends it, with the digest of a long session's text. */
function report(tenant: string, shard: number, i: number): DirectoryReport {
  const at = new Date(Date.parse("2026-01-01T00:00:00.000Z") + i * 1000).toISOString();
  return {
    info: {
      id: `listed-${i}`,
      name: `session ${i}`,
      metadata: {},
      createdAt: at,
      updatedAt: at,
      leafId: null,
      entryCount: i % 50,
      messageCount: i % 50,
      bytes: (i % 50) * 200,
      preview: `session number ${i} about w${i % RARE_WORDS}x`,
    },
    incarnation: "bench",
    version: 1,
    tenant,
    shard,
    search: {
      labels: `label ${i % 100}`,
      text: `w${i % RARE_WORDS}x ${"lorem ipsum dolor sit amet consectetur adipiscing elit ".repeat(DIGEST_CHARS / 55)}`.slice(
        0,
        DIGEST_CHARS,
      ),
    },
  };
}

/**
 * Sends reports `from` to `to` of a tenant's sessions to the shards their ids hash to (over
 * `shards`), `concurrency` at a time, as many session objects reporting at once would. Answers the
 * time it took and each report's latency.
 */
async function sendReports(
  env: DurableEnv,
  tenant: string,
  options: { from: number; to: number; shards: number; concurrency: number },
): Promise<{ ms: number; latencies: number[] }> {
  const latencies: number[] = [];
  let next = options.from;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      while (next < options.to) {
        const i = next++;
        const shard = shardOf(`listed-${i}`, options.shards);
        const sent = performance.now();
        await directoryShard(env, tenant, shard).put(report(tenant, shard, i));
        latencies.push(performance.now() - sent);
      }
    }),
  );
  return { ms: performance.now() - start, latencies };
}

const app = createApp();

export default {
  async fetch(request: Request, env: { BENCH: DurableObjectNamespace<BenchObject> }, ctx: ExecutionContext) {
    const url = new URL(request.url);
    if (url.pathname === "/bench-directory/reports") {
      const durableEnv = env as unknown as DurableEnv;
      const number = (name: string, otherwise: number) => Number(url.searchParams.get(name) ?? otherwise);
      return Response.json(
        await sendReports(durableEnv, url.searchParams.get("tenant") ?? "local", {
          from: number("from", 0),
          to: number("to", 0),
          shards: number("shards", shardCount(durableEnv)),
          concurrency: number("concurrency", 32),
        }),
      );
    }
    // The service with no blob bucket bound: what a session stores without the R2 tier.
    if (url.pathname.startsWith("/bench-inline/")) {
      const inner = new URL(url.pathname.slice("/bench-inline".length) + url.search, url.origin);
      return app.fetch(new Request(inner, request), { ...env, BLOBS: undefined } as never, ctx);
    }
    if (url.pathname === "/bench-blobs/stored") {
      const bucket = (env as unknown as DurableEnv).BLOBS;
      let objects = 0;
      let bytes = 0;
      let cursor: string | undefined;
      do {
        const page = await (bucket as R2Bucket).list({ cursor });
        for (const object of page.objects) {
          objects++;
          bytes += object.size;
        }
        cursor = page.truncated ? page.cursor : undefined;
      } while (cursor);
      return Response.json({ objects, bytes });
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
      case "streamStorage":
        return Response.json(
          await stub.streamStorage(
            url.searchParams.get("json") === "true",
            Number(url.searchParams.get("size")),
            Number(url.searchParams.get("appends")),
          ),
        );
      case "singleWrites":
        return Response.json(await stub.singleWrites(body as EntryInput[]));
      case "indexBatch":
        return Response.json(
          await stub.indexBatch(Number(url.searchParams.get("count")), Number(url.searchParams.get("size"))),
        );
      case "rawSql":
        return Response.json(
          await stub.rawSql(Number(url.searchParams.get("count")), Number(url.searchParams.get("size"))),
        );
      default:
        return new Response("no such bench route", { status: 404 });
    }
  },
};
