// `npm start`: the service under `wrangler dev`, data kept in .wrangler/state. Requests without a key
// are served as the dev tenant `local`, but only while the server listens on a loopback address:
// wrangler dev passes a CF-Connecting-IP header sent by the client through unchanged, so on an
// address others can reach, the Worker could not tell a local request from a forged one (see
// src/http/dev-tenant.ts); so it also refuses to start beyond loopback when a DEV_TENANT is set
// by --var, in the local vars files, in a file given by --env-file, in the process's environment
// when wrangler is told to read it, or in the configuration's vars (any environment's). The port
// comes from `--port` (`npm start -- --port 8795`), else the PORT variable, else 8787. Options
// other than --ip and --port go to wrangler dev as they are.
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const args = process.argv.slice(2);

/** Removes `--name value` and `--name=value` from args; the last one given wins. */
function take(name, fallback) {
  let value = fallback;
  for (let i = 0; i < args.length; ) {
    if (args[i] === `--${name}` && i + 1 < args.length) {
      value = args[i + 1];
      args.splice(i, 2);
    } else if (args[i].startsWith(`--${name}=`)) {
      value = args[i].slice(name.length + 3);
      args.splice(i, 1);
    } else i++;
  }
  return value;
}

const ip = take("ip", "127.0.0.1");
const port = take("port", process.env.PORT || "8787");
if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) {
  console.error(`npm start: the port must be a number from 0 to 65535, not ${JSON.stringify(port)}`);
  process.exit(2);
}
const loopback = ip === "localhost" || ip === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(ip);

/** The wrangler configuration file wrangler dev will read. */
function configFile() {
  const configAt = args.findIndex((arg) => arg === "--config" || arg === "-c" || arg.startsWith("--config="));
  const config =
    configAt < 0
      ? "wrangler.toml"
      : args[configAt].startsWith("--config=")
        ? args[configAt].slice(9)
        : args[configAt + 1];
  return resolve(config ?? "wrangler.toml");
}

/**
 * Where the configuration's vars set DEV_TENANT: its top level or any environment's (read by
 * wrangler's own parser, TOML or JSON alike). A missing file sets nothing; wrangler will say so.
 */
async function devTenantInConfig() {
  const config = configFile();
  if (!existsSync(config)) return [];
  const { experimental_readRawConfig } = await import("wrangler");
  const { rawConfig } = experimental_readRawConfig({ config });
  const sets = (vars) => typeof vars === "object" && vars !== null && Object.hasOwn(vars, "DEV_TENANT");
  return [
    ...(sets(rawConfig.vars) ? [`${config} [vars]`] : []),
    ...Object.entries(rawConfig.env ?? {})
      .filter(([, env]) => sets(env.vars))
      .map(([name]) => `${config} [env.${name}.vars]`),
  ];
}

/** The files given by `--env-file` (it may be given more than once). */
function envFiles() {
  return args.flatMap((arg, i) =>
    arg === "--env-file" && i + 1 < args.length
      ? [resolve(args[i + 1])]
      : arg.startsWith("--env-file=")
        ? [resolve(arg.slice(11))]
        : [],
  );
}

/**
 * Files of local vars wrangler dev reads, beside its configuration or given by `--env-file`, that
 * set DEV_TENANT.
 */
function devTenantFiles() {
  const folder = dirname(configFile());
  const read = (file) => {
    try {
      return readFileSync(file, "utf8");
    } catch {
      return "";
    }
  };
  let names = [];
  try {
    names = readdirSync(folder);
  } catch {
    // No such folder: wrangler will say so.
  }
  const beside = names
    .filter(
      (name) =>
        name === ".dev.vars" || name.startsWith(".dev.vars.") || name === ".env" || name.startsWith(".env."),
    )
    .map((name) => join(folder, name));
  return [...beside, ...envFiles()].filter((file) => /^\s*(export\s+)?DEV_TENANT\s*=/m.test(read(file)));
}

/** Whether wrangler dev reads the process's environment as vars, and it sets DEV_TENANT. */
function devTenantInEnvironment() {
  const included = (process.env.CLOUDFLARE_INCLUDE_PROCESS_ENV ?? "").toLowerCase();
  return (included === "true" || included === "1") && process.env.DEV_TENANT !== undefined;
}

if (!loopback) {
  // `--var DEV_TENANT:x`, `--var A:1 DEV_TENANT:x` and `--var=DEV_TENANT:x` alike.
  const set = args.some((arg) => /^(--var=)?DEV_TENANT[:=]/.test(arg))
    ? ["--var"]
    : [
        ...devTenantFiles(),
        ...(devTenantInEnvironment() ? ["the environment (CLOUDFLARE_INCLUDE_PROCESS_ENV)"] : []),
        ...(await devTenantInConfig()),
      ];
  if (set.length > 0) {
    console.error(
      `npm start: refusing to serve a DEV_TENANT (set in ${set.join(", ")}) while listening on ${ip}, ` +
        "which is not a loopback address: anyone who can reach it could act as that tenant",
    );
    process.exit(2);
  }
}
if (!loopback) {
  console.warn(
    `npm start: listening on ${ip}, which is not a loopback address, so there is no dev tenant: ` +
      "every /v1 request needs a key (API_KEYS, e.g. in .dev.vars)",
  );
}
if (!args.some((arg) => arg === "--persist-to" || arg.startsWith("--persist-to="))) {
  args.push("--persist-to", ".wrangler/state");
}

const wrangler = fileURLToPath(new URL("../node_modules/.bin/wrangler", import.meta.url));
const devTenant = loopback ? ["--var", "DEV_TENANT:local"] : [];
const child = spawn(wrangler, ["dev", "--ip", ip, "--port", port, ...devTenant, ...args], {
  stdio: "inherit",
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
