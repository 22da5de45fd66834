import { SessionError } from "../core/errors";

/**
 * A setting of the service read once for each value it takes (`source`, its text). One that
 * `read` refuses is logged once (`invalid` says what then happens, the error why), and every call
 * is `misconfigured`, naming it as `name`, until its value changes.
 */
export function checkedSetting<T>(name: string, invalid: string): (source: string, read: () => T) => T {
  let last: { source: string; value: T } | { source: string; invalid: true } | undefined;
  return (source, read) => {
    if (last?.source !== source) {
      try {
        last = { source, value: read() };
      } catch (error) {
        console.error(`config: ${invalid}: ${(error as Error).message}`);
        last = { source, invalid: true };
      }
    }
    if ("invalid" in last) {
      throw new SessionError("misconfigured", `the service is misconfigured (${name}); see its log`);
    }
    return last.value;
  };
}
