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

/** The id a call is sent under when no other call of the request has it: its `call_id` part, made valid. */
function wireBase(id: string): string {
  return callIdPart(id).replace(INVALID, "_") || "call";
}

/** The lengths the formats cut ids to. */
const CUT_LENGTHS = new Set([OPENAI_CHAT_IDS.maxLength, ANTHROPIC_IDS.maxLength]);

/**
 * Whether `wireId` is the stored call id `storedId` as a format sent it (its invalid characters
 * replaced, cut to the format's length): a result naming it so answers that call.
 */
export function isWireIdOf(wireId: string, storedId: string): boolean {
  const base = wireBase(storedId);
  return wireId === base || (CUT_LENGTHS.has(wireId.length) && base.startsWith(wireId));
}

/** Hands out wire ids for one request: each call occurrence gets an id no other call has. */
export class ToolCallIds {
  private readonly used = new Set<string>();
  private readonly nextSuffix = new Map<string, number>();

  constructor(private readonly rule: ToolCallIdRule) {}

  allocate(id: string): string {
    const base = wireBase(id).slice(0, this.rule.maxLength);
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

/**
 * Wire ids for one read that its reader answers (a chat UI, a graph): each call gets its id as
 * `ToolCallIds` hands it out; a result, the id of the call it answers (the first waiting call with
 * its stored id, or whose `call_id` part it names); and a wire id the reader answers by maps back
 * to the stored call's id.
 */
export class AnsweredCallIds extends ToolCallIds {
  readonly #waiting = new Map<string, string[]>();
  /** The stored id of each pi-ai Responses call (`call_id|item_id`) by its `call_id`. */
  readonly #byCallId = new Map<string, string>();
  readonly #storedOf = new Map<string, string>();

  override allocate(id: string): string {
    const wire = super.allocate(id);
    this.#waiting.set(id, [...(this.#waiting.get(id) ?? []), wire]);
    const callId = callIdPart(id);
    if (callId !== id) this.#byCallId.set(callId, id);
    this.#storedOf.set(wire, id);
    return wire;
  }

  /** The wire id of the call a stored result answers; undefined when no call of the read waits for it. */
  result(storedId: string): string | undefined {
    const waiting = this.#waiting.get(storedId) ?? this.#waiting.get(this.#byCallId.get(storedId) ?? "");
    return waiting?.shift();
  }

  /** The stored id of the call the reader answers by `wireId` (as it is, for a call of the reader's own). */
  storedOf(wireId: string): string {
    return this.#storedOf.get(wireId) ?? wireId;
  }
}
