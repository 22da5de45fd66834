import { execFile } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { transform } from "esbuild";

/*
 * A project of someone who installed the package: a temp folder where `npm install` put the
 * tarball `npm pack` made, type-checked with the project's TypeScript under the consumer's own
 * settings. The package's dependencies are linked from this repository's node_modules before the
 * install, so npm finds them satisfied and needs no network.
 */

const root = resolve(import.meta.dirname, "../..");
const modules = join(root, "node_modules");

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

export function run(
  command: string,
  args: readonly string[],
  options: { cwd: string; env?: Record<string, string> },
): Promise<Run> {
  return new Promise((done) => {
    execFile(
      command,
      args,
      { cwd: options.cwd, env: { ...process.env, ...options.env }, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) =>
        done({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr }),
    );
  });
}

async function succeed(command: string, args: readonly string[], cwd: string): Promise<string> {
  const result = await run(command, args, { cwd });
  if (result.code !== 0)
    throw new Error(
      `${command} ${args.join(" ")} failed (${result.code}):\n${result.stdout}${result.stderr}`,
    );
  return result.stdout;
}

export interface PackedPackage {
  tarball: string;
  remove(): void;
}

/** What `npm pack` needs of the repository: the package's files and what builds them. */
const PACKAGE_SOURCES = [
  "package.json",
  "README.md",
  "wrangler.toml",
  "tsconfig.json",
  "tsconfig.build.json",
  "src",
  "scripts",
];

/**
 * The tarball `npm pack` makes (its `prepare` builds dist/ first), packed from a copy of the
 * package's sources so that the build never touches this repository's dist/ while other tests use it.
 */
export async function packPackage(): Promise<PackedPackage> {
  const copy = mkdtempSync(join(tmpdir(), "cf-sessions-pack-"));
  for (const path of PACKAGE_SOURCES)
    cpSync(join(root, path), join(copy, path), {
      recursive: true,
      filter: (source) => !source.endsWith("browser-bundle.js"),
    });
  symlinkSync(modules, join(copy, "node_modules"));
  const out = await succeed("npm", ["pack", "--silent"], copy);
  return {
    tarball: join(copy, out.trim().split("\n").at(-1) as string),
    remove: () => rmSync(copy, { recursive: true, force: true }),
  };
}

function link(folder: string, name: string): void {
  const path = join(folder, "node_modules", name);
  mkdirSync(dirname(path), { recursive: true });
  symlinkSync(join(modules, name), path);
}

export interface ConsumerProject {
  dir: string;
  /** Writes a file of the project (folders made as needed). */
  write(path: string, text: string): void;
  /** Makes a package of this repository's node_modules (a model API's client) importable. */
  link(name: string): void;
  /** Writes `to` as `from` without its types (imports untouched), to run in Node. */
  stripTypes(from: string, to: string): Promise<void>;
  /** Type-checks with `tsc -p <tsconfig>`; the compiler's output, empty when clean. */
  typecheck(tsconfig: string): Promise<Run>;
  remove(): void;
}

/** A fresh project that installed `tarball`, with TypeScript's Node and Workers types at hand. */
export async function consumerProject(tarball: string): Promise<ConsumerProject> {
  const dir = mkdtempSync(join(tmpdir(), "cf-sessions-consumer-"));
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify({ name: "consumer", private: true, type: "module" }),
  );
  const packed = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
    dependencies: Record<string, string>;
  };
  for (const name of Object.keys(packed.dependencies)) link(dir, name);
  await succeed("npm", ["install", "--offline", "--no-audit", "--no-fund", "--ignore-scripts", tarball], dir);
  // What a consumer brings itself: the types of its runtime.
  link(dir, "@types/node");
  link(dir, "@cloudflare/workers-types");
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  };
  return {
    dir,
    write,
    link(name) {
      if (!existsSync(join(dir, "node_modules", name))) link(dir, name);
    },
    async stripTypes(from, to) {
      const { code } = await transform(readFileSync(join(dir, from), "utf8"), {
        loader: "ts",
        format: "esm",
      });
      write(to, code);
    },
    typecheck(tsconfig) {
      return run(process.execPath, [join(modules, "typescript/bin/tsc"), "-p", tsconfig], { cwd: dir });
    },
    remove() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** TypeScript settings a consumer may have: a bundler's, Node's ESM resolution, and the strictest. */
export const CONSUMER_SETTINGS = {
  bundler: { module: "ESNext", moduleResolution: "Bundler", strict: true },
  nodenext: { module: "NodeNext", moduleResolution: "NodeNext", strict: true },
  strict: {
    module: "NodeNext",
    moduleResolution: "NodeNext",
    strict: true,
    exactOptionalPropertyTypes: true,
    noUncheckedIndexedAccess: true,
    noImplicitOverride: true,
    noImplicitReturns: true,
    verbatimModuleSyntax: true,
  },
} as const;

/** A tsconfig.json text: the settings given, over `files`, with the runtime types named. */
export function tsconfig(
  settings: Record<string, unknown>,
  files: readonly string[],
  types: readonly string[],
  extra: Record<string, unknown> = {},
): string {
  return JSON.stringify(
    {
      compilerOptions: { target: "ES2022", lib: ["ES2023"], noEmit: true, types, ...settings, ...extra },
      files,
    },
    null,
    2,
  );
}
