/*
 * Where Claude Code's tool results hang. Claude Code hangs each result of parallel tool calls from
 * the line of its own call, so all but one land beside the conversation's chain. Here the results
 * of one assistant message follow one another in the order written, and what hangs from any of
 * them continues after the last, so the context holds every call's result. The lines of one API
 * message read apart (each an entry of its own) are a group named by its first entry: a result
 * then hangs after the group's latest entry (line or result), so the group and its results are one
 * chain. Every decision looks at the lines before only, so lines read one at a time, and read again
 * from what they were written as, hang where a whole file's do.
 */

export class CallGroups {
  /** Each entry's parent, by id. */
  #parentOf = new Map<string, string | null>();
  /** Custom entries (lines that are no messages): a result still answers the call they follow. */
  #custom = new Set<string>();
  /** The first entry of each API message, by the message's id. */
  #messageOf = new Map<string, string>();
  /** The assistant entry that made each tool call (the first of its group), by call id. */
  #callOwner = new Map<string, string>();
  /** The first entry of the API message an assistant entry is a further line of, read apart. */
  #groupOf = new Map<string, string>();
  /** The assistant entry each tool result entry answers. */
  #resultOf = new Map<string, string>();
  /**
   * Where the next result of an assistant entry hangs, by the assistant entry: its last tool result
   * entry, or the group's latest entry.
   */
  #lastResult = new Map<string, string>();

  /** A copy to plan on: what it notes leaves this one as it was. */
  copy(): CallGroups {
    const copy = new CallGroups();
    copy.#parentOf = new Map(this.#parentOf);
    copy.#custom = new Set(this.#custom);
    copy.#messageOf = new Map(this.#messageOf);
    copy.#callOwner = new Map(this.#callOwner);
    copy.#groupOf = new Map(this.#groupOf);
    copy.#resultOf = new Map(this.#resultOf);
    copy.#lastResult = new Map(this.#lastResult);
    return copy;
  }

  noteEntry(id: string, parentId: string | null, custom: boolean): void {
    this.#parentOf.set(id, parentId);
    if (custom) this.#custom.add(id);
  }

  /**
   * The assistant entry an entry belongs to: itself (or the first of its group), or the one whose
   * results or custom entries it follows.
   */
  messageAbove(id: string | null): string | undefined {
    let at = id;
    while (at !== null && this.#custom.has(at)) at = this.#parentOf.get(at) ?? null;
    if (at === null) return undefined;
    return this.#resultOf.get(at) ?? this.#groupOf.get(at) ?? at;
  }

  /** The first entry of API message `apiId` when a line under entry `above` is a further block of it. */
  openMessage(apiId: string | undefined, above: string | undefined): string | undefined {
    const first = apiId === undefined ? undefined : this.#messageOf.get(apiId);
    return first !== undefined && above !== undefined && this.messageAbove(above) === first
      ? first
      : undefined;
  }

  /** Notes the entry of an API message's first line and the tools it calls. */
  noteMessage(entryId: string, apiId: string | undefined, callIds: readonly string[]): void {
    if (apiId !== undefined) this.#messageOf.set(apiId, entryId);
    for (const id of callIds) this.#callOwner.set(id, entryId);
  }

  /**
   * Notes a further line of the API message `first` starts: its calls are the message's; read
   * apart, `entryId` is the line's entry, after which the message's next result hangs.
   */
  noteFurtherLine(first: string, callIds: readonly string[], entryId?: string): void {
    for (const id of callIds) this.#callOwner.set(id, first);
    if (entryId === undefined) return;
    this.#groupOf.set(entryId, first);
    this.#lastResult.set(first, entryId);
  }

  /** What a line under entry `id` hangs from: after the last result when `id` is one. */
  following(id: string): string {
    const answered = this.#resultOf.get(id);
    return answered === undefined ? id : (this.#lastResult.get(answered) ?? id);
  }

  /**
   * Where the entries of a line whose first tool result answers `callId` hang, the line written
   * under `parentId`: after the results before it when it follows the message that made the call.
   */
  resultsParent(callId: string, parentId: string | null): string | null {
    const caller = this.#callOwner.get(callId);
    if (caller === undefined || this.messageAbove(parentId) !== caller) return parentId;
    return this.#lastResult.get(caller) ?? parentId;
  }

  /**
   * Notes the entries of a line whose first tool result answers `callId`, the first of them hung
   * from `parentId` (as `resultsParent` said): when they answer the message above, its next result
   * hangs after them.
   */
  noteResults(callId: string, parentId: string | null, entryIds: readonly string[]): void {
    const caller = this.#callOwner.get(callId);
    const last = entryIds.at(-1);
    if (caller === undefined || last === undefined || this.messageAbove(parentId) !== caller) return;
    for (const id of entryIds) this.#resultOf.set(id, caller);
    this.#lastResult.set(caller, last);
  }
}
