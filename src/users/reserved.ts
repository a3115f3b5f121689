import type { RouterRoute } from "hono/types";

/** How a caller names itself as `{user}` (docs/api.md, Conventions): never a username. */
export const SELF = "me";

let reserved: ReadonlySet<string> = new Set([SELF]);

/**
 * The usernames a `{user}` route could never reach (docs/api.md, Conventions): `me`, and every literal segment that
 * sits where `{user}` does in some route path (`/api/v2/users/login` beside `/api/v2/users/:user`). The router hands
 * a literal path to its literal route whatever the method (src/http/router.ts), so a user named `login` could not be
 * read or deleted by name; such names are refused instead. Lower case: usernames are matched case-insensitively.
 */
export function reservedUsernamesOf(routes: readonly Pick<RouterRoute, "method" | "path">[]): ReadonlySet<string> {
  const prefixes = new Set<string>();
  for (const { path } of routes) {
    const at = path.indexOf("/:user");
    if (at >= 0) prefixes.add(path.slice(0, at + 1));
  }
  const names = new Set([SELF]);
  for (const { method, path } of routes) {
    if (method === "ALL") continue;
    for (const prefix of prefixes) {
      const segment = path.startsWith(prefix) ? path.slice(prefix.length).split("/")[0] : undefined;
      if (segment && !segment.startsWith(":") && !segment.includes("*")) names.add(segment.toLowerCase());
    }
  }
  return names;
}

/** Called once the route table is complete (src/app.ts): from then on the reserved names are the table's. */
export function reserveUsernames(routes: readonly Pick<RouterRoute, "method" | "path">[]): void {
  reserved = reservedUsernamesOf(routes);
}

export function isReservedUsername(name: string): boolean {
  return reserved.has(name.toLowerCase());
}

/** The reserved usernames, sorted: what docs/api.md lists. */
export function reservedUsernames(): string[] {
  return [...reserved].sort();
}
