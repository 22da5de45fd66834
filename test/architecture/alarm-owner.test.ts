import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/*
 * Every object's alarm has one owner (src/durable/object-alarm.ts): the parts say when their work
 * is due, and only the owner sets the alarm, to the earliest of those times. A part that set it
 * itself could push back work another part has due sooner.
 */

const SRC = resolve(import.meta.dirname, "../../src");

describe("the objects' alarms", () => {
  it("are set, read and cleared in src/durable/object-alarm.ts only", () => {
    const touching = readdirSync(SRC, { recursive: true, encoding: "utf8" })
      .filter((name) => name.endsWith(".ts"))
      .filter((name) => /\.(setAlarm|getAlarm|deleteAlarm)\(/.test(readFileSync(join(SRC, name), "utf8")))
      .map((name) => relative(SRC, join(SRC, name)));
    expect(touching).toEqual(["durable/object-alarm.ts"]);
  });
});
