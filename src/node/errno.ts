import { SessionError } from "../core/errors";

/** The `code` of a failed system call (`ENOENT`, `EEXIST`, …), or undefined for any other error. */
export function errnoCode(error: unknown): string | undefined {
  if (error instanceof SessionError || !(error instanceof Error) || !("code" in error)) return undefined;
  return typeof error.code === "string" ? error.code : undefined;
}

/**
 * An I/O failure as the library reports it: `internal`, naming the file, with the system error as
 * cause. A `SessionError` (a refusal the library made itself) passes through as it is.
 */
export function ioError(action: string, file: string, error: unknown): SessionError {
  if (error instanceof SessionError) return error;
  const reason = error instanceof Error ? error.message : String(error);
  const wrapped = new SessionError("internal", `${action} ${file} failed: ${reason}`, {
    file,
    errno: errnoCode(error),
  });
  wrapped.cause = error;
  return wrapped;
}

/** What `promise` gives, or undefined when it fails because the file is not there (ENOENT). */
export async function unlessMissing<T>(promise: Promise<T>): Promise<T | undefined> {
  try {
    return await promise;
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return undefined;
    throw error;
  }
}
