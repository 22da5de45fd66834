import { vi } from "vitest";

/** What the service wrote to the console while capturing: every line, and the request lines parsed. */
export interface CapturedLogs {
  lines: string[];
  requests(): RequestLine[];
  background(): Record<string, unknown>[];
}

export interface RequestLine {
  type: "request";
  requestId: string;
  method: string;
  route: string | null;
  status: number;
  errorCode: string | null;
  durationMs: number;
  bytesIn: number;
  bytesOut: number;
  tenant: string | null;
  sessionId: string | null;
  failure?: string;
  incomplete?: boolean;
}

function parsed(lines: string[], type: string): Record<string, unknown>[] {
  return lines.filter((line) => line.startsWith(`{"type":"${type}"`)).map((line) => JSON.parse(line));
}

/** Captures the console (restore with `vi.restoreAllMocks()`). */
export function captureLogs(): CapturedLogs {
  const lines: string[] = [];
  for (const method of ["log", "info", "warn", "error", "debug"] as const) {
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => {
      lines.push(args.map((arg) => (typeof arg === "string" ? arg : JSON.stringify(arg))).join(" "));
    });
  }
  return {
    lines,
    requests: () => parsed(lines, "request") as unknown as RequestLine[],
    background: () => parsed(lines, "background"),
  };
}

/** The line of one request, once it has been written (after the answer's body was read). */
export function lineOf(logs: CapturedLogs, requestId: string | null): RequestLine {
  const lines = logs.requests().filter((line) => line.requestId === requestId);
  if (lines.length !== 1) throw new Error(`expected one line for ${requestId}, found ${lines.length}`);
  return lines[0] as RequestLine;
}
