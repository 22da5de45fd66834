import { isErrorCode, SessionError } from "../../core/errors";
import type {
  StreamAppend,
  StreamBackupSource,
  StreamBackupTarget,
  StreamExport,
  StreamHeader,
  StreamImportWrite,
} from "../../core/stream-backup";
import type { DurableEnv } from "../env";
import { objectCalls } from "../object-calls";
import { streamKey, streamObjectName } from "../stream/paths";
import { HEADER, readCreateRequest, withinLatestExpiry } from "../stream/protocol";
import { STREAM_KEY_HEADER, STREAM_TENANT_HEADER } from "../stream/stream-object";
import { listTenantStreams, streamCursor } from "./tenant-streams";

/*
 * The tenant's streams in its backup (core's stream-backup.ts): read from each stream's object a
 * page of appends at a time, and written back through the protocol, so that each stream's object
 * checks and counts what an import writes as it does any write.
 */

/** Streams listed per step of an export, and bytes of appends read per call to a stream's object. */
const LIST_PAGE = 100;
const APPENDS_PAGE_BYTES = 1024 * 1024;

function objects(env: DurableEnv): NonNullable<DurableEnv["STREAMS"]> {
  if (env.STREAMS === undefined) {
    throw new SessionError("misconfigured", "this service has no STREAMS binding; streams are not served");
  }
  return env.STREAMS;
}

/** The tenant's streams after `after`, in path order, each read when the export comes to it. */
export function streamBackupSource(env: DurableEnv, tenant: string): StreamBackupSource["streams"] {
  return async function* (after) {
    if (env.STREAMS === undefined) return;
    let cursor: string | undefined = after === null ? undefined : streamCursor(after);
    do {
      const page = await listTenantStreams(env, tenant, { limit: LIST_PAGE, cursor });
      for (const { path } of page.streams) {
        const stream = objectCalls(objects(env).getByName(streamObjectName(tenant, path)));
        let header: StreamHeader;
        try {
          header = await stream.exportHeader(path);
        } catch (error) {
          // Deleted since the listing was read: it is not in the tenant any more.
          if (error instanceof SessionError && (error.code === "not_found" || error.code === "gone"))
            continue;
          throw error;
        }
        const appends = async function* (): AsyncGenerator<StreamAppend> {
          for (let from: number | null = 0; from !== null; ) {
            const next = await stream.exportAppends(path, from, APPENDS_PAGE_BYTES);
            yield* next.appends;
            from = next.next;
          }
        };
        yield { header, appends } satisfies StreamExport;
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  };
}

/** The object of the tenant's stream at `path`. */
function streamObject(env: DurableEnv, tenant: string, path: string) {
  return objects(env).getByName(streamObjectName(tenant, path));
}

/** A protocol request to the stream at `path` of the tenant, as its object reads it. */
function request(
  tenant: string,
  path: string,
  method: string,
  headers: Record<string, string> = {},
  body?: BodyInit,
): Request {
  return new Request(`https://streams.internal/v1/stream/${encodeURI(path)}`, {
    method,
    headers: {
      ...headers,
      [STREAM_TENANT_HEADER]: encodeURIComponent(tenant),
      [STREAM_KEY_HEADER]: encodeURIComponent(path),
    },
    body,
  });
}

/** The answer, when it is a refusal, as the error it carries. */
async function check(answer: Response): Promise<void> {
  if (answer.ok) return;
  const body = (await answer.json().catch(() => undefined)) as
    | { error?: { code?: unknown; message?: unknown; details?: unknown } }
    | undefined;
  const code = body?.error?.code;
  const message =
    typeof body?.error?.message === "string" ? body.error.message : `the stream answered ${answer.status}`;
  throw new SessionError(isErrorCode(code) ? code : "internal", message, body?.error?.details);
}

/**
 * The headers of the create that makes the stream a header line describes, checked as the stream's
 * object checks a create's; `invalid_request` when no create could make it (an expiry past, a
 * content type that is no header value). An expiry later than a create takes is brought back to
 * the latest it takes (`withinLatestExpiry`, which the object applies again as it makes the stream).
 */
function createHeaders(header: StreamHeader): Record<string, string> {
  const expiry: Record<string, string> =
    header.ttlSeconds !== null
      ? { [HEADER.ttl]: String(header.ttlSeconds) }
      : header.expiresAt !== null
        ? { [HEADER.expiresAt]: header.expiresAt }
        : {};
  let given: Headers;
  try {
    given = new Headers({ "Content-Type": header.contentType, ...expiry });
  } catch {
    throw new SessionError("invalid_request", "the stream's content type is not a valid header value", {
      contentType: header.contentType,
    });
  }
  const now = Date.now();
  const headers = withinLatestExpiry(given, now);
  readCreateRequest(headers, now);
  return Object.fromEntries(headers);
}

/**
 * The body of a JSON append of `json` (its messages, joined by commas): one message that is no
 * array as it is, so that an append as large as one may be stays so; any other, as an array of them.
 */
function jsonAppendBody(json: string): string {
  const text = json.trim();
  if (!text.startsWith("[")) {
    try {
      JSON.parse(text);
      return text;
    } catch {
      // More than one message.
    }
  }
  return `[${json}]`;
}

/**
 * Makes each stream of an import empty and open, appends to it, and closes it when it was. The
 * stream's object is claimed for the import first (`claimImport`): until the import ends, clients
 * find no stream there; a stream an import began and never finished (its Worker went away midway)
 * is written again by the next import rather than taken for one already there, and an import
 * replaced that way writes nothing more.
 */
export function streamBackupTarget(env: DurableEnv, tenant: string): StreamBackupTarget {
  return {
    async beginStream(header: StreamHeader): Promise<StreamImportWrite> {
      const { contentType } = header;
      // A stream is made only where its clients can reach it.
      const path = streamKey(header.path);
      const stream = streamObject(env, tenant, path);
      const token = crypto.randomUUID();
      const write = async (method: string, headers?: Record<string, string>, body?: BodyInit) =>
        check(await stream.importFetch(token, request(tenant, path, method, headers, body)));
      const create = createHeaders(header);
      const found = await stream.fetch(request(tenant, path, "HEAD"));
      // A deleted stream its forks still read (410) holds its path as a stream there does.
      if (found.status !== 404 && found.status !== 410) await check(found);
      if (found.status !== 404 || !(await stream.claimImport(path, token)))
        throw new SessionError("already_exists", "a stream is at this path", { path });
      try {
        await write("PUT", create);
      } catch (error) {
        // A stream that could not be made leaves nothing, and its path free for the next writer.
        await write("DELETE").catch(() => undefined);
        await stream.endImport(token).catch(() => undefined);
        throw error;
      }
      return {
        async append(append: StreamAppend): Promise<void> {
          const body =
            "json" in append
              ? jsonAppendBody(append.json)
              : Uint8Array.from(atob(append.base64), (char) => char.charCodeAt(0));
          await write("POST", { "Content-Type": contentType }, body);
        },
        async finish(): Promise<void> {
          if (header.closed) await write("POST", { [HEADER.closed]: "true" });
          await stream.endImport(token);
        },
        async abandon(): Promise<void> {
          await write("DELETE");
          await stream.endImport(token);
        },
      };
    },
  };
}
