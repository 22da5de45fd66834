// `npm start`: the service under `wrangler dev` on http://127.0.0.1:8787, data kept in
// .wrangler/state, requests without a key served as the dev tenant `local`.
// The port comes from `--port` (`npm start -- --port 8795`), else the PORT variable, else 8787.
// Every other option goes to wrangler dev as it is (a `--persist-to` of your own replaces ours).
import { spawn } from "node:child_process";
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
const persistTo = take("persist-to", ".wrangler/state");
const vars = ["--var", "DEV_TENANT:local"];

const wrangler = fileURLToPath(new URL("../node_modules/.bin/wrangler", import.meta.url));
const child = spawn(
  wrangler,
  ["dev", "--ip", ip, "--port", port, "--persist-to", persistTo, ...vars, ...args],
  { stdio: "inherit" },
);
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
