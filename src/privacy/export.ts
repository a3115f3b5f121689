import { type SQL, sql } from "drizzle-orm";
import type { Database } from "../db/client";
import type { Env } from "../env";
import { userInbox } from "../inbox/address";
import { INBOX_SECTIONS } from "../inbox/export";
import { nowIso } from "../lib/crypto";
import { D1_SECTIONS, type D1Section } from "./catalogue";
import { exportedColumns, exportValue } from "./columns";

/** The export document's `format`: a reader can tell this shape from any later one (docs/privacy.md, "The export"). */
export const EXPORT_FORMAT = "herald.export.v1";
/** D1 rows per page: a page of the message log is a few hundred KB of JSON at most. */
const D1_PAGE_ROWS = 500;

type Row = Record<string, unknown>;

/** A row as the export holds it: its exported columns, under their export names, each converted from SQLite. */
function exportRow(section: D1Section, row: Row): string {
  const fields = exportedColumns(section.columns).map(({ column, field, spec }) => [field, exportValue(spec, row[column])]);
  return JSON.stringify(Object.fromEntries(fields));
}

/** The columns a page reads: the exported ones, and those it pages on (which may be withheld, a hash). */
function selected(section: D1Section): SQL {
  const columns = new Set([...exportedColumns(section.columns).map((c) => c.column), ...section.order]);
  return sql.raw([...columns].join(", "));
}

/**
 * One part of a section, page by page in `order`: the next page starts after the last row of this one (keyset), so
 * each page is one indexed range, however many rows the user has.
 */
async function* partRows(db: Database, section: D1Section, part: SQL): AsyncGenerator<Row[]> {
  const order = sql.raw(section.order.join(", "));
  let after: unknown[] | undefined;
  for (;;) {
    const cursor =
      after === undefined
        ? sql``
        : sql` AND (${order}) > (${sql.join(
            after.map((v) => sql`${v}`),
            sql`, `,
          )})`;
    const rows = await db.all<Row>(
      sql`SELECT ${selected(section)} FROM ${sql.raw(section.table)} WHERE (${part})${cursor} ORDER BY ${order} LIMIT ${D1_PAGE_ROWS}`,
    );
    if (rows.length > 0) yield rows;
    const last = rows.at(-1);
    if (rows.length < D1_PAGE_ROWS || last === undefined) return;
    after = section.order.map((column) => last[column]);
  }
}

/** A section as JSON text, in pieces: an object or null (`single`), or an array written a page at a time. */
async function* d1Section(db: Database, section: D1Section, userId: string): AsyncGenerator<string> {
  if (section.single) {
    const [row] = await db.all<Row>(
      sql`SELECT ${selected(section)} FROM ${sql.raw(section.table)} WHERE ${section.parts[0]?.(userId) ?? sql`0`} LIMIT 1`,
    );
    yield row === undefined ? "null" : exportRow(section, row);
    return;
  }
  yield "[";
  let first = true;
  for (const part of section.parts) {
    for await (const rows of partRows(db, section, part(userId))) {
      yield (first ? "" : ",") + rows.map((row) => exportRow(section, row)).join(",");
      first = false;
    }
  }
  yield "]";
}

/** One section of the user's inbox object, page by page, as the object writes it (src/inbox/export.ts). */
async function* inboxSection(env: Env, userId: string, key: (typeof INBOX_SECTIONS)[number]["key"]): AsyncGenerator<string> {
  const inbox = userInbox(env, userId);
  yield "[";
  let first = true;
  let after: number | null = 0;
  while (after !== null) {
    const page = await inbox.exportPage(key, after);
    // The object's page is a JSON array; its elements join the section's.
    if (page.rows > 0) yield (first ? "" : ",") + page.json.slice(1, -1);
    first = first && page.rows === 0;
    after = page.next;
  }
  yield "]";
}

/**
 * Everything Herald holds about a user, as one JSON document written piece by piece (docs/privacy.md, "The export"):
 * the D1 sections of src/privacy/catalogue.ts, then the inbox object's of src/inbox/export.ts. No piece is more than a
 * page of rows, and the next is read only when the client has taken the last, so an inbox of 100,000 items is
 * exported in the memory of a page.
 */
export async function* exportDocument(env: Env, db: Database, userId: string, now = Date.now()): AsyncGenerator<string> {
  yield `{"format":${JSON.stringify(EXPORT_FORMAT)},"exported_at":${JSON.stringify(nowIso(now))},"user_id":${JSON.stringify(userId)}`;
  for (const section of D1_SECTIONS) {
    yield `,${JSON.stringify(section.key)}:`;
    yield* d1Section(db, section, userId);
  }
  yield ',"inbox":{';
  let first = true;
  for (const { key } of INBOX_SECTIONS) {
    yield `${first ? "" : ","}${JSON.stringify(key)}:`;
    first = false;
    yield* inboxSection(env, userId, key);
  }
  yield "}}";
}

/**
 * The document as a byte stream that reads on only when the client has taken what came before. A failure midway
 * ends the stream with an error, so the client never takes a cut document for a whole one.
 */
export function exportStream(pieces: AsyncGenerator<string>): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const { value, done } = await pieces.next();
          if (done) controller.close();
          else controller.enqueue(encoder.encode(value));
        } catch (error) {
          console.error(`[herald] an export failed midway: ${error instanceof Error ? error.name : "error"}`);
          controller.error(error);
        }
      },
      async cancel() {
        await pieces.return(undefined);
      },
    },
    { highWaterMark: 0 },
  );
}
