import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { SessionError } from "../../src/core/errors";
import { sessionObjectName } from "../../src/durable/names";
import { objectCalls } from "../../src/durable/object-calls";
import { createSession, sid } from "./helpers";

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
