import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { Result } from "../../src/core/errors";
import { SessionError, unwrap } from "../../src/core/errors";
import type { LocationHint } from "../../src/core/location";
import type { SessionPage } from "../../src/core/session-schemas";
import { signBlobUrl } from "../../src/durable/blobs/blob-urls";
import { checkPlacement } from "../../src/durable/index";
import type { DurableEnv } from "../../src/durable/internal";
import { sessionObjectName, tenantKey } from "../../src/durable/internal";
import { directoryShards } from "../../src/durable/names";
import { placedEnv } from "../../src/durable/placement/placed-env";
import { sha256Hex } from "../../src/http/auth";
import type { WorkerEnv } from "../../src/http/env";
import { nearestLocation } from "../../src/http/placement";
import worker from "../../src/worker";
import { expectError, sid, userMessage } from "./helpers";

/*
 * Where a tenant's objects live: pins to a jurisdiction (TENANT_JURISDICTIONS), the registry that
 * refuses a pin moved away from a tenant's sessions, and location hints given only when an object
 * is created. Local workerd has no jurisdictions (`jurisdiction()` throws there): these tests show
 * that a pinned tenant is then never served from the default namespace instead, that a moved pin
 * is caught, and, with namespaces that answer `jurisdiction()` as the platform does, that every
 * object and blob the Worker reaches for a pinned tenant is looked up in its jurisdiction. What the
 * objects reach from inside (by their own id's jurisdiction) is the platform's to run.
 */

const ctx = () => ({ waitUntil() {}, passThroughOnException() {}, props: {} }) as unknown as ExecutionContext;

interface Tenant {
  name: string;
  key: string;
  keys: string;
}

/** A tenant of its own for one test, and the API_KEYS that name it. */
async function newTenant(): Promise<Tenant> {
  const name = `placement-${sid()}`;
  const key = `key-${name}`;
  return { name, key, keys: JSON.stringify({ [await sha256Hex(key)]: name }) };
}

/** A request to the worker as `tenant`, with settings (or bindings) changed. */
async function call(
  tenant: Tenant,
  settings: Record<string, unknown>,
  method: string,
  path: string,
  options: { body?: unknown; raw?: BodyInit; contentType?: string; cf?: Record<string, unknown> } = {},
) {
  const headers: Record<string, string> = { Authorization: `Bearer ${tenant.key}` };
  let body = options.raw;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers["Content-Type"] = "application/json";
  }
  if (options.contentType) headers["Content-Type"] = options.contentType;
  const request = new Request(`http://sessions.test${path}`, {
    method,
    headers,
    body,
    ...(options.cf ? { cf: options.cf } : {}),
  });
  const res = await worker.fetch(request, { ...env, API_KEYS: tenant.keys, ...settings } as WorkerEnv, ctx());
  const text = new TextDecoder().decode(await res.arrayBuffer());
  let parsed: any = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {}
  return { status: res.status, headers: res.headers, body: parsed, text };
}

/** The tenant's session `id` as reached through the default namespace, around any pin. */
const plainSession = (tenant: Tenant, id: string) =>
  env.SESSIONS.getByName(sessionObjectName(tenant.name, id));

/** Every session the tenant's directory lists in the default namespace. */
async function plainListing(tenant: Tenant): Promise<string[]> {
  const pages = await Promise.all(
    directoryShards(env as unknown as DurableEnv, tenant.name).map(async (shard) =>
      unwrap((await shard.list({ limit: 200 })) as Result<SessionPage>),
    ),
  );
  return pages.flatMap((page) => page.sessions.map((session) => session.id));
}

/** The registry's record of where a tenant is placed. */
const registryOf = async (tenant: Tenant) =>
  (env.PLACEMENTS as NonNullable<DurableEnv["PLACEMENTS"]>).getByName(await tenantKey(tenant.name));

const pinned = (tenant: Tenant, jurisdiction: string) => ({
  TENANT_JURISDICTIONS: JSON.stringify({ [tenant.name]: jurisdiction }),
});

describe("jurisdictions", () => {
  it("never serves a pinned tenant from the default namespace where the runtime has no jurisdictions", async () => {
    const tenant = await newTenant();
    const id = sid();
    const created = await call(tenant, pinned(tenant, "eu"), "POST", "/v1/sessions", { body: { id } });
    expectError(created, 503, "misconfigured");
    expect(created.body.error.details).toEqual({ jurisdiction: "eu" });
    for (const [method, path] of [
      ["GET", "/v1/sessions"],
      ["GET", `/v1/sessions/${id}`],
      ["GET", "/v1/usage"],
    ] as const) {
      expectError(await call(tenant, pinned(tenant, "eu"), method, path), 503, "misconfigured");
    }
    // Nothing of it was written where it does not belong.
    expect(await plainSession(tenant, id).getInfo()).toMatchObject({
      ok: false,
      error: { code: "not_found" },
    });
    expect(await plainListing(tenant)).toEqual([]);
  });

  it("refuses a tenant whose pin moved away from its sessions, and changes nothing", async () => {
    const tenant = await newTenant();
    const id = sid();
    expect((await call(tenant, {}, "POST", "/v1/sessions", { body: { id } })).status).toBe(201);
    expect(
      (await call(tenant, {}, "POST", `/v1/sessions/${id}/entries`, { body: userMessage("hello") })).status,
    ).toBe(201);

    for (const jurisdiction of ["eu", "fedramp"]) {
      const settings = { ...pinned(tenant, jurisdiction), ...withJurisdictions([]) };
      const moved = await call(tenant, settings, "POST", "/v1/sessions", { body: { id: sid() } });
      expectError(moved, 409, "wrong_jurisdiction");
      expect(moved.body.error.details).toEqual({ stored: null, pinned: jurisdiction, sessions: 1 });
      expect(moved.body.error.message).toContain("export and an import");
      expectError(
        await call(tenant, settings, "GET", `/v1/sessions/${id}/context`),
        409,
        "wrong_jurisdiction",
      );
    }
    // Still whole where it was, and served there with the pin taken back.
    const info = await call(tenant, {}, "GET", `/v1/sessions/${id}`);
    expect(info.status).toBe(200);
    expect(info.body.entryCount).toBe(1);
    expect(await plainListing(tenant)).toEqual([id]);
    expect(await (await registryOf(tenant)).place("eu")).toBe("");
  });

  it("records a tenant first seen pinned where its sessions already are, and refuses the pin", async () => {
    const tenant = await newTenant();
    const id = sid();
    // Served before the PLACEMENTS binding was added: nothing was recorded.
    const unregistered = { PLACEMENTS: undefined };
    expect((await call(tenant, unregistered, "POST", "/v1/sessions", { body: { id } })).status).toBe(201);
    const registry = await registryOf(tenant);
    expect(await registry.placed()).toBeUndefined();

    // The binding and a pin in one deploy: the tenant is where its sessions are, not where its pin says.
    const settings = { ...pinned(tenant, "eu"), ...withJurisdictions([]) };
    const fresh = sid();
    const moved = await call(tenant, settings, "POST", "/v1/sessions", { body: { id: fresh } });
    expectError(moved, 409, "wrong_jurisdiction");
    expect(moved.body.error.details).toEqual({ stored: null, pinned: "eu", sessions: 1 });
    expect(await registry.placed()).toBe("");
    expectError(await call(tenant, settings, "GET", "/v1/sessions"), 409, "wrong_jurisdiction");
    expect(await plainListing(tenant)).toEqual([id]);
    expectError(await call(tenant, {}, "GET", `/v1/sessions/${fresh}`), 404, "not_found");

    // A tenant with no session anywhere is recorded where its pin says.
    const newcomer = await newTenant();
    expect(
      (await call(newcomer, { ...pinned(newcomer, "eu"), ...withJurisdictions([]) }, "GET", "/v1/sessions"))
        .status,
    ).toBe(200);
    expect(await (await registryOf(newcomer)).placed()).toBe("eu");
  });

  it("moves the pin of a tenant that holds nothing where it was", async () => {
    const tenant = await newTenant();
    expect((await call(tenant, {}, "GET", "/v1/sessions")).status).toBe(200);
    const registry = await registryOf(tenant);
    expect(await registry.placed()).toBe("");
    // Pinned where this runtime cannot reach: refused, and the record stays.
    expectError(await call(tenant, pinned(tenant, "eu"), "GET", "/v1/sessions"), 503, "misconfigured");
    expect(await registry.placed()).toBe("");
    // Where it can: nothing left in the default location, so the record follows the pin.
    const settings = { ...pinned(tenant, "eu"), ...withJurisdictions([]) };
    expect((await call(tenant, settings, "GET", "/v1/sessions")).status).toBe(200);
    expect(await registry.placed()).toBe("eu");
  });

  it("records nothing for a pin this runtime cannot reach, so taking the pin back serves the tenant", async () => {
    const tenant = await newTenant();
    const id = sid();
    const refused = await call(tenant, pinned(tenant, "fedramp"), "POST", "/v1/sessions", { body: { id } });
    expectError(refused, 503, "misconfigured");
    expect(refused.body.error.details).toEqual({ jurisdiction: "fedramp" });
    const registry = await registryOf(tenant);
    expect(await registry.placed()).toBeUndefined();
    expect(await plainListing(tenant)).toEqual([]);
    // Unpinned again, it is served from the default location, and recorded there.
    expect((await call(tenant, {}, "POST", "/v1/sessions", { body: { id } })).status).toBe(201);
    expect(await registry.placed()).toBe("");
  });

  it("asks the registry again once an isolate's check of a tenant is a minute old", async () => {
    const tenant = await newTenant();
    const id = sid();
    const settings = withJurisdictions([]);
    expect((await call(tenant, settings, "POST", "/v1/sessions", { body: { id } })).status).toBe(201);
    // The record moved meanwhile (as an isolate of another deployment would move it): this isolate
    // goes on with its check for a while, then asks again and finds the tenant's sessions left behind.
    expect(await (await registryOf(tenant)).move("", "eu")).toBe(true);
    expect((await call(tenant, settings, "GET", `/v1/sessions/${id}`)).status).toBe(200);
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(Date.now() + 61_000);
      const stale = await call(tenant, settings, "GET", `/v1/sessions/${id}`);
      expectError(stale, 409, "wrong_jurisdiction");
      expect(stale.body.error.details).toEqual({ stored: "eu", pinned: null, sessions: 1 });
    } finally {
      vi.useRealTimers();
    }
  });

  it("refuses a moved pin to a Worker of one's own that checks before it uses DurableRepo", async () => {
    const tenant = await newTenant();
    const id = sid();
    expect((await call(tenant, {}, "POST", "/v1/sessions", { body: { id } })).status).toBe(201);
    const own = { ...env, ...pinned(tenant, "eu"), ...withJurisdictions([]) } as unknown as DurableEnv;
    const refused = await checkPlacement(own, tenant.name).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(SessionError);
    expect(refused).toMatchObject({ code: "wrong_jurisdiction", details: { stored: null, pinned: "eu" } });
    expect(await (await registryOf(tenant)).placed()).toBe("");
  });

  it("refuses to serve with an invalid TENANT_JURISDICTIONS, or pins without the PLACEMENTS registry", async () => {
    const tenant = await newTenant();
    for (const setting of ["{", '{"a": "mars"}', '["eu"]', '{"": "eu"}']) {
      const res = await call(tenant, { TENANT_JURISDICTIONS: setting }, "GET", "/v1/sessions");
      expectError(res, 503, "misconfigured");
      expect(res.body.error.message).toContain("TENANT_JURISDICTIONS");
    }
    const unregistered = await call(
      tenant,
      { ...pinned(tenant, "eu"), PLACEMENTS: undefined },
      "GET",
      "/v1/sessions",
    );
    expectError(unregistered, 503, "misconfigured");
    expect(unregistered.body.error.message).toContain("PLACEMENTS");
    // Without pins, the registry is not needed.
    expect((await call(tenant, { PLACEMENTS: undefined }, "GET", "/v1/sessions")).status).toBe(200);
  });
});

/**
 * An object a request reached: the namespace it was looked up in (the default, "", or a
 * jurisdiction's), its name, and the options it was reached with (a location hint).
 */
type Reach = { place: string; name: string; options?: unknown };

/**
 * `real` as a runtime that has jurisdictions would give it: `jurisdiction(j)` answers a namespace of
 * the same objects (local workerd has none to give), and every object reached is noted with the
 * place it was looked up in.
 */
function jurisdictional<T extends Rpc.DurableObjectBranded | undefined>(
  real: DurableObjectNamespace<T>,
  reached: Reach[],
  place = "",
): DurableObjectNamespace<T> {
  return new Proxy(real, {
    get(target, property) {
      if (property === "jurisdiction") return (j: string) => jurisdictional(target, reached, j);
      if (property === "getByName" || property === "idFromName") {
        return (name: string, options?: unknown) => {
          reached.push({ place, name, ...(options === undefined ? {} : { options }) });
          return (target[property] as (name: string, options?: unknown) => unknown)(name, options);
        };
      }
      const value = Reflect.get(target, property);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** The object namespaces of a runtime with jurisdictions (see `jurisdictional`), noting what is reached. */
function withJurisdictions(reached: Reach[]) {
  return {
    SESSIONS: jurisdictional(env.SESSIONS, reached),
    DIRECTORY: jurisdictional(env.DIRECTORY, reached),
    STREAMS: jurisdictional(env.STREAMS as unknown as DurableObjectNamespace, reached),
  };
}

/** `bucket`, noting the key of every object read or written through it. */
function notingBucket(bucket: R2Bucket, touched: string[]): R2Bucket {
  return new Proxy(bucket, {
    get(target, property) {
      const value = Reflect.get(target, property);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (typeof args[0] === "string") touched.push(`${String(property)} ${args[0]}`);
        return value.apply(target, args);
      };
    },
  });
}

describe("a pinned tenant in a runtime with jurisdictions", () => {
  it("takes every namespace and the bucket of its jurisdiction from one place", () => {
    const noted: Reach[] = [];
    const namespace = jurisdictional(env.SESSIONS, noted);
    const [plain, eu, fedramp] = ["plain", "eu", "fedramp"].map((name) => ({ name }) as unknown as R2Bucket);
    const base = {
      ...env,
      SESSIONS: namespace,
      DIRECTORY: namespace,
      STREAMS: namespace,
      BLOBS: plain,
      BLOBS_EU: eu,
      BLOBS_FEDRAMP: fedramp,
    } as unknown as DurableEnv;
    expect(placedEnv(base, undefined)).toBe(base);
    for (const [jurisdiction, bucket] of [
      ["eu", eu],
      ["fedramp", fedramp],
    ] as const) {
      const placed = placedEnv(base, jurisdiction);
      expect(placed.BLOBS).toBe(bucket);
      for (const kind of ["SESSIONS", "DIRECTORY", "STREAMS"] as const) {
        (placed[kind] as unknown as DurableObjectNamespace).getByName(`${kind} object`);
      }
      expect(noted.splice(0)).toEqual(
        ["SESSIONS", "DIRECTORY", "STREAMS"].map((kind) => ({ place: jurisdiction, name: `${kind} object` })),
      );
    }
  });

  it("reaches its sessions, directory shards, streams and blobs only through its jurisdiction", async () => {
    const tenant = await newTenant();
    const reached: Reach[] = [];
    const plainBlobs: string[] = [];
    const euBlobs: string[] = [];
    const settings = {
      ...pinned(tenant, "eu"),
      SESSIONS: jurisdictional(env.SESSIONS, reached),
      DIRECTORY: jurisdictional(env.DIRECTORY, reached),
      STREAMS: jurisdictional(env.STREAMS as unknown as DurableObjectNamespace, reached),
      BLOBS: notingBucket(env.BLOBS as R2Bucket, plainBlobs),
      BLOBS_EU: notingBucket(env.BLOBS as R2Bucket, euBlobs),
    };
    // Already recorded in eu (seen for the first time, a pinned tenant is looked for in the default location).
    expect(await (await registryOf(tenant)).place("eu")).toBe("eu");
    const id = sid();
    expect((await call(tenant, settings, "POST", "/v1/sessions", { body: { id } })).status).toBe(201);
    const appended = await call(tenant, settings, "POST", `/v1/sessions/${id}/entries`, {
      body: userMessage("hello from Paris"),
    });
    expect(appended.status).toBe(201);
    const fork = sid();
    const forked = await call(tenant, settings, "POST", `/v1/sessions/${id}/fork`, {
      body: { entryId: appended.body.entries[0].id, id: fork },
    });
    expect(forked.status, forked.text).toBe(201);
    expect((await call(tenant, settings, "GET", `/v1/sessions/${fork}/context`)).status).toBe(200);
    expect((await call(tenant, settings, "GET", "/v1/sessions")).status).toBe(200);
    expect((await call(tenant, settings, "GET", "/v1/usage")).status).toBe(200);
    const stream = `/v1/stream/notes-${sid()}`;
    expect(
      (await call(tenant, settings, "PUT", stream, { raw: "a", contentType: "text/plain" })).status,
    ).toBe(201);
    expect((await call(tenant, settings, "GET", `${stream}?offset=-1`)).text).toBe("a");
    // A screenshot stored as a blob (by the session's object), read through a URL signed for the
    // tenant's jurisdiction: from that jurisdiction's bucket.
    const image = new Uint8Array(96 * 1024).map((_, i) => (i * 7919) % 251);
    const shot = await call(tenant, settings, "POST", `/v1/sessions/${id}/entries`, {
      body: {
        type: "message",
        message: {
          role: "user",
          content: [
            {
              type: "image",
              data: (image as Uint8Array & { toBase64(): string }).toBase64(),
              mimeType: "image/png",
            },
          ],
          timestamp: 1,
        },
      },
    });
    expect(shot.status, shot.text).toBe(201);
    const address = {
      jurisdiction: "eu",
      tenantKey: await tenantKey(tenant.name),
      kind: "b64" as const,
      sha256: [...new Uint8Array(await crypto.subtle.digest("SHA-256", image))]
        .map((b) => b.toString(16).padStart(2, "0"))
        .join(""),
    };
    const url = await signBlobUrl(
      env.BLOB_URL_SECRET as string,
      "http://sessions.test",
      address,
      Math.floor(Date.now() / 1000) + 60,
    );
    const read = await worker.fetch(new Request(url), { ...env, ...settings } as unknown as WorkerEnv, ctx());
    expect(read.status).toBe(200);
    expect(new Uint8Array(await read.arrayBuffer())).toEqual(image);
    expect(euBlobs).toContainEqual(expect.stringMatching(new RegExp(`^get .*${address.sha256}$`)));

    expect(reached.length).toBeGreaterThan(0);
    expect(reached.filter((reach) => reach.place !== "eu")).toEqual([]);
    for (const name of [sessionObjectName(tenant.name, id), sessionObjectName(tenant.name, fork)]) {
      expect(reached).toContainEqual({ place: "eu", name });
    }
    expect(plainBlobs).toEqual([]);
  });
});

describe("location hints", () => {
  it("are given when a session is created, forked or imported, and never for one that exists", async () => {
    const tenant = await newTenant();
    const reached: Reach[] = [];
    const settings = { SESSIONS: jurisdictional(env.SESSIONS, reached) };
    const hintsFor = (id: string) =>
      reached.filter((r) => r.name === sessionObjectName(tenant.name, id)).map((r) => r.options);

    const id = sid();
    const created = await call(tenant, settings, "POST", "/v1/sessions", { body: { id, location: "apac" } });
    expect(created.status).toBe(201);
    await call(tenant, settings, "POST", `/v1/sessions/${id}/entries`, { body: userMessage("hi") });
    await call(tenant, settings, "GET", `/v1/sessions/${id}/context`);
    const entry = (await call(tenant, settings, "GET", `/v1/sessions/${id}`)).body.leafId as string;
    expect(hintsFor(id)).toEqual([{ locationHint: "apac" }, undefined, undefined, undefined]);

    const fork = sid();
    const forked = await call(tenant, settings, "POST", `/v1/sessions/${id}/fork`, {
      body: { entryId: entry, id: fork, location: "oc" },
    });
    expect(forked.status).toBe(201);
    expect(hintsFor(fork)[0]).toEqual({ locationHint: "oc" });
    expect(
      hintsFor(fork)
        .slice(1)
        .every((options) => options === undefined),
    ).toBe(true);
    expect(
      hintsFor(id)
        .slice(4)
        .every((options) => options === undefined),
    ).toBe(true);

    const exported = await call(tenant, settings, "GET", `/v1/sessions/${id}/export`);
    const imported = sid();
    const res = await call(tenant, settings, "POST", `/v1/sessions/import?id=${imported}&location=afr`, {
      raw: exported.text,
      contentType: "application/x-ndjson",
    });
    expect(res.status).toBe(201);
    expect(hintsFor(imported)[0]).toEqual({ locationHint: "afr" });
    expect(
      hintsFor(imported)
        .slice(1)
        .every((options) => options === undefined),
    ).toBe(true);

    // An id that is taken: the create fails, and the session stays where it is, as it was.
    const again = await call(tenant, settings, "POST", "/v1/sessions", { body: { id, location: "sam" } });
    expectError(again, 409, "already_exists");
    expect((await call(tenant, settings, "GET", `/v1/sessions/${id}`)).body.entryCount).toBe(1);
  });

  it("follow the request's continent when none is asked for, and none when the runtime reports none", async () => {
    const tenant = await newTenant();
    const reached: Reach[] = [];
    const settings = { SESSIONS: jurisdictional(env.SESSIONS, reached) };
    const european = sid();
    await call(tenant, settings, "POST", "/v1/sessions", {
      body: { id: european },
      cf: { continent: "EU", longitude: "2.35", country: "FR" },
    });
    const unknown = sid();
    await call(tenant, settings, "POST", "/v1/sessions", { body: { id: unknown } });
    const optionsOf = (id: string) =>
      reached.find((r) => r.name === sessionObjectName(tenant.name, id))?.options;
    expect(optionsOf(european)).toEqual({ locationHint: "weur" });
    expect(optionsOf(unknown)).toBeUndefined();
  });

  it("maps each continent to the nearest location", () => {
    const cases: Array<[Record<string, string>, LocationHint | undefined]> = [
      [{ continent: "NA", longitude: "-122.4" }, "wnam"],
      [{ continent: "NA", longitude: "-74.0" }, "enam"],
      [{ continent: "NA" }, "enam"],
      [{ continent: "SA", longitude: "-46.6" }, "sam"],
      [{ continent: "EU", longitude: "13.4" }, "weur"],
      [{ continent: "EU", longitude: "21.0" }, "eeur"],
      [{ continent: "AF", longitude: "18.4" }, "afr"],
      [{ continent: "AS", country: "JP" }, "apac"],
      [{ continent: "AS", country: "AE" }, "me"],
      [{ continent: "OC" }, "oc"],
      [{ continent: "AN" }, undefined],
      [{}, undefined],
    ];
    for (const [cf, hint] of cases) {
      expect(nearestLocation(cf as unknown as IncomingRequestCfProperties), JSON.stringify(cf)).toBe(hint);
    }
    expect(nearestLocation(undefined)).toBeUndefined();
  });

  it("refuses an unknown location, and a location for a pinned tenant, creating nothing", async () => {
    const tenant = await newTenant();
    const id = sid();
    const bad = await call(tenant, {}, "POST", "/v1/sessions", { body: { id, location: "mars" } });
    expectError(bad, 400, "invalid_request");
    expect(bad.text).toContain("location");
    const source = sid();
    await call(tenant, {}, "POST", "/v1/sessions", { body: { id: source } });
    const entry = (
      await call(tenant, {}, "POST", `/v1/sessions/${source}/entries`, { body: userMessage("hi") })
    ).body.entries[0].id;
    const fork = sid();
    expectError(
      await call(tenant, {}, "POST", `/v1/sessions/${source}/fork`, {
        body: { entryId: entry, id: fork, location: "EU" },
      }),
      400,
      "invalid_request",
    );
    const imported = sid();
    expectError(
      await call(tenant, {}, "POST", `/v1/sessions/import?id=${imported}&location=nowhere`, {
        raw: (await call(tenant, {}, "GET", `/v1/sessions/${source}/export`)).text,
        contentType: "application/x-ndjson",
      }),
      400,
      "invalid_request",
    );
    for (const missing of [id, fork, imported]) {
      expectError(await call(tenant, {}, "GET", `/v1/sessions/${missing}`), 404, "not_found");
    }
    expect(
      (await call(tenant, {}, "GET", "/v1/sessions")).body.sessions.map((s: { id: string }) => s.id),
    ).toEqual([source]);

    // Pinned, the jurisdiction places its sessions: asking for a location is refused first.
    const pinnedTenant = await newTenant();
    const settings = { ...pinned(pinnedTenant, "eu"), ...withJurisdictions([]) };
    const refused = await call(pinnedTenant, settings, "POST", "/v1/sessions", {
      body: { id: sid(), location: "weur" },
    });
    expectError(refused, 400, "invalid_request");
    expect(refused.body.error.details).toEqual({ location: "weur", jurisdiction: "eu" });
  });
});
