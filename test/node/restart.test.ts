import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { createClient } from "../../src/client";
import { assistant, user } from "../conformance/fixtures";
import { startDevServer } from "../support/dev-server";

it("keeps sessions, their entries and their leaf across a restart of the local server", async () => {
  const folder = mkdtempSync(join(tmpdir(), "sessions-restart-"));
  try {
    const first = await startDevServer({ persistTo: folder });
    let before: unknown;
    try {
      const client = createClient({ baseUrl: first.url });
      const session = await client.create({ id: "survivor", name: "kept" });
      const q = await session.appendMessage(user("question"));
      await session.appendMessage(assistant("answer"));
      await session.setLeafId(q);
      before = {
        info: await session.getInfo(),
        entries: await session.getEntries(),
        context: await session.buildContext(),
      };
    } finally {
      await first.stop();
    }
    const second = await startDevServer({ persistTo: folder });
    try {
      const session = await createClient({ baseUrl: second.url }).open("survivor");
      expect({
        info: await session.getInfo(),
        entries: await session.getEntries(),
        context: await session.buildContext(),
      }).toEqual(before);
      expect((await session.getInfo()).leafId).not.toBeNull();
    } finally {
      await second.stop();
    }
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}, 120_000);
