import { runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { expect, vi } from "vitest";
import { newId } from "../../src/core/ids";
import type { DurableEnv } from "../../src/durable/internal";
import worker from "../../src/worker";

export const KEY_A = "key-a";
export const KEY_B = "key-b";
/** A third tenant, for tests that need one nothing else in their file writes to. */
export const KEY_C = "key-c";
export const KEY_A_READ = "key-a-read";

export interface ApiOptions {
  key?: string | null;
  body?: unknown;
  /** Sent as is (no JSON encoding). */
  raw?: BodyInit;
  headers?: Record<string, string>;
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/** A request to the worker under test, as tenant A unless another key (or `null`: none) is given. */
export async function api<T = any>(
  method: string,
  path: string,
  options: ApiOptions = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  const key = options.key === undefined ? KEY_A : options.key;
  if (key !== null) headers.Authorization = `Bearer ${key}`;
  let body: BodyInit | undefined = options.raw;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers["Content-Type"] ??= "application/json";
  }
  const res = await exports.default.fetch(`http://sessions.test${path}`, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {}
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

export function sid(prefix = "s"): string {
  return `${prefix}-${newId()}`;
}

export async function createSession(options: { key?: string; body?: Record<string, unknown> } = {}) {
  const id = sid();
  const res = await api("POST", "/v1/sessions", { key: options.key, body: { id, ...options.body } });
  expect(res.status).toBe(201);
  return id;
}

/** Asserts the error envelope and its code; never a stack. */
export function expectError(res: ApiResponse, status: number, code: string) {
  expect(res.status, res.text).toBe(status);
  expect(res.body?.error?.code, res.text).toBe(code);
  expect(typeof res.body.error.message).toBe("string");
  expect(res.text).not.toMatch(/\n\s+at /);
}

/**
 * Runs `run` with `patch` made to the environment the session objects share (the settings and
 * bindings an object reads as it works), as it was again after.
 */
export async function withObjectEnv<T>(
  stub: DurableObjectStub,
  patch: Partial<DurableEnv>,
  run: () => Promise<T>,
): Promise<T> {
  const envOf = (instance: unknown) => (instance as { env: DurableEnv }).env;
  let saved: Partial<DurableEnv> = {};
  await runInDurableObject(stub, (instance) => {
    const objectEnv = envOf(instance);
    saved = Object.fromEntries(Object.keys(patch).map((name) => [name, objectEnv[name as keyof DurableEnv]]));
    Object.assign(objectEnv, patch);
  });
  try {
    return await run();
  } finally {
    await runInDurableObject(stub, (instance) => {
      Object.assign(envOf(instance), saved);
    });
  }
}

/**
 * Runs a session object's alarm once the report to its directory that its writes call for is due
 * (DIRECTORY_SYNC_MS after the first of them): an alarm before then reports nothing, and the
 * report waits for the next. Until then the object's own alarm does nothing (work it had in hand
 * ends meanwhile), so that what was due is done here, once, and no alarm comes for it after.
 */
export async function runAlarmOnceReportDue(stub: DurableObjectStub): Promise<void> {
  await runInDurableObject(stub, (instance) => {
    instance.alarm = async () => {};
  });
  try {
    await scheduler.wait(Number(env.DIRECTORY_SYNC_MS) + 1);
  } finally {
    await runInDurableObject(stub, async (instance, state) => {
      // The class's own alarm again.
      delete instance.alarm;
      await state.storage.deleteAlarm();
      await (instance as Required<DurableObject>).alarm();
    });
  }
}

/**
 * What `run` answers and the rows SQLite read for it (the runtime's `rowsRead` of every statement
 * run through `sql` meanwhile), inside an object: what a call costs, however large its tables.
 */
export async function rowsReadBy<T>(
  sql: SqlStorage,
  run: () => T | Promise<T>,
): Promise<{ result: T; rows: number }> {
  const exec = sql.exec;
  const cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
  sql.exec = ((query: string, ...bindings: SqlStorageValue[]) => {
    const cursor = exec.call(sql, query, ...bindings);
    cursors.push(cursor);
    return cursor;
  }) as typeof sql.exec;
  try {
    const result = await run();
    return { result, rows: cursors.reduce((sum, cursor) => sum + cursor.rowsRead, 0) };
  } finally {
    sql.exec = exec;
  }
}

/**
 * The directory as objects reach it (`withObjectEnv`), whose answers to their claims of quota room
 * (`claimQuota`, applied by the ledger already) are held until `letGo`: a write waiting for its
 * room while something else runs.
 */
export function heldClaimAnswers() {
  let held = true;
  let answered = 0;
  const directory = directoryReplacing("claimQuota", async (real, args) => {
    const answer = await real(...args);
    answered++;
    while (held) await new Promise((resolve) => setTimeout(resolve, 5));
    return answer;
  });
  return {
    directory,
    /** Waits until the ledger has answered `calls` claims. */
    answered: (calls = 1) =>
      vi.waitFor(() => expect(answered).toBeGreaterThanOrEqual(calls), { timeout: 5000, interval: 10 }),
    letGo: () => {
      held = false;
    },
  };
}

/**
 * The directory as objects reach it, for `withObjectEnv`: the real one (or `directory`, replacing
 * another method already), but for its stubs' calls of `method`, which go to `replace` with the
 * real call (to hold one open, or fail it, as the directory out of reach would).
 */
export function directoryReplacing(
  method: string,
  replace: (real: (...args: unknown[]) => Promise<unknown>, args: unknown[]) => Promise<unknown>,
  directory: DurableEnv["DIRECTORY"] = (env as unknown as DurableEnv).DIRECTORY,
): DurableEnv["DIRECTORY"] {
  const replacing = (stub: DurableObjectStub) =>
    new Proxy(stub, {
      get(target, name) {
        // A stub's methods are its own (calling one is a call to the object), needing no `this`.
        const value = Reflect.get(target, name);
        return name === method ? (...args: unknown[]) => replace(value, args) : value;
      },
    });
  return new Proxy(directory, {
    get(target, name) {
      const value = Reflect.get(target, name);
      if (name !== "getByName") return typeof value === "function" ? value.bind(target) : value;
      return (objectName: string) => replacing(target.getByName(objectName));
    },
  });
}

export async function info(id: string, key?: string) {
  const res = await api("GET", `/v1/sessions/${id}`, { key });
  expect(res.status).toBe(200);
  return res.body as { entryCount: number; leafId: string | null; [k: string]: unknown };
}

export const userMessage = (text: string) => ({
  type: "message",
  message: { role: "user", content: text, timestamp: 1_700_000_000_000 },
});

const executionContext = () =>
  ({ waitUntil() {}, passThroughOnException() {}, props: {} }) as unknown as ExecutionContext;

/**
 * `api`, against the worker run with some settings changed (a tiny recovery window, another
 * shard count): the same objects, reached with another configuration.
 */
export function apiWith(settings: Record<string, string>) {
  return async <T = any>(method: string, path: string, options: ApiOptions = {}): Promise<ApiResponse<T>> => {
    const headers: Record<string, string> = { ...options.headers };
    const key = options.key === undefined ? KEY_A : options.key;
    if (key !== null) headers.Authorization = `Bearer ${key}`;
    let body: BodyInit | undefined = options.raw;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers["Content-Type"] ??= "application/json";
    }
    const res = await worker.fetch(
      new Request(`http://sessions.test${path}`, { method, headers, body }),
      { ...(env as object), ...settings } as never,
      executionContext(),
    );
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {}
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  };
}

export const assistantMessage = (text: string, thinking?: string) => ({
  type: "message",
  message: {
    role: "assistant",
    content: [...(thinking ? [{ type: "thinking", thinking }] : []), { type: "text", text }],
    api: "openai-completions",
    provider: "openai",
    model: "gpt-4o",
    usage: {
      input: 1,
      output: 1,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 2,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: "stop",
    timestamp: 1_700_000_000_000,
  },
});
