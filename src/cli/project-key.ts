import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { basename, join, resolve } from "node:path";

/*
 * A project as two machines both name it: the git remote (host and path, without scheme, user,
 * port or `.git`) and the folder inside the repository, `github.com/acme/app/services/api`; a
 * folder outside any repository with a remote is named by its own name. A session imported or
 * mirrored from a coding agent records its project so (`metadata.project`), so that `list
 * --project` finds a project's sessions from any machine and `pull` puts them in the local
 * checkout of the same repository.
 */

/** What git answers in `dir`, or undefined when it answers nothing (no git, no repository, no remote). */
function git(dir: string, args: string[]): string | undefined {
  try {
    const out = execFileSync("git", ["-C", dir, ...args], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
    return out.trim() || undefined;
  } catch {
    return undefined;
  }
}

/** A git remote's URL as host and path: `git@github.com:acme/app.git` → `github.com/acme/app`. */
export function remoteKey(url: string): string {
  let rest = url.trim();
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(rest);
  if (scheme) {
    rest = rest.slice(scheme[0].length);
    rest = rest.replace(/^[^@/]*@/, "");
    const slash = rest.indexOf("/");
    const host = (slash < 0 ? rest : rest.slice(0, slash)).replace(/:\d+$/, "");
    rest = slash < 0 ? host : `${host}${rest.slice(slash)}`;
  } else {
    // scp-like: [user@]host:path
    rest = rest.replace(/^[^@/]*@/, "").replace(/^([^/:]+):/, "$1/");
  }
  return rest
    .replace(/\/+$/, "")
    .replace(/\.git$/, "")
    .toLowerCase();
}

/** The remote of the repository holding `dir`, and the repository's root; undefined outside one with a remote. */
function repositoryOf(dir: string): { remote: string; root: string; inside: string } | undefined {
  if (!existsSync(dir)) return undefined;
  const url = git(dir, ["config", "--get", "remote.origin.url"]);
  const root = git(dir, ["rev-parse", "--show-toplevel"]);
  if (url === undefined || root === undefined) return undefined;
  const inside = (git(dir, ["rev-parse", "--show-prefix"]) ?? "").replace(/\/+$/, "");
  return { remote: remoteKey(url), root, inside };
}

/** The project key of a working folder. */
export function projectKeyOf(dir: string): string {
  const repository = repositoryOf(resolve(dir));
  if (!repository) return basename(resolve(dir));
  return repository.inside ? `${repository.remote}/${repository.inside}` : repository.remote;
}

/**
 * Where a project lives on this machine when `dir` is in a checkout of its repository: the folder
 * of the project inside that checkout; undefined when `dir` is in no checkout of it.
 */
export function localFolderOf(project: string, dir: string): string | undefined {
  const repository = repositoryOf(resolve(dir));
  if (!repository) return undefined;
  if (project === repository.remote) return repository.root;
  if (project.startsWith(`${repository.remote}/`))
    return join(repository.root, project.slice(repository.remote.length + 1));
  return undefined;
}

/** The storage calls recording a project need. */
interface HeaderStorage {
  getHeader(): Promise<{ metadata: Record<string, unknown> }>;
  updateHeader(patch: { metadata: Record<string, unknown> }): Promise<unknown>;
}

/**
 * Records in a session's metadata the project of the working folder its file names (the agents'
 * files say where they ran: `metadata.pi.cwd` once imported); nothing when it names none.
 */
export async function recordProject(
  storage: HeaderStorage,
  imported: Record<string, unknown>,
): Promise<void> {
  const pi = imported.pi as Record<string, unknown> | undefined;
  const cwd = typeof pi?.cwd === "string" && pi.cwd !== "" ? pi.cwd : undefined;
  if (cwd === undefined) return;
  const project = projectKeyOf(cwd);
  const { metadata } = await storage.getHeader();
  if (metadata.project !== project) await storage.updateHeader({ metadata: { ...metadata, project } });
}
