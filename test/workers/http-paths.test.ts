import { describe, expect, it } from "vitest";
import { openGeneration, sessionWithQuestion } from "./generation-helpers";
import { api, expectError } from "./helpers";

/*
 * Every route reads its path the same guarded way: a segment that is not valid percent-encoding is
 * the caller's mistake (400), never a failure of the service, whichever route and segment it is in.
 */

const MALFORMED = ["%ZZ", "%", "%E0%A4%A", "%C0%80"];

describe("a path that does not decode", () => {
  it("is refused as invalid_request by every route the API documents, in every parameter", async () => {
    const { id } = await sessionWithQuestion();
    const generation = await openGeneration(id);
    const spec = (await api("GET", "/v1/openapi.json", { key: null })).body as {
      paths: Record<string, Record<string, unknown>>;
    };
    const values: Record<string, string> = { sid: id, gid: generation.id };
    let checked = 0;
    for (const [template, operations] of Object.entries(spec.paths)) {
      const params = [...template.matchAll(/\{(\w+)\}/g)].map((match) => match[1] as string);
      for (const method of Object.keys(operations)) {
        for (const bad of params) {
          for (const malformed of MALFORMED) {
            const path = template.replace(/\{(\w+)\}/g, (_, name: string) =>
              name === bad ? malformed : (values[name] ?? "x"),
            );
            const verb = method.toUpperCase();
            const res = await api(verb, path, verb === "GET" || verb === "HEAD" ? {} : { body: {} });
            expect(res.status, `${method} ${path}: ${res.text}`).toBe(400);
            // A HEAD answer has no body to name its code.
            if (verb !== "HEAD") expectError(res, 400, "invalid_request");
            checked++;
          }
        }
      }
    }
    // The generation stream's routes are among them (GET and POST), as are the session's own.
    expect(checked).toBeGreaterThan(100);
  });

  it("is refused on a generation's stream and a stream's path alike, before anything is written", async () => {
    const { id } = await sessionWithQuestion();
    const generation = await openGeneration(id);
    const targets = [
      ["GET", `/v1/sessions/${id}/generations/%ZZ/stream`],
      ["POST", `/v1/sessions/%ZZ/generations/${generation.id}/stream`],
      ["GET", "/v1/stream/a%zz"],
      ["PUT", "/v1/stream/b%zz"],
    ] as const;
    for (const [method, path] of targets) {
      const body = method === "GET" ? {} : { raw: "x", headers: { "Content-Type": "text/plain" } };
      expectError(await api(method, path, body), 400, "invalid_request");
    }
    expect((await api("GET", `/v1/sessions/${id}/generations/${generation.id}`)).body.offset).toBe(
      generation.offset,
    );
  });
});
