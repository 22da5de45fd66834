import { exports } from "cloudflare:workers";
import { createClient } from "../../src/client";
import { storageConformance } from "../conformance/storage";
import { KEY_A } from "./helpers";

storageConformance("RemoteRepo (the HTTP client against the worker)", async () =>
  createClient({
    baseUrl: "http://sessions.test",
    token: KEY_A,
    fetch: (request) => exports.default.fetch(request),
  }),
);
