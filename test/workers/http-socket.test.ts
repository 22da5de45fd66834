import {
  createExecutionContext,
  evictDurableObject,
  listDurableObjectIds,
  runInDurableObject,
} from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { decodeJwt, SignJWT, UnsecuredJWT } from "jose";
import { describe, expect, it, vi } from "vitest";
import { sessionObjectName } from "../../src/durable/internal";
import worker from "../../src/worker";
import {
  appendText,
  endGeneration,
  openGeneration,
  sessionWithQuestion,
  snapshot,
} from "./generation-helpers";
import { api, apiWith, createSession, expectError, KEY_A, KEY_A_READ, KEY_B, userMessage } from "./helpers";
import { connect, type Message, open } from "./socket-helpers";

async function append(id: string, ...texts: string[]) {
  const res = await api("POST", `/v1/sessions/${id}/entries`, {
    body: { entries: texts.map((text) => userMessage(text)) },
  });
  expect(res.status).toBe(201);
  return res.body as { entries: Array<{ id: string; seq: number }>; leafId: string };
}

const entrySeqs = (messages: Message[]) => messages.filter((m) => m.event === "entry").map((m) => m.id);

/** Whether a session's object was ever brought to life (it then has storage). */
async function woken(tenant: string, id: string): Promise<boolean> {
  const wanted = env.SESSIONS.idFromName(sessionObjectName(tenant, id)).toString();
  return (await listDurableObjectIds(env.SESSIONS)).some((found) => found.toString() === wanted);
}

/** A WebSocket upgrade answered by the worker run with some settings changed. */
async function upgradeWith(settings: Record<string, string | undefined>, path: string): Promise<Response> {
  return await worker.fetch(
    new Request(`http://sessions.test${path}`, { headers: { Upgrade: "websocket" } }),
    { ...(env as object), ...settings } as never,
    createExecutionContext(),
  );
}

const ticketSecret = () => new TextEncoder().encode(env.SOCKET_TICKET_SECRET as string);

describe("session events over a WebSocket", () => {
  it("replays after ?after=, then sends each write live, from state kept in the socket's attachment", async () => {
    const id = await createSession();
    await append(id, "a", "b");
    const watch = await open(`/v1/sessions/${id}/ws?after=1`);
    expect(watch.status).toBe(101);
    const opening = await watch.until((m) => m.event === "leaf");
    expect(opening[0]).toMatchObject({ event: "session", data: { id } });
    expect(entrySeqs(opening)).toEqual([2]);
    // Everything the object needs to keep sending lives with the socket, not in the object's
    // memory, so a session that hibernates and wakes on the next write still reaches its watchers.
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    const states = await runInDurableObject(stub, (_instance, state) =>
      state.getWebSockets("events").map((socket) => socket.deserializeAttachment()),
    );
    expect(states).toEqual([
      { payload: true, cursor: 2, live: true, token: expect.any(String), sent: 0, acked: 0 },
    ]);
    await append(id, "c", "d");
    const live = await watch.until((m) => m.event === "leaf");
    expect(entrySeqs(live)).toEqual([3, 4]);
    expect(live[0]?.data).toMatchObject({ seq: 3, message: { content: "c" } });
    watch.socket.close(1000, "done");
  });

  it("reaches its watchers after the object was evicted from memory, as a hibernated session is", async () => {
    const id = await createSession();
    await append(id, "a");
    const watch = await open(`/v1/sessions/${id}/ws?after=0`);
    expect(entrySeqs(await watch.until((m) => m.event === "leaf"))).toEqual([1]);
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    await evictDurableObject(stub);
    // A new instance: nothing of the old one's memory, only the sockets and their attachments.
    await append(id, "b");
    const live = await watch.until((m) => m.event === "leaf");
    expect(entrySeqs(live)).toEqual([2]);
    expect(live[0]?.data).toMatchObject({ seq: 2, message: { content: "b" } });
    watch.socket.close(1000, "done");
  });

  it("resumes from {after} sent on the socket with the token of the last round", async () => {
    const id = await createSession();
    await append(id, "a", "b", "c");
    const watch = await open(`/v1/sessions/${id}/ws`);
    const opening = await watch.until((m) => m.event === "leaf");
    expect(entrySeqs(opening)).toEqual([]);
    const token = opening[opening.length - 1]?.data.token;
    expect(token).toMatch(/^[0-9a-f]{16}$/);
    watch.socket.send(JSON.stringify({ after: 1, token }));
    const resumed = await watch.until((m) => m.event === "leaf");
    expect(entrySeqs(resumed)).toEqual([2, 3]);
    watch.socket.send(JSON.stringify({ after: 99, token: resumed[resumed.length - 1]?.data.token }));
    const refused = await watch.until((m) => m.event === "closed");
    // After a resume the socket hears where the session stands, then the refusal.
    expect(refused.map((m) => m.event)).toEqual(["session", "closed"]);
    expect(refused[1]?.data.reason).toMatch(/seq from 0 to 3/);
    watch.socket.close(1000, "done");
  });

  it("replays a long history in rounds, one unread round at most: a request without the last token closes the socket", async () => {
    const id = await createSession();
    const big = "z".repeat(300 * 1024);
    for (let i = 0; i < 8; i++) await append(id, `${i} ${big}`);
    const watch = await open(`/v1/sessions/${id}/ws?after=0`);
    const first = await watch.until((m) => m.event === "more");
    const round = entrySeqs(first);
    expect(round.length).toBeGreaterThan(0);
    expect(round.length).toBeLessThan(8);
    const more = first[first.length - 1]?.data;
    expect(more.after).toBe(round[round.length - 1]);
    const seen = [...round];
    let next = more;
    for (;;) {
      watch.socket.send(JSON.stringify({ after: next.after, token: next.token }));
      const got = await watch.until((m) => m.event === "more" || m.event === "leaf");
      seen.push(...entrySeqs(got));
      const last = got[got.length - 1];
      if (last?.event === "leaf") break;
      next = last?.data;
    }
    expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    // Asking again without reading the last round's end (no token) is not served.
    watch.socket.send(JSON.stringify({ after: 0 }));
    await expect(watch.until((m) => m.event === "entry", 1000)).rejects.toThrow(/closed: 1008/);
  });

  it("tells a socket that replayed in rounds of the answers that started meanwhile, once it caught up", async () => {
    const id = await createSession();
    const big = "z".repeat(300 * 1024);
    for (let i = 0; i < 8; i++) await append(id, `${i} ${big}`);
    const watch = await open(`/v1/sessions/${id}/ws?after=0`);
    const opening = await watch.until((m) => m.event === "more");
    expect(opening.filter((m) => m.event === "generation")).toEqual([]);
    // Started while the socket replays: its live `generation` event goes only to live sockets.
    const generation = await openGeneration(id);
    let next = opening[opening.length - 1]?.data;
    for (;;) {
      watch.socket.send(JSON.stringify({ after: next.after, token: next.token }));
      const got = await watch.until((m) => m.event === "more" || m.event === "leaf");
      expect(got.filter((m) => m.event === "generation")).toEqual([]);
      const last = got[got.length - 1];
      if (last?.event === "leaf") break;
      next = last?.data;
    }
    const standing = await watch.until((m) => m.event === "generation", 2000);
    expect(standing.map((m) => m.event)).toEqual(["session", "generation"]);
    expect(standing[1]?.data).toMatchObject({ id: generation.id, state: "open" });
    // From now on it hears of the answer live.
    expect((await endGeneration(id, generation.id, "stop")).status).toBe(201);
    const stopped = await watch.until((m) => m.event === "generation" && m.data.state !== "open");
    expect(stopped[stopped.length - 1]?.data).toMatchObject({ id: generation.id, state: "stopped" });
    watch.socket.close(1000, "done");
  });

  it("upgrades with CORS origins configured (the answer's headers are copied, not changed)", async () => {
    const id = await createSession();
    const res = await worker.fetch(
      new Request(`http://sessions.test/v1/sessions/${id}/ws`, {
        headers: { Upgrade: "websocket", Authorization: `Bearer ${KEY_A}` },
      }),
      { ...env, CORS_ALLOWED_ORIGINS: "https://app.example" },
      createExecutionContext(),
    );
    expect(res.status).toBe(101);
    res.webSocket?.accept();
    res.webSocket?.close(1000, "done");
  });

  it("opens the socket whatever x-generation-id or x-request-id the client sends (the router's headers to the object)", async () => {
    const { id } = await sessionWithQuestion();
    const generation = await openGeneration(id);
    await appendText(generation.stream, "chunk");
    const before = await snapshot(id, generation.stream);
    for (const sent of ["%", generation.id, encodeURIComponent(generation.id)]) {
      const watch = await open(`/v1/sessions/${id}/ws?after=0`, {
        Authorization: `Bearer ${KEY_A}`,
        "x-generation-id": sent,
        "x-request-id": "client-chosen",
      });
      expect(watch.status, sent).toBe(101);
      const opening = await watch.until((m) => m.event === "leaf");
      expect(opening[0], sent).toMatchObject({ event: "session", data: { id } });
      expect(entrySeqs(opening), sent).toEqual([1]);
      watch.socket.close(1000, "done");
    }
    expect(await snapshot(id, generation.stream)).toEqual(before);
  });

  it("opens with a one-time ticket (for browsers), read-only keys included", async () => {
    const id = await createSession();
    await append(id, "a");
    const minted = await api("POST", `/v1/sessions/${id}/tickets`, { key: KEY_A_READ, body: {} });
    expect(minted.status, minted.text).toBe(201);
    expect(minted.body.url).toBe(`/v1/sessions/${id}/ws?ticket=${minted.body.ticket}`);
    const watch = await open(`${minted.body.url}&after=0`, {});
    expect(entrySeqs(await watch.until((m) => m.event === "leaf"))).toEqual([1]);
    watch.socket.close(1000, "done");
    // Used up.
    const again = await connect(`${minted.body.url}&after=0`, {});
    expect(again.status).toBe(401);
  });

  it("uses a ticket up only by the socket it opens: an upgrade refused before leaves it good for the retry", async () => {
    const id = await createSession();
    await append(id, "a");
    const minted = await api("POST", `/v1/sessions/${id}/tickets`, { key: KEY_A_READ, body: {} });
    expect(minted.status, minted.text).toBe(201);
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    const sockets = () =>
      runInDurableObject(stub, (_instance, state) => state.getWebSockets("events").length);
    // Refused by the router (no seq), then by the object (a seq past the end): no socket either time.
    for (const after of ["x", "9"]) {
      const refused = await connect(`${minted.body.url}&after=${after}`, {});
      expect(refused.status, refused.text).toBe(400);
      expect(JSON.parse(refused.text).error.code).toBe("invalid_request");
      expect(await sockets()).toBe(0);
    }
    const watch = await open(`${minted.body.url}&after=0`, {});
    expect(entrySeqs(await watch.until((m) => m.event === "leaf"))).toEqual([1]);
    expect(await sockets()).toBe(1);
    const again = await connect(`${minted.body.url}&after=0`, {});
    expect(again.status).toBe(401);
    expect(JSON.parse(again.text).error.code).toBe("unauthorized");
    expect(await sockets()).toBe(1);
    // Only the router names a ticket to the object: one a caller sends as a header is dropped.
    const named = await connect(`/v1/sessions/${id}/ws`, {
      Authorization: `Bearer ${KEY_A}`,
      "x-socket-ticket": decodeJwt(minted.body.ticket).jti as string,
    });
    expect(named.status, named.text).toBe(101);
    named.live?.socket.close(1000, "done");
    watch.socket.close(1000, "done");
    // Two upgrades with one ticket at once: one socket.
    const next = await api("POST", `/v1/sessions/${id}/tickets`, { key: KEY_A_READ, body: {} });
    const both = await Promise.all([connect(next.body.url, {}), connect(next.body.url, {})]);
    expect(both.map((attempt) => attempt.status).sort()).toEqual([101, 401]);
    for (const attempt of both) attempt.live?.socket.close(1000, "done");
  });

  it("keeps at most 2,000 tickets waiting in a session: one more is refused, storing nothing, until one is used or expires", async () => {
    const id = await createSession();
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    const stored = () =>
      runInDurableObject(
        stub,
        (_instance, state) => [...state.storage.kv.list({ prefix: "socket-ticket:" })].length,
      );
    const mint = () => api("POST", `/v1/sessions/${id}/tickets`, { key: KEY_A_READ, body: {} });
    // Tickets of the earlier layout are dropped unread when the session's tickets are first counted.
    const unordered = `ticket:${"ab".repeat(24)}`;
    await runInDurableObject(stub, (_instance, state) =>
      state.storage.kv.put(unordered, Date.now() + 60_000),
    );
    const first = await mint();
    expect(first.status, first.text).toBe(201);
    expect(
      await runInDurableObject(stub, (_instance, state) => state.storage.kv.get(unordered)),
    ).toBeUndefined();
    await runInDurableObject(stub, async (instance) => {
      for (let n = 1; n < 2_000; n++) expect((await instance.mintTicket()).ok).toBe(true);
    });
    const refused = await mint();
    expectError(refused, 429, "rate_limited");
    const retryAfter = Number(refused.headers.get("Retry-After"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(refused.body.error.details.retryAfterSeconds).toBe(retryAfter);
    expect(await stored()).toBe(2_000);
    // A ticket used makes room for one.
    const watch = await open(`${first.body.url}&after=0`, {});
    watch.socket.close(1000, "done");
    expect((await mint()).status).toBe(201);
    expectError(await mint(), 429, "rate_limited");
    expect(await stored()).toBe(2_000);
    // Expired ones are dropped by the next mint.
    const now = Date.now;
    const clock = vi.spyOn(Date, "now").mockImplementation(() => now() + 61_000);
    try {
      const after = await mint();
      expect(after.status, after.text).toBe(201);
      expect(await stored()).toBe(1);
    } finally {
      clock.mockRestore();
    }
  });

  it("seals a ticket with its tenant, session and one-time id: a forged, tampered, expired or other session's one wakes no object", async () => {
    const id = await createSession();
    const minted = await api("POST", `/v1/sessions/${id}/tickets`, { key: KEY_A_READ, body: {} });
    expect(minted.status, minted.text).toBe(201);
    const claims = decodeJwt(minted.body.ticket);
    expect(claims).toEqual({
      tenant: "tenant-a",
      sid: id,
      jti: expect.stringMatching(/^[0-9a-f]{48}$/),
      exp: expect.any(Number),
    });
    expect(minted.body.expiresAt).toBe(new Date((claims.exp as number) * 1000).toISOString());
    expect((claims.exp as number) * 1000 - Date.now()).toBeGreaterThan(50_000);
    expect((claims.exp as number) * 1000 - Date.now()).toBeLessThanOrEqual(60_000);
    // A session never used: a ticket naming it, or used on its URL, must not reach its object.
    const unused = `never-${crypto.randomUUID()}`;
    const inAMinute = Math.floor(Date.now() / 1000) + 60;
    const naming = (sid: string) => new SignJWT({ tenant: "tenant-a", sid }).setJti(claims.jti as string);
    const [header, , signature] = minted.body.ticket.split(".");
    const payload = btoa(JSON.stringify({ ...claims, sid: unused }))
      .replace(/=+$/, "")
      .replace(/\+/g, "-")
      .replace(/\//g, "_");
    const forgeries = {
      otherKey: await naming(unused)
        .setProtectedHeader({ alg: "HS256" })
        .setExpirationTime(inAMinute)
        .sign(new TextEncoder().encode("not the service's secret, 32 bytes or more")),
      tampered: `${header}.${payload}.${signature}`,
      otherSession: minted.body.ticket,
      expired: await naming(unused)
        .setProtectedHeader({ alg: "HS256" })
        .setExpirationTime(Math.floor(Date.now() / 1000) - 1)
        .sign(ticketSecret()),
      unsigned: new UnsecuredJWT({ tenant: "tenant-a", sid: unused })
        .setJti(claims.jti as string)
        .setExpirationTime(inAMinute)
        .encode(),
      garbage: "garbage",
    };
    for (const [name, ticket] of Object.entries(forgeries)) {
      const refused = await connect(`/v1/sessions/${unused}/ws?ticket=${ticket}`, {});
      expect(refused.status, name).toBe(401);
      expect(JSON.parse(refused.text).error.code, name).toBe("unauthorized");
    }
    expect(await woken("tenant-a", unused)).toBe(false);
    // None of that used the ticket up: it opens its own session once.
    const watch = await open(minted.body.url, {});
    watch.socket.close(1000, "done");
    const again = await connect(minted.body.url, {});
    expect(again.status).toBe(401);
    expect(JSON.parse(again.text).error.code).toBe("unauthorized");
  });

  // That the Worker refuses an expired ticket before any object hears of it is shown above, with the
  // tickets of a session never created; here the clock of both moves past a ticket it issued.
  it("refuses a ticket past its minute, and opens no socket", async () => {
    const id = await createSession();
    const minted = await api("POST", `/v1/sessions/${id}/tickets`, { key: KEY_A_READ, body: {} });
    expect(minted.status, minted.text).toBe(201);
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 61_000 });
    try {
      const refused = await connect(minted.body.url, {});
      expect(refused.status).toBe(401);
      expect(JSON.parse(refused.text).error.code).toBe("unauthorized");
    } finally {
      vi.useRealTimers();
    }
    expect(await runInDurableObject(stub, (_instance, state) => state.getWebSockets("events").length)).toBe(
      0,
    );
  });

  it("without SOCKET_TICKET_SECRET issues no ticket, storing none, but in local development (DEV_TENANT)", async () => {
    const id = await createSession();
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    const stored = () =>
      runInDurableObject(
        stub,
        (_instance, state) => [...state.storage.kv.list({ prefix: "socket-ticket" })].length,
      );
    const unset = { SOCKET_TICKET_SECRET: undefined } as unknown as Record<string, string>;
    const misconfigured = [
      unset,
      { SOCKET_TICKET_SECRET: "too short" },
      {
        SOCKET_TICKET_SECRET: "a secret that bearer JWTs use too, 32+ bytes",
        JWT_SECRET: "a secret that bearer JWTs use too, 32+ bytes",
      },
    ];
    for (const settings of misconfigured) {
      const refused = await apiWith(settings)("POST", `/v1/sessions/${id}/tickets`, { body: {} });
      expectError(refused, 503, "misconfigured");
    }
    expect(await stored()).toBe(0);
    const minted = await api("POST", `/v1/sessions/${id}/tickets`, { body: {} });
    const unsealable = await upgradeWith(unset, minted.body.url);
    expect(unsealable.status).toBe(503);
    expect(((await unsealable.json()) as { error: { code: string } }).error.code).toBe("misconfigured");
    // Locally each isolate seals with a key of its own: `npm start` needs no setting.
    const local = { ...unset, DEV_TENANT: "local" };
    const sealed = await apiWith(local)("POST", `/v1/sessions/${id}/tickets`, { body: {} });
    expect(sealed.status, sealed.text).toBe(201);
    expect((await upgradeWith({}, sealed.body.url)).status).toBe(401);
    const opened = await upgradeWith(local, sealed.body.url);
    expect(opened.status).toBe(101);
    opened.webSocket?.accept();
    opened.webSocket?.close(1000, "done");
    expect((await upgradeWith(local, sealed.body.url)).status).toBe(401);
  });

  it("refuses a forged ticket, another tenant, and a handshake from another site", async () => {
    const id = await createSession();
    const minted = await api("POST", `/v1/sessions/${id}/tickets`, { body: {} });
    const forged = `${minted.body.ticket.slice(0, -4)}0000`;
    expect((await connect(`/v1/sessions/${id}/ws?ticket=${forged}`, {})).status).toBe(401);
    expect((await connect(`/v1/sessions/${id}/ws?ticket=garbage`, {})).status).toBe(401);
    const other = await connect(`/v1/sessions/${id}/ws`, { Authorization: `Bearer ${KEY_B}` });
    expect(other.status).toBe(404);
    const crossSite = await connect(`/v1/sessions/${id}/ws`, {
      Authorization: `Bearer ${KEY_A}`,
      Origin: "https://evil.example",
    });
    expect(crossSite.status).toBe(403);
    expectError(await api("GET", `/v1/sessions/${id}/ws`), 400, "invalid_request");
    expectError(await api("POST", `/v1/sessions/${id}/tickets`, { key: KEY_B, body: {} }), 404, "not_found");
  });

  it("answers a message it cannot serve once, with its reason and a 1008 close", async () => {
    const id = await createSession();
    await append(id, "a");
    const messages = [
      "not json",
      "null",
      "[]",
      "{}",
      '{"after":"1"}',
      JSON.stringify({ after: 0, token: "wrong" }),
    ];
    for (const message of messages) {
      const watch = await open(`/v1/sessions/${id}/ws`);
      await watch.until((m) => m.event === "leaf");
      // Five at once: the first closes the socket, and none after it is answered.
      for (let i = 0; i < 5; i++) watch.socket.send(message);
      const refused = await watch.until((m) => m.event === "closed");
      expect(refused.map((m) => m.event)).toEqual(["closed"]);
      await expect(watch.until((m) => m.event === "closed", 300)).rejects.toThrow(/closed: 1008/);
    }
  });

  it("refuses an upgrade the object cannot serve in the error envelope, with the request id", async () => {
    const id = await createSession();
    const res = await exports.default.fetch(`http://sessions.test/v1/sessions/${id}/ws?after=7`, {
      headers: { Upgrade: "websocket", Authorization: `Bearer ${KEY_A}` },
    });
    const body = (await res.json()) as { error: { code: string; message: string; requestId?: string } };
    expect(res.status).toBe(400);
    expect(body.error.code).toBe("invalid_request");
    expect(body.error.message).toMatch(/seq from 0 to 0/);
    expect(body.error.requestId).toBe(res.headers.get("x-request-id"));
    expect(body.error.requestId).toMatch(/\S/);
  });

  it("is a socket whatever headers the client sends: a generation's id among them names no stream", async () => {
    const id = await createSession();
    const generation = await api("POST", `/v1/sessions/${id}/generations`, { body: {} });
    expect(generation.status).toBe(201);
    for (const named of ["%", encodeURIComponent(generation.body.id)]) {
      const watcher = await open(`/v1/sessions/${id}/ws`, {
        Authorization: `Bearer ${KEY_A}`,
        "x-generation-id": named,
      });
      expect(watcher.status).toBe(101);
      // A watcher joining finds the open generation announced, as any does.
      await watcher.until((message) => message.event === "generation");
      watcher.socket.close(1000, "done");
    }
  });

  it("admits no socket to a session deleted while its upgrade read blobs (it would never hear `deleted`)", async () => {
    const id = await createSession();
    const output = "tool output line\n".repeat(5000); // over BLOB_MIN_BYTES: kept in R2
    const written = await api("POST", `/v1/sessions/${id}/entries`, {
      body: {
        type: "message",
        message: {
          role: "toolResult",
          toolCallId: "call-1",
          toolName: "bash",
          content: [{ type: "text", text: output }],
          isError: false,
          timestamp: 1,
        },
      },
    });
    expect(written.status).toBe(201);
    const stub = env.SESSIONS.getByName(sessionObjectName("tenant-a", id));
    const outcome = await runInDurableObject(stub, async (instance, state) => {
      // The upgrade reads its first round's blobs from R2; the deletion is made in the meantime.
      const upgrade = instance.fetch(
        new Request("http://sessions.test/ws?after=0", { headers: { Upgrade: "websocket" } }),
      );
      const deletion = await instance.delete(60_000);
      const answer = await upgrade;
      answer.webSocket?.accept();
      answer.webSocket?.close(1000, "done");
      return {
        deleted: deletion.ok,
        status: answer.status,
        error: answer.webSocket
          ? undefined
          : ((await answer.json()) as { error: { code: string } }).error.code,
        sockets: state.getWebSockets("events").length,
      };
    });
    expect(outcome).toEqual({ deleted: true, status: 404, error: "not_found", sockets: 0 });
  });

  it("says deleted and closes when the session is deleted", async () => {
    const id = await createSession();
    const watch = await open(`/v1/sessions/${id}/ws`);
    await watch.until((m) => m.event === "leaf");
    expect((await api("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    expect((await watch.until((m) => m.event === "deleted"))[0]?.data).toEqual({ id });
  });
});
