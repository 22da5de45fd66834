/*
 * Tool-call ids as each API accepts them. A session can hold ids from any provider: OpenAI
 * Responses' `call_…|fc_…` pairs of 450+ characters, Kimi's `functions.read:0`, ids a provider
 * reuses every turn, empty ids. Every call of one request gets its own wire id from one allocator,
 * and its result is rewritten through the same pairing, so no two calls share an id (two long ids
 * with the same 64-character prefix stay apart) and a valid, unique id goes out unchanged.
 */

export interface ToolCallIdRule {
  /** Longest id the API takes. */
  maxLength: number;
}

/** Anthropic: `^[a-zA-Z0-9_-]{1,64}$`. Gemini takes the same where it takes ids at all. */
export const ANTHROPIC_IDS: ToolCallIdRule = { maxLength: 64 };
/** OpenAI Chat Completions: at most 40 characters. */
export const OPENAI_CHAT_IDS: ToolCallIdRule = { maxLength: 40 };
/** OpenAI Responses `call_id`. */
export const OPENAI_RESPONSES_IDS: ToolCallIdRule = { maxLength: 64 };
/** What every provider behind the AI SDK accepts. */
export const PORTABLE_IDS: ToolCallIdRule = { maxLength: 40 };

const INVALID = /[^A-Za-z0-9_-]/g;

/** The call part of pi-ai's Responses ids (`call_id|item_id`); the item id travels apart. */
export function callIdPart(id: string): string {
  const pipe = id.indexOf("|");
  return pipe < 0 ? id : id.slice(0, pipe);
}

/** The item part of pi-ai's Responses ids (`call_id|item_id`), if there is one. */
export function itemIdPart(id: string): string | undefined {
  const pipe = id.indexOf("|");
  return pipe < 0 ? undefined : id.slice(pipe + 1) || undefined;
}

/** Hands out wire ids for one request: each call occurrence gets an id no other call has. */
export class ToolCallIds {
  private readonly used = new Set<string>();
  private readonly nextSuffix = new Map<string, number>();

  constructor(private readonly rule: ToolCallIdRule) {}

  allocate(id: string): string {
    const base = (callIdPart(id).replace(INVALID, "_") || "call").slice(0, this.rule.maxLength);
    if (!this.used.has(base)) {
      this.used.add(base);
      return base;
    }
    // Counting on from the last suffix tried keeps a run of equal ids linear.
    let n = this.nextSuffix.get(base) ?? 2;
    for (;;) {
      const suffix = `_${n}`;
      const candidate = base.slice(0, this.rule.maxLength - suffix.length) + suffix;
      n++;
      if (!this.used.has(candidate)) {
        this.nextSuffix.set(base, n);
        this.used.add(candidate);
        return candidate;
      }
    }
  }
}
