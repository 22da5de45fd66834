import { readFileSync } from "node:fs";

let cached: string | undefined;

/**
 * When this process started, as the kernel counts it (Linux: the boot's id and the clock tick the
 * process began at): the same in every thread of the process, different in a later process that
 * was given the same pid, as a container restarted as pid 1 is. Empty where the kernel does not
 * tell, so that every process with this pid looks the same there.
 */
export function processStart(): string {
  cached ??= readProcessStart();
  return cached;
}

function readProcessStart(): string {
  try {
    const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    const stat = readFileSync("/proc/self/stat", "utf8");
    // The fields after the command name, which is in parentheses and may hold spaces; the start
    // tick is field 22 of the whole line, the 20th of these.
    const tick = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
    return boot && tick ? `${boot}:${tick}` : "";
  } catch {
    return "";
  }
}
