/*
 * Reading an NDJSON answer (a session's export, a tenant's stream) as it arrives, so a long one is
 * never held whole.
 */

/** The lines of an NDJSON answer as it arrives, each ending in a newline. */
export async function* responseLines(response: Response): AsyncGenerator<string> {
  if (!response.body) return;
  const decoder = new TextDecoder();
  const reader = response.body.getReader();
  let rest = "";
  for (;;) {
    const { done, value } = await reader.read();
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
}
