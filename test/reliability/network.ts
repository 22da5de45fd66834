/*
 * The network between a client and the service, with faults: a request lost on the way (it never
 * arrives), an answer lost on the way back (the request was applied, the client sees a network
 * error), and an event stream cut in the middle. Each fault is drawn from a seeded random, so a run
 * is repeatable from its seed. Every attempt is told to `observe`, so an operation knows what each
 * of its tries came to.
 */

export type Fetch = (request: Request) => Promise<Response>;

export interface NetworkFaults {
  /** Chance a request is lost before it arrives. */
  loseRequest: number;
  /** Chance an answer is lost after the request was applied. */
  loseAnswer: number;
  /** Chance an event stream is cut after each chunk it carries. */
  cutStream: number;
}

export const NO_NETWORK_FAULTS: NetworkFaults = { loseRequest: 0, loseAnswer: 0, cutStream: 0 };

/** What one attempt came to: an answer's status (and error body), or no answer. */
export interface Attempt {
  status?: number;
  code?: string;
  outcome?: string;
  lost?: "request" | "answer";
}

export class LostConnection extends TypeError {
  constructor(what: string) {
    super(`injected fault: ${what}`);
  }
}

/** A stream that fails after some chunks, as a connection that drops does. */
function cuttable(body: ReadableStream<Uint8Array>, cut: () => boolean): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) return controller.close();
      controller.enqueue(value);
      if (cut()) {
        await reader.cancel().catch(() => undefined);
        controller.error(new LostConnection("the event stream was cut"));
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

/**
 * `target` behind a network with `faults` (read at each request, so a run can stop them), each
 * attempt told to `observe`.
 */
export function faultyNetwork(
  target: Fetch,
  faults: () => NetworkFaults,
  random: () => number,
  observe: (attempt: Attempt) => void = () => undefined,
  injected: Record<string, number> = {},
): Fetch {
  const count = (kind: string) => {
    injected[kind] = (injected[kind] ?? 0) + 1;
  };
  return async (request) => {
    const now = faults();
    if (random() < now.loseRequest) {
      count("lost request");
      observe({ lost: "request" });
      throw new LostConnection("the request was lost");
    }
    let response: Response;
    let body: ArrayBuffer;
    try {
      response = await target(request);
      if ((response.headers.get("Content-Type") ?? "").startsWith("text/event-stream") && response.body) {
        observe({ status: response.status });
        return new Response(
          cuttable(response.body, () => {
            const cut = random() < faults().cutStream;
            if (cut) count("cut stream");
            return cut;
          }),
          response,
        );
      }
      body = await response.arrayBuffer();
    } catch (error) {
      // The connection broke while the request was out or its answer on the way (the service was
      // killed, say): it may or may not have been applied.
      observe({ lost: "answer" });
      throw error;
    }
    if (random() < now.loseAnswer) {
      count("lost answer");
      observe({ lost: "answer" });
      throw new LostConnection("the answer was lost");
    }
    const attempt: Attempt = { status: response.status };
    if (!response.ok) {
      try {
        const error = (
          JSON.parse(new TextDecoder().decode(body)) as {
            error?: { code?: string; details?: { outcome?: string } };
          }
        ).error;
        if (error?.code) attempt.code = error.code;
        if (error?.details?.outcome) attempt.outcome = error.details.outcome;
      } catch {
        // Not the error envelope: the status says enough.
      }
    }
    observe(attempt);
    const empty = response.status === 204 || response.status === 304 || body.byteLength === 0;
    return new Response(empty ? null : body, response);
  };
}

/** Server errors that say nothing was applied (an `unavailable` says so unless its outcome is unknown). */
const DEFINITE = new Set(["unavailable", "summarizer_failed", "branch_summary_failed", "session_full"]);

/**
 * What an operation's attempts, then its final result, came to: acknowledged (it succeeded),
 * failed (no attempt can have been applied), or unknown.
 */
export function outcomeOf(attempts: readonly Attempt[], succeeded: boolean): "acked" | "failed" | "unknown" {
  if (succeeded) return "acked";
  const mayHaveApplied = attempts.some(
    (attempt) =>
      attempt.lost === "answer" ||
      attempt.outcome === "unknown" ||
      (attempt.status !== undefined && attempt.status >= 500 && !DEFINITE.has(attempt.code ?? "")),
  );
  return mayHaveApplied ? "unknown" : "failed";
}

/** One attempt in a word or two, for a report. */
export function describeAttempt(attempt: Attempt): string {
  if (attempt.lost) return `lost ${attempt.lost}`;
  return [attempt.status, attempt.code, attempt.outcome].filter((part) => part !== undefined).join(" ");
}
