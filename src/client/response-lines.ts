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
    rest += decoder.decode(value, { stream: !done });
    const lines = rest.split("\n");
    rest = lines.pop() ?? "";
    for (const line of lines) if (line) yield `${line}\n`;
    if (done) break;
  }
  if (rest) yield `${rest}\n`;
}
