import * as z from "zod";
import { timestamp } from "../http/schemas";
import { INBOX_SECTIONS } from "../inbox/export";
import { described, named } from "../openapi/registry";
import { D1_SECTIONS } from "./catalogue";
import { rowSchema } from "./columns";
import { EXPORT_FORMAT } from "./export";

/**
 * The export's documented shape (docs/privacy.md, "The export"), built from the same catalogues the export is written
 * from: a field per section, each row with exactly its exported columns.
 */
const d1Fields = Object.fromEntries(
  D1_SECTIONS.map((section) => {
    const row = rowSchema(section.columns);
    const schema = "single" in section && section.single ? row.nullable() : z.array(row);
    return [section.key, described(section.description, schema)];
  }),
);

const inboxFields = Object.fromEntries(
  INBOX_SECTIONS.map((section) => [section.key, described(section.description, z.array(rowSchema(section.columns)))]),
);

export const UserExport = named(
  "UserExport",
  z.strictObject({
    format: described("The shape of this document; a later shape would carry another name.", z.literal(EXPORT_FORMAT)),
    exported_at: timestamp,
    user_id: z.uuid(),
    ...d1Fields,
    inbox: described("What the user's inbox object holds.", z.strictObject(inboxFields)),
  }),
  "Everything Herald stores about one user (docs/privacy.md): each stored table's rows, each with its columns as stored, but for secrets and what is someone else's, which are left out.",
);
