import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { JSONLRepo } from "../../src/node";

/**
 * Fresh root folders in the system temp folder, and the repos made over them; every repo is
 * cleaned up (locks released, logs closed) and every folder removed after the file's tests.
 */
export function tempRoots() {
  const roots: string[] = [];
  const repos: JSONLRepo[] = [];
  afterAll(async () => {
    await Promise.allSettled(repos.map((repo) => repo.cleanup()));
    await Promise.all(roots.map((root) => rm(root, { recursive: true, force: true })));
  });
  return {
    async root(): Promise<string> {
      const root = await mkdtemp(join(tmpdir(), "cf-sessions-jsonl-"));
      roots.push(root);
      return root;
    },
    /** A repo over `root`, or over a fresh root when none is given. */
    async repo(root?: string): Promise<JSONLRepo> {
      const repo = new JSONLRepo(root ?? (await this.root()));
      repos.push(repo);
      return repo;
    },
  };
}
