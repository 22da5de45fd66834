import type { FileHandle } from "node:fs/promises";
import { open } from "node:fs/promises";
import { errnoCode } from "./errno";

/** What platforms that cannot flush a folder (Windows among them) answer when asked to. */
const CANNOT_SYNC_FOLDER = new Set(["EISDIR", "EINVAL", "EPERM"]);

/**
 * Flushes a folder, so that a name just created or renamed in it survives a crash: flushing the
 * file itself keeps its bytes, not its name. Where the platform refuses, the name is as durable
 * as its file system makes it.
 */
export async function syncFolder(folder: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(folder, "r");
    await handle.sync();
  } catch (error) {
    if (!CANNOT_SYNC_FOLDER.has(errnoCode(error) ?? "")) throw error;
  } finally {
    await handle?.close();
  }
}
