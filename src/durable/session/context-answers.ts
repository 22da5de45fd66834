import { jsonArray, textStream } from "../../core/context-answer";
import type { Result } from "../../core/errors";
import { capture } from "../../core/errors";
import { utf8Length } from "../../core/json";
import { slices } from "../blobs/blob-text";
import type { ContextAnswer } from "../types";
import type { BlobAnswer, SessionBlobs } from "./session-blobs";
import type { SessionCalls } from "./session-calls";
import type { SessionTelemetry } from "./session-telemetry";

/*
 * A context read as the object answers it: the version alone when the caller holds it already (no
 * body is built), else the context's JSON (see context-reads.ts), whole when kept in memory,
 * otherwise streamed page by page as it is sent; its blobs answered as their values, or as signed
 * URLs when asked for. Each answer's size and time go to a metric once sent.
 */

/** What a context answer uses of the object. */
export interface ContextAnswerHost {
  calls: SessionCalls;
  blobs: SessionBlobs;
  telemetry: SessionTelemetry;
}

export class ContextAnswers {
  readonly #host: ContextAnswerHost;

  constructor(host: ContextAnswerHost) {
    this.#host = host;
  }

  /** The context of a leaf (the head's when undefined); only what was appended when `since` allows. */
  async answer(
    leafId: string | null | undefined,
    options: { since?: string; ifNoneMatch?: readonly string[]; blobs?: BlobAnswer },
  ): Promise<Result<ContextAnswer>> {
    const result = await this.#host.calls.run((session): ContextAnswer => {
      const version = session.contexts.contextVersion(leafId);
      if (options.ifNoneMatch?.includes(version)) return { version, kind: "unchanged" };
      const started = Date.now();
      const answer = session.contexts.context(leafId, options.since);
      const sessionId = session.state.header.id;
      const sent = (bytes: number) =>
        this.#host.telemetry.metric({
          kind: "context",
          sessionId,
          source: answer.source,
          bytes,
          durationMs: Date.now() - started,
        });
      if ("text" in answer) {
        // The kept head context is one string already: sent whole, it saves the stream's round trips.
        // Its size is measured only for a metric that will be written (it may be megabytes).
        if (this.#host.telemetry.measuring) void sent(utf8Length(answer.text));
        return { version, kind: answer.kind, body: answer.text };
      }
      return {
        version,
        kind: answer.kind,
        body: textStream(jsonArray(answer.head, answer.pages, "}"), sent),
      };
    });
    if (!result.ok || result.value.kind === "unchanged") return result;
    const { body, ...answer } = result.value;
    const blobs = options.blobs ?? { urls: false };
    if (typeof body === "string" && !this.#host.blobs.hasBlobs) return result;
    // A kept context holding references may be far larger once they are answered: it is streamed.
    const stream = typeof body === "string" ? textStream(slices(body)) : body;
    return capture(async () => ({ ...answer, body: await this.#host.blobs.rehydrateStream(stream, blobs) }));
  }
}
