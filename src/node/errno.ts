import { SessionError } from "../core/internal";

/** The `code` of a failed system call (`ENOENT`, `EEXIST`, …), or undefined for any other error. */
export function errnoCode(error: unknown): string | undefined {
  if (error instanceof SessionError || !(error instanceof Error) || !("code" in error)) return undefined;
  return typeof error.code === "string" ? error.code : undefined;
}

/** An I/O failure as the library reports it: `internal`, naming the file, with the system error as cause. */
export function ioError(action: string, file: string, error: unknown): SessionError {
  const reason = error instanceof Error ? error.message : String(error);
  const wrapped = new SessionError("internal", `${action} ${file} failed: ${reason}`, {
    file,
    errno: errnoCode(error),
  });
  wrapped.cause = error;
  return wrapped;
}
