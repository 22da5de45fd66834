/*
 * Reading an NDJSON answer (a session's export, a tenant's stream) as it arrives, so a long one is
 * never held whole. A reader that stops early (breaks out of its loop, fails, or aborts its signal)
 * hangs up: the rest of the answer is not left coming.
 */

/** The lines of an NDJSON answer as it arrives, each ending in a newline. */
export async function* responseLines(response: Response, signal?: AbortSignal): AsyncGenerator<string> {
  if (!response.body) return;
  const decoder = new TextDecoder();
  const reader = response.body.getReader();
  // Node's fetch loses the link from `signal` to the body once the request it made is collected:
  // aborting cancels the body here as well.
  const stop = () => void reader.cancel(signal?.reason).catch(() => undefined);
  signal?.addEventListener("abort", stop, { once: true });
  let rest = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      signal?.throwIfAborted();
      // Only the new text is split: a long line that comes in many pieces is not split again for each.
      const lines = decoder.decode(value, { stream: !done }).split("\n");
      const unfinished = lines.pop() ?? "";
      if (lines.length === 0) rest += unfinished;
      else {
        lines[0] = rest + lines[0];
        rest = unfinished;
      }
      for (const line of lines) if (line) yield `${line}\n`;
      if (done) break;
    }
    if (rest) yield `${rest}\n`;
  } finally {
    signal?.removeEventListener("abort", stop);
    await reader.cancel().catch(() => undefined);
  }
}
