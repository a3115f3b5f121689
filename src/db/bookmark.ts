/**
 * The D1 bookmark a response carries and a later request may send back (docs/consistency.md): a position in the
 * database's history, from D1's Sessions API. Shared by the Worker and the typed client (src/client), so it imports
 * nothing.
 */
export const BOOKMARK_HEADER = "Herald-D1-Bookmark";

/**
 * A D1 bookmark is a Durable Object SQLite bookmark (D1 is built on them): four lower-case hex fields of 8, 8, 8 and
 * 32 digits, 59 characters, e.g. `00000000-0000000b-00000000-00000000000000000000000000000000` from local D1.
 * test/db/bookmarks.test.ts checks that the bookmarks D1 hands out have this shape, so a change of format fails there.
 */
export const BOOKMARK_PATTERN = "^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$";
const BOOKMARK_SHAPE = new RegExp(BOOKMARK_PATTERN);
const BOOKMARK_LENGTH = 59;

/**
 * The client's bookmark when it has a bookmark's shape, else undefined: anything else is ignored, never an error
 * (docs/consistency.md, "A malformed or hostile bookmark"). The length is compared first, so an oversized header costs nothing.
 */
export function acceptedBookmark(value: string | null | undefined): string | undefined {
  return value?.length === BOOKMARK_LENGTH && BOOKMARK_SHAPE.test(value) ? value : undefined;
}

/** The later of two bookmarks: they sort as strings, oldest first (D1's own sessions keep the greater one). */
export function laterBookmark(current: string | undefined, next: string): string {
  return current === undefined || next > current ? next : current;
}
