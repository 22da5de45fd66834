import { createHash } from "node:crypto";
import { mkdirSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { tryParseJson } from "../core/json";
import { writeFileAtomically } from "./atomic-file";

/*
 * What `pull` last wrote to each file, kept under `$XDG_STATE_HOME/cf-sessions/pulled/` (one small
 * record per file, named by a hash of its path): its size and SHA-256. A file that still has them
 * holds nothing the agent wrote since, so pulling again may replace it, whatever the session
 * became meanwhile (renamed, compacted, its head moved back).
 */

type Env = Record<string, string | undefined>;

interface PullRecord {
  path: string;
  size: number;
  sha256: string;
}

function recordPath(path: string, env: Env): string {
  const base = env.XDG_STATE_HOME || join(homedir(), ".local", "state");
  const key = createHash("sha256").update(path).digest("hex").slice(0, 32);
  return join(base, "cf-sessions", "pulled", `${key}.json`);
}

function fingerprint(bytes: Buffer): { size: number; sha256: string } {
  return { size: bytes.length, sha256: createHash("sha256").update(bytes).digest("hex") };
}

/** Whether the file at `path` is, byte for byte, what `pull` last wrote there. */
export function isAsPulled(path: string, env: Env): boolean {
  let record: PullRecord | undefined;
  try {
    record = tryParseJson(readFileSync(recordPath(path, env), "utf8")) as PullRecord | undefined;
  } catch {
    return false;
  }
  if (record?.path !== path) return false;
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch {
    return false;
  }
  const now = fingerprint(bytes);
  return now.size === record.size && now.sha256 === record.sha256;
}

/** Notes what `pull` just wrote to `path`. */
export async function notePulled(path: string, env: Env): Promise<void> {
  const record: PullRecord = { path, ...fingerprint(readFileSync(path)) };
  const at = recordPath(path, env);
  mkdirSync(dirname(at), { recursive: true });
  await writeFileAtomically(
    at,
    (async function* () {
      yield JSON.stringify(record);
    })(),
  );
}
