import { createRoute } from "@hono/zod-openapi";
import * as z from "zod";
import type { ErrorBody } from "../../core/errors";
import { SessionError } from "../../core/errors";
import { EVENTS_AFTER_HEADER } from "../../core/events";
import { SOCKET_TICKET_HEADER } from "../../durable/internal";
import {
  body,
  bodyErrors,
  errors,
  forObject,
  json,
  repo,
  routes,
  sessionObject,
  sessionStub,
} from "../route-kit";
import { EmptyBody, SessionIdParam } from "../schemas";
import { sealTicket, ticketKey } from "../socket-ticket";

const EventsQuery = z.object({
  after: z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .meta({ description: "a seq: replay the entries after it first (a Last-Event-ID header wins)" }),
  payload: z.enum(["true", "false"]).optional().meta({
    description: "false: entries without their payload ({id, parentId, type, seq, timestamp, role?})",
  }),
});

const LastEventId = z.object({
  "last-event-id": z
    .string()
    .optional()
    .meta({ description: "the id of the last event seen: resume after it (over `after`)" }),
});

const EventsAfter = z.object({
  [EVENTS_AFTER_HEADER]: z.string().meta({
    description: "the seq the stream starts after (`after`, or the last seq when it starts now)",
  }),
});

const Ticket = z.object({
  ticket: z.string(),
  expiresAt: z.string(),
  url: z.string().meta({ description: "the WebSocket path with the ticket, to open within a minute" }),
});

/**
 * Where to resume: the `Last-Event-ID` a reconnecting EventSource sends, else `?after=`. An
 * EventSource reconnects to the URL it was opened with, so its `?after=` is where it first started
 * and the header is how far it has read since.
 */
function resumePoint(after: number | undefined, lastEventId: string | undefined): number | undefined {
  if (lastEventId === undefined || lastEventId === "") return after;
  if (!/^\d{1,15}$/.test(lastEventId)) {
    throw new SessionError("invalid_request", "Last-Event-ID must be an event id (a seq)", { lastEventId });
  }
  return Number(lastEventId);
}

const EVENT_STREAM_HEADERS = {
  "Content-Type": "text/event-stream; charset=utf-8",
  "Cache-Control": "no-cache, no-transform",
  "X-Accel-Buffering": "no",
};

/** A session's events, as Server-Sent Events or over a WebSocket; the tenant's, of its listing. */
export const eventRoutes = routes()
  .openapi(
    createRoute({
      method: "get",
      path: "/v1/events",
      operationId: "watchTenantEvents",
      summary: "Sessions created, updated and deleted, as they happen (Server-Sent Events)",
      description:
        "created and updated carry the listing row (the session's info as it last reported, within DIRECTORY_SYNC_MS of a write), deleted its id. Live from now: follow first, then read the listing (and again after a reconnect).",
      responses: {
        200: { content: { "text/event-stream": { schema: z.string() } }, description: "the event stream" },
        ...errors,
      },
    }),
    async (c) => new Response(await repo(c).events(), { headers: EVENT_STREAM_HEADERS }),
  )
  .openapi(
    createRoute({
      method: "get",
      path: "/v1/sessions/{sid}/events",
      operationId: "watchEvents",
      summary: "Events of the session as they happen (Server-Sent Events)",
      description:
        "entry (id: its seq), leaf, session, generation, compaction, deleted, closed. With `after` or Last-Event-ID, what came after that seq is replayed first; otherwise only what happens from now. The Events-After header gives the seq the stream starts after: resume from it if the connection drops before an event with an id.",
      request: { params: SessionIdParam, query: EventsQuery, headers: LastEventId },
      responses: {
        200: {
          content: { "text/event-stream": { schema: z.string() } },
          headers: EventsAfter,
          description: "the event stream",
        },
        ...errors,
      },
    }),
    async (c) => {
      const { after, payload } = c.req.valid("query");
      const object = sessionObject(c, c.req.valid("param").sid);
      const from = resumePoint(after, c.req.valid("header")["last-event-id"]);
      const { body, after: start } = await object.events(from, payload !== "false");
      return new Response(body, {
        headers: { ...EVENT_STREAM_HEADERS, [EVENTS_AFTER_HEADER]: String(start) },
      });
    },
  )
  .openapi(
    createRoute({
      method: "post",
      path: "/v1/sessions/{sid}/tickets",
      operationId: "createSocketTicket",
      summary: "A one-time ticket to open the session WebSocket (for browsers)",
      description: "Good for one connection within a minute; read-only keys may ask for one.",
      request: { params: SessionIdParam, body: body(EmptyBody, false) },
      responses: { 201: json(Ticket, "the ticket"), ...errors, ...bodyErrors },
    }),
    async (c) => {
      const sid = c.req.valid("param").sid;
      // A service that cannot seal tickets refuses before the object keeps one.
      const key = ticketKey(c.env);
      const minted = await sessionObject(c, sid).mintTicket();
      const claims = { tenant: c.get("caller").tenant, sid, id: minted.ticket };
      const { ticket, expiresAt } = await sealTicket(key, claims, minted.expiresAt);
      return c.json({ ticket, expiresAt, url: `/v1/sessions/${sid}/ws?ticket=${ticket}` }, 201);
    },
  )
  .openapi(
    createRoute({
      method: "get",
      path: "/v1/sessions/{sid}/ws",
      operationId: "openEventSocket",
      summary: "Events of the session over a WebSocket (hibernating)",
      description:
        'The same events as JSON messages. `?after=<seq>` replays what came after it; send `{"after": <seq>}` to resume. Authenticate with a bearer key or `?ticket=` from POST …/tickets.',
      request: {
        params: SessionIdParam,
        query: EventsQuery.extend({
          ticket: z.string().optional().meta({ description: "from POST …/tickets" }),
        }),
      },
      responses: { 101: { description: "switching to the WebSocket" }, ...errors },
    }),
    async (c) => {
      if (c.req.header("Upgrade")?.toLowerCase() !== "websocket") {
        throw new SessionError("invalid_request", "open this with a WebSocket (Upgrade: websocket)");
      }
      // The object answers the upgrade, using up the ticket it was opened with.
      const ticket = c.get("socketTicket");
      const told: Record<string, string> = ticket === undefined ? {} : { [SOCKET_TICKET_HEADER]: ticket };
      const answer = await sessionStub(c, c.req.valid("param").sid).fetch(forObject(c, told));
      // A refusal becomes HTTP here, as every other error (with its request id and Retry-After).
      if (!answer.webSocket) throw SessionError.from(((await answer.json()) as { error: ErrorBody }).error);
      // The object's answer has headers fixed; later middleware (CORS) adds to a copy.
      return new Response(answer.body, {
        status: answer.status,
        headers: new Headers(answer.headers),
        webSocket: answer.webSocket,
      });
    },
  );
