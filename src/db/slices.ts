/**
 * D1 and Durable Object SQLite bind at most 100 parameters per statement, so a list of ids that validation accepts
 * (up to 100 authcheck resources, 200 preference keys, a page of 100 users) is queried in slices well under that,
 * leaving room for the statement's other parameters.
 */
const MAX_IDS_PER_STATEMENT = 90;

export function inSlices<T>(items: readonly T[], size = MAX_IDS_PER_STATEMENT): T[][] {
  const slices: T[][] = [];
  for (let i = 0; i < items.length; i += size) slices.push(items.slice(i, i + size));
  return slices;
}
