import * as z from "zod";

/**
 * UUIDs are accepted in any case and used in their canonical lower case (RFC 9562 §4: "treated as
 * case-insensitive"), so an id copied from an upper-case source finds the same row, filter or map entry as the
 * stored one. Every UUID input goes through `uuid` (a zod schema, for paths, queries and bodies) or `canonicalId`
 * (for fields that may hold a UUID or something else, such as authcheck's `owner_id: "me"`).
 */
export const uuid = z.uuid().transform((id) => id.toLowerCase());

const UUID_SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuidShaped(value: string): boolean {
  return UUID_SHAPE.test(value);
}

/** A UUID in lower case; any other string as it is. */
export function canonicalId(value: string): string {
  return UUID_SHAPE.test(value) ? value.toLowerCase() : value;
}
