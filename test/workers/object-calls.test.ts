import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { SessionError } from "../../src/core/errors";
import { sessionObjectName } from "../../src/durable/names";
import { objectCalls } from "../../src/durable/object-calls";
import { api, createSession, info, sid, userMessage } from "./helpers";

/* How the Worker and the objects call an object (src/durable/object-calls.ts). */

const sessionCalls = (id: string) => objectCalls(env.SESSIONS.getByName(sessionObjectName("tenant-a", id)));

it("answers the object's value, and throws its error again as the SessionError it was", async () => {
  const id = await createSession();
  expect(await sessionCalls(id).getInfo()).toMatchObject({ id, entryCount: 0 });
  const error = await sessionCalls(sid("missing"))
    .getInfo()
    .catch((e: unknown) => e);
  expect(error).toBeInstanceOf(SessionError);
  expect(error).toMatchObject({ code: "not_found", message: "session does not exist" });
});

it("is not a promise: awaiting the calls themselves calls nothing", async () => {
  const calls = sessionCalls(sid("never"));
  expect(await calls).toBe(calls);
});

it("answers not_found for the pages after a first whose rows are gone, and writes nothing", async () => {
  // The pages after a first name their rows by seq: a session purged and made again under its id
  // since holds none of them.
  const id = await createSession();
  const res = await api("POST", `/v1/sessions/${id}/entries`, { body: userMessage("hello") });
  expect(res.status).toBe(201);
  const before = await info(id);
  for (const read of [
    () => sessionCalls(id).readEntries([1, 2, 3]),
    () => sessionCalls(id).getTreeNodes([2, 3]),
  ]) {
    const error = await read().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SessionError);
    expect(error).toMatchObject({ code: "not_found" });
  }
  expect(await info(id)).toEqual(before);
});
