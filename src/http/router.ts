import type { Result, Router } from "hono/router";
import { TrieRouter } from "hono/router/trie-router";

/** Distinct method + path pairs remembered; past this the oldest is forgotten first (a Map iterates in insertion order). */
const MEMO_ENTRIES = 2_000;

/**
 * Hono's TrieRouter with its answers remembered per method and path (docs/benchmarks.md, "Where the time goes").
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
  readonly #memo = new Map<string, Result<T>>();

  add(method: string, path: string, handler: T): void {
    this.#memo.clear();
    this.#trie.add(method, path, handler);
  }

  match(method: string, path: string): Result<T> {
    const key = `${method} ${path}`;
    const known = this.#memo.get(key);
    if (known) return known;
    const result = this.#trie.match(method, path);
    if (this.#memo.size >= MEMO_ENTRIES) this.#memo.delete(this.#memo.keys().next().value ?? "");
    this.#memo.set(key, result);
    return result;
  }
}
