import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/*
 * A session object's alarm has one owner (object-alarm.ts): the parts say when their work is due,
 * and only the owner sets the alarm, to the earliest of those times. A part that set it itself could
 * push back work another part has due sooner.
 */

const SESSION = resolve(import.meta.dirname, "../../src/durable/session");

describe("the session object's alarm", () => {
  it("is set, read and cleared in object-alarm.ts only", () => {
    const touching = readdirSync(SESSION)
      .filter((name) => name.endsWith(".ts"))
      .filter((name) => /\.(setAlarm|getAlarm|deleteAlarm)\(/.test(readFileSync(join(SESSION, name), "utf8")))
      .map((name) => relative(SESSION, join(SESSION, name)));
    expect(touching).toEqual(["object-alarm.ts"]);
  });
});
