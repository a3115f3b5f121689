import * as z from "zod";

/**
 * How one stored column appears in a user's export (docs/privacy.md, "The export"): as a value of its kind, under its
 * own name unless `as` renames it, or withheld, with the reason. Every column of every table is one or the other, so
 * a column added later without a decision fails test/privacy/export.test.ts.
 */
type ColumnKind = "text" | "integer" | "boolean" | "json";

export interface ExportedColumn {
  kind: ColumnKind;
  nullable?: boolean;
  /** The field's name in the export, when it is not the column's. */
  as?: string;
  /** What the export holds of the stored text, when not the text itself (a URL's origin, JSON without a secret). */
  from?: (stored: string) => string;
  /** The JSON's documented shape (a `json` column), for the OpenAPI document. */
  schema?: z.ZodType;
}

export interface WithheldColumn {
  /** Why the export leaves it out: a secret, key material, or another person's data. */
  withheld: string;
  /** A copy of what other exported columns hold (a search key): left out as redundant, not as secret. */
  derived?: boolean;
}

export type ColumnSpec = ExportedColumn | WithheldColumn;
export type Columns = Readonly<Record<string, ColumnSpec>>;

export const text: ExportedColumn = { kind: "text" };
export const textOrNull: ExportedColumn = { kind: "text", nullable: true };
export const integer: ExportedColumn = { kind: "integer" };
export const integerOrNull: ExportedColumn = { kind: "integer", nullable: true };
export const boolean: ExportedColumn = { kind: "boolean" };
export const json = (schema?: z.ZodType, nullable = false): ExportedColumn => ({ kind: "json", nullable, ...(schema ? { schema } : {}) });
export const withheld = (reason: string): WithheldColumn => ({ withheld: reason });
export const derived = (reason: string): WithheldColumn => ({ withheld: reason, derived: true });

export function isWithheld(spec: ColumnSpec): spec is WithheldColumn {
  return "withheld" in spec;
}

/** The exported columns, each with the name it has in the export. */
export function exportedColumns(columns: Columns): { column: string; field: string; spec: ExportedColumn }[] {
  return Object.entries(columns).flatMap(([column, spec]) => (isWithheld(spec) ? [] : [{ column, field: spec.as ?? column, spec }]));
}

/** A stored value as the export holds it: booleans from SQLite's 0 and 1, text through `from`, JSON parsed. */
export function exportValue(spec: ExportedColumn, stored: unknown): unknown {
  if (stored === null || stored === undefined) return null;
  switch (spec.kind) {
    case "boolean":
      return stored === 1 || stored === true;
    case "integer":
      return stored;
    case "text":
      return spec.from ? spec.from(String(stored)) : stored;
    case "json": {
      const text = spec.from ? spec.from(String(stored)) : String(stored);
      return JSON.parse(text);
    }
  }
}

function valueSchema(spec: ExportedColumn): z.ZodType {
  const base =
    spec.kind === "text"
      ? z.string()
      : spec.kind === "integer"
        ? z.number().int()
        : spec.kind === "boolean"
          ? z.boolean()
          : (spec.schema ?? z.unknown());
  return spec.nullable ? base.nullable() : base;
}

/** One exported row's documented shape: its exported columns, under their export names. */
export function rowSchema(columns: Columns): z.ZodType {
  return z.strictObject(Object.fromEntries(exportedColumns(columns).map(({ field, spec }) => [field, valueSchema(spec)])));
}
