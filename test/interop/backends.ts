import { join } from "node:path";
import { MemoryRepo } from "../../src/core/memory";
import type { SessionRepo } from "../../src/core/repo";
import type { JSONLRepo } from "../../src/node";
import { ENTRIES_FILE, sessionFolder } from "../../src/node/layout";
import { tempRoots } from "../node/temp-root";

/** Where the ported pi tests run: every suite runs once per backend. */
export interface Backend {
  name: string;
  repo(): Promise<SessionRepo>;
  /** The entries file of a session in a JSONL repo, to look at what was written; absent in memory. */
  entriesFile?(repo: SessionRepo, id: string): string;
}

/** Memory and JSONL files (in temporary folders removed after the test file). Call at top level. */
export function backends(): Backend[] {
  const temp = tempRoots();
  return [
    { name: "memory", repo: async () => new MemoryRepo() },
    {
      name: "JSONL files",
      repo: () => temp.repo(),
      entriesFile: (repo, id) => join(sessionFolder((repo as JSONLRepo).root, id), ENTRIES_FILE),
    },
  ];
}
