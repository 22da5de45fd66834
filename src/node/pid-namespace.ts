import { readlinkSync } from "node:fs";

let cached: string | undefined;

/**
 * The pid namespace this process is in (Linux: `pid:[<inode>]`), in which its pids name
 * processes: a container has one of its own, so a pid seen from another names another process.
 * Empty where it cannot be read, and on systems without pid namespaces.
 */
export function pidNamespace(): string {
  cached ??= readPidNamespace();
  return cached;
}

/**
 * Whether the pids of a process that recorded `recorded` as its pid namespace are known to be
 * this process's too. Only Linux has several: there, a namespace not recorded, or not readable
 * here, may be another.
 */
export function sharesPidNamespace(recorded: string): boolean {
  if (process.platform !== "linux") return true;
  return pidNamespace() !== "" && recorded === pidNamespace();
}

function readPidNamespace(): string {
  if (process.platform !== "linux") return "";
  try {
    return readlinkSync("/proc/self/ns/pid");
  } catch {
    return "";
  }
}
