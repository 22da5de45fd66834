import { describe, expect, it } from "vitest";
import { type Attempt, faultyNetwork, NO_NETWORK_FAULTS, outcomeOf } from "../reliability/network";

/*
 * The soak's network decides what an operation's outcome may be: a write is held to "not there"
 * only when no attempt of it can have been applied. An answer that breaks off after its headers
 * (the service killed while it answered) may follow an applied write, as a connection that breaks
 * before any answer may.
 */

const never = () => 1;

/** An answer whose headers arrive and whose body then fails, as when the server dies mid-answer. */
function brokenAnswer(): Response {
  let sent = false;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (!sent) {
        sent = true;
        controller.enqueue(new TextEncoder().encode('{"id":'));
      } else controller.error(new TypeError("terminated"));
    },
  });
  return new Response(body, { status: 201, headers: { "Content-Type": "application/json" } });
}

describe("the soak's faulty network", () => {
  it("counts an answer whose body breaks off as lost: the write may have been applied", async () => {
    const attempts: Attempt[] = [];
    const fetch = faultyNetwork(
      async () => brokenAnswer(),
      () => NO_NETWORK_FAULTS,
      never,
      (a) => attempts.push(a),
    );
    await expect(fetch(new Request("http://service.test/v1/sessions", { method: "POST" }))).rejects.toThrow();
    expect(attempts).toEqual([{ lost: "answer" }]);
    expect(outcomeOf(attempts, false)).toBe("unknown");
  });

  it("counts a connection that breaks before any answer as lost", async () => {
    const attempts: Attempt[] = [];
    const fetch = faultyNetwork(
      async () => {
        throw new TypeError("fetch failed");
      },
      () => NO_NETWORK_FAULTS,
      never,
      (a) => attempts.push(a),
    );
    await expect(fetch(new Request("http://service.test/v1/sessions", { method: "POST" }))).rejects.toThrow();
    expect(outcomeOf(attempts, false)).toBe("unknown");
  });

  it("holds a write to not applied only when every attempt was refused or never arrived", async () => {
    const attempts: Attempt[] = [];
    const lostEveryRequest = { ...NO_NETWORK_FAULTS, loseRequest: 1 };
    const fetch = faultyNetwork(
      async () => new Response(null, { status: 204 }),
      () => lostEveryRequest,
      () => 0,
      (a) => attempts.push(a),
    );
    await expect(fetch(new Request("http://service.test/v1/sessions", { method: "POST" }))).rejects.toThrow();
    expect(attempts).toEqual([{ lost: "request" }]);
    expect(outcomeOf(attempts, false)).toBe("failed");
  });
});
