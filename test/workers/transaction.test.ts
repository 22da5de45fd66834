import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sessionObjectName } from "../../src/durable/names";
import { afterCommit, transaction } from "../../src/durable/transaction";

/*
 * What waits for a write to commit (a watcher's events) runs once the outermost transaction
 * commits, and never for one that rolled back, even when the write was an inner transaction that
 * succeeded inside an outer one that failed.
 */

const reloads: string[] = [];
const held = (name: string) => ({ reload: () => reloads.push(name) });

function storageOf(name: string) {
  return env.SESSIONS.getByName(sessionObjectName("tenant-a", name));
}

describe("afterCommit", () => {
  it("runs after the outermost transaction commits, in order", async () => {
    await runInDurableObject(storageOf(`tx-${crypto.randomUUID()}`), (_, state) => {
      const ran: string[] = [];
      transaction(state.storage, [], () => {
        transaction(state.storage, [], () => afterCommit(state.storage, () => ran.push("inner")));
        afterCommit(state.storage, () => ran.push("outer"));
        expect(ran).toEqual([]);
      });
      expect(ran).toEqual(["inner", "outer"]);
      afterCommit(state.storage, () => ran.push("outside"));
      expect(ran).toEqual(["inner", "outer", "outside"]);
    });
  });

  it("never runs for a write the outer transaction rolled back", async () => {
    await runInDurableObject(storageOf(`tx-${crypto.randomUUID()}`), (_, state) => {
      const ran: string[] = [];
      state.storage.sql.exec("CREATE TABLE IF NOT EXISTS t (v INTEGER)");
      expect(() =>
        transaction(state.storage, [held("outer")], () => {
          transaction(state.storage, [held("inner")], () => {
            state.storage.sql.exec("INSERT INTO t VALUES (1)");
            afterCommit(state.storage, () => ran.push("written"));
          });
          throw new Error("a later step fails");
        }),
      ).toThrow("a later step fails");
      expect(ran).toEqual([]);
      expect(state.storage.sql.exec("SELECT count(*) AS n FROM t").one().n).toBe(0);
      // The next transaction starts with nothing waiting.
      transaction(state.storage, [], () => afterCommit(state.storage, () => ran.push("next")));
      expect(ran).toEqual(["next"]);
    });
  });

  it("drops what a failed inner transaction left, and keeps the rest of the outer one", async () => {
    await runInDurableObject(storageOf(`tx-${crypto.randomUUID()}`), (_, state) => {
      const ran: string[] = [];
      transaction(state.storage, [], () => {
        afterCommit(state.storage, () => ran.push("before"));
        try {
          transaction(state.storage, [held("inner")], () => {
            afterCommit(state.storage, () => ran.push("rolled back"));
            throw new Error("refused");
          });
        } catch {
          // The outer transaction goes on without it.
        }
        afterCommit(state.storage, () => ran.push("after"));
      });
      expect(ran).toEqual(["before", "after"]);
      expect(reloads).toContain("inner");
    });
  });
});
