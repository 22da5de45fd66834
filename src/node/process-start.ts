import { readFileSync } from "node:fs";

let cached: string | undefined;

/**
 * When this process started, as the kernel counts it (Linux: the boot's id and the clock tick the
 * process began at): the same in every thread of the process, different in a later process that
 * was given the same pid, and in any process of another boot. Empty where the kernel does not
 * tell, so that every process with this pid looks the same there.
 */
export function processStart(): string {
  cached ??= startOf("self");
  return cached;
}

/** When the process `pid` of this pid namespace started (see `processStart`); empty when unknown. */
export function processStartOf(pid: number): string {
  return startOf(String(pid));
}

/** The boot a `processStart` value names; empty when unknown. */
export function bootOf(start: string): string {
  return start.slice(0, Math.max(0, start.lastIndexOf(":")));
}

function startOf(pid: string): string {
  try {
    const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The fields after the command name, which is in parentheses and may hold spaces; the start
    // tick is field 22 of the whole line, the 20th of these.
    const tick = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
    return boot && tick ? `${boot}:${tick}` : "";
  } catch {
    return "";
  }
}
