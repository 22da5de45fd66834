import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseNative } from "../../src/core/native-format";
import type { SessionRepo } from "../../src/core/repo";
import type { Session } from "../../src/core/session";

/*
 * Sessions the framework adapters of cf-sessions 0.1 wrote (test/fixtures/frameworks/README.md),
 * imported under a new id, with what those adapters read back from them.
 */

const dir = join(import.meta.dirname, "../fixtures/frameworks");

export async function earlierSession<T>(
  repo: SessionRepo,
  name: "openai-agents-0.1.0" | "ai-sdk-0.1.0" | "langgraph-0.1.0",
  id = `${name}-${crypto.randomUUID()}`,
): Promise<{ session: Session; expected: T }> {
  const file = parseNative(readFileSync(join(dir, `${name}.ndjson`), "utf8"));
  const session = await repo.importSession(file, { id });
  const expected = JSON.parse(readFileSync(join(dir, `${name}.expected.json`), "utf8")) as T;
  return { session, expected };
}
