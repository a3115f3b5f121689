import type { Params, Result, Router } from "hono/router";
import { TrieRouter } from "hono/router/trie-router";

/** Distinct method + path pairs remembered; past this the oldest is forgotten first (a Map iterates in insertion order). */
const MEMO_ENTRIES = 2_000;

/** The order `Allow` lists methods in: a fixed one, so the header is the same whatever order the routes were added in. */
const METHOD_ORDER = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/** How specific one segment of a route's path is: a literal beats a parameter, which beats a wildcard. */
function segmentRank(segment: string | undefined): number {
  if (segment === undefined) return 0;
  if (segment.includes("*")) return 1;
  if (segment.startsWith(":")) return 2;
  return 3;
}

/** Negative when route path `a` is less specific than `b`: compared segment by segment, the first difference decides. */
function compareSpecificity(a: string, b: string): number {
  const sa = a.split("/");
  const sb = b.split("/");
  for (let i = 0; i < Math.max(sa.length, sb.length); i++) {
    const diff = segmentRank(sa[i]) - segmentRank(sb[i]);
    if (diff !== 0) return diff;
  }
  return 0;
}

function remember<V>(memo: Map<string, V>, key: string, value: V): V {
  if (memo.size >= MEMO_ENTRIES) memo.delete(memo.keys().next().value ?? "");
  memo.set(key, value);
  return value;
}

/**
 * Hono's TrieRouter with two rules of Herald's, and its answers remembered per method and path (docs/benchmarks.md,
 * "Where the time goes").
 *
 * **The most specific route path owns a request path, whatever the method** (docs/api.md, Conventions). The trie
 * hands back every route whose path matches: `GET /users/login` matches `/users/:user` as well as `/users/login`.
 * Of the routes that serve some method (middleware, added for `ALL`, always runs), only those whose path is the most
 * specific match are kept, a literal segment beating a parameter at the first segment where they differ; so
 * `/users/login` is never handed to the `{user}` route, and `DELETE /users/me/keys/tokens` is not read as the key
 * `tokens`. A request path then has exactly the methods its owning route paths serve (`allowed`), which is what the
 * 405's `Allow` lists. Usernames that would collide with such a literal are refused at creation
 * (src/users/reserved.ts), so no user is hidden by this.
 *
 * Herald's routes need the TrieRouter: Hono's faster RegExpRouter refuses a static path beside a parameter at the same
 * depth (`/users/login` next to `/users/:user/convert-login`). Walking the trie for every request cost about a tenth
 * of a `/healthz` answer, yet a Worker sees the same few paths over and over (`/healthz`, `/api/v2/users/me`,
 * `/api/v2/notifications/inbox`), so the match is kept. A match depends only on the method and the path, and the
 * route table never changes once the app serves requests (adding a route forgets every kept match anyway). Hono
 * reads a match result without changing it, so one result can serve many requests.
 */
export class MemoRouter<T> implements Router<T> {
  readonly name = "MemoRouter(TrieRouter)";
  readonly #trie = new TrieRouter<T>();
  /** Every route path that serves some method, to find which of them match a request path. */
  readonly #routePaths = new TrieRouter<string>();
  /** The methods each route path serves. */
  readonly #methods = new Map<string, Set<string>>();
  /** The route path each method-specific handler was added for; middleware is not in it. */
  readonly #pathOf = new Map<T, string>();
  readonly #memo = new Map<string, Result<T>>();
  readonly #owners = new Map<string, ReadonlySet<string>>();

  add(method: string, path: string, handler: T): void {
    this.#memo.clear();
    this.#owners.clear();
    this.#trie.add(method, path, handler);
    if (method === "ALL") return;
    const methods = this.#methods.get(path);
    if (methods) methods.add(method);
    else {
      this.#methods.set(path, new Set([method]));
      this.#routePaths.add("ALL", path, path);
    }
    this.#pathOf.set(handler, path);
  }

  match(method: string, path: string): Result<T> {
    const key = `${method} ${path}`;
    const known = this.#memo.get(key);
    if (known) return known;
    const owners = this.#ownersOf(path);
    // The trie answers with parameters by name, never Hono's index-map form.
    const [handlers] = this.#trie.match(method, path) as [[T, Params][]];
    const kept = handlers.filter(([handler]) => {
      const routePath = this.#pathOf.get(handler);
      return routePath === undefined || owners.has(routePath);
    });
    return remember(this.#memo, key, [kept]);
  }

  /**
   * The methods a request path is served with (HEAD wherever GET is, as Hono answers it), in a fixed order; undefined
   * when no route serves the path at all.
   */
  allowed(path: string): string[] | undefined {
    const owners = this.#ownersOf(path);
    if (owners.size === 0) return undefined;
    const methods = new Set<string>();
    for (const owner of owners) for (const method of this.#methods.get(owner) ?? []) methods.add(method);
    if (methods.has("GET")) methods.add("HEAD");
    const rank = (m: string) => (METHOD_ORDER.includes(m) ? METHOD_ORDER.indexOf(m) : METHOD_ORDER.length);
    return [...methods].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  }

  /** The most specific route paths matching a request path. */
  #ownersOf(path: string): ReadonlySet<string> {
    const known = this.#owners.get(path);
    if (known) return known;
    const matching = [...new Set(this.#routePaths.match("ALL", path)[0].map(([routePath]) => routePath))];
    const best = matching.reduce<string | undefined>((a, b) => (a === undefined || compareSpecificity(b, a) > 0 ? b : a), undefined);
    const owners = new Set(best === undefined ? [] : matching.filter((p) => compareSpecificity(p, best) === 0));
    return remember(this.#owners, path, owners);
  }
}
