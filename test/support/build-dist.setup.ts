import { execFileSync } from "node:child_process";
import { resolve } from "node:path";

/*
 * The command line the Node tests run as a person runs it (dist/cli.js), built once before any of
 * them: a build empties dist/ first, so a test file building it while another runs it would find
 * no command line there.
 */

export default function setup(): void {
  const root = resolve(import.meta.dirname, "../..");
  execFileSync(process.execPath, [resolve(root, "scripts/build.mjs"), "--skip-types"], { cwd: root });
}
