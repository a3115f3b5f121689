/**
 * The repository explains itself (docs/testing.md, "References"): every file path that code, tests, scripts or the
 * documentation name exists, every section cited as `docs/<page>.md, "<Section>"` is a heading of that page, every
 * Markdown link to a page or a heading resolves, and nothing cites a document that is not in the repository. A
 * newcomer with only the repository can follow each one.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
const TEXT = /\.(ts|tsx|mjs|md|css|html|toml|sql)$/;
/** Files that runs write and git ignores: named by the documentation, absent from a clone. */
const GENERATED = new Set(["bench/results.json", "bench/profile.json"]);

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (name === "node_modules" || name.startsWith(".")) return [];
    return statSync(full).isDirectory() ? walk(full) : TEXT.test(name) ? [full] : [];
  });
}

const files = [...["src", "test", "scripts", "docs", "bench", "drizzle"].flatMap((d) => walk(path.join(root, d))), path.join(root, "README.md")];
const read = (file: string) => readFileSync(file, "utf8");
const headingsOf = new Map<string, string[]>();
function headings(page: string): string[] {
  let found = headingsOf.get(page);
  if (!found) {
    found = existsSync(page)
      ? read(page)
          .split("\n")
          .filter((line) => /^#{1,6} /.test(line))
          .map((line) => line.replace(/^#+ /, "").trim())
      : [];
    headingsOf.set(page, found);
  }
  return found;
}
/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
const anchorOf = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
/** A citation may break across comment lines: its words, joined again. */
const unwrap = (text: string) => text.replace(/\s*\n\s*(?:\*|\/\/|--)?\s*/g, " ");

describe("every reference resolves inside the repository (docs/testing.md, References)", () => {
  it("every file path named exists", () => {
    const missing = files.flatMap((file) =>
      [...read(file).matchAll(/(?<![\w/.-])((?:src|test|scripts|docs|drizzle|bench)\/[\w./-]*\.(?:ts|tsx|mjs|md|json|sql|css|html|pem))\b/g)]
        .map((m) => m[1] ?? "")
        .filter((named) => !GENERATED.has(named) && !existsSync(path.join(root, named)))
        .map((named) => `${path.relative(root, file)}: ${named}`),
    );
    expect(missing).toEqual([]);
  });

  it('every section cited as docs/<page>.md, "<Section>" is a heading of that page', () => {
    const unknown = files.flatMap((file) =>
      [...unwrap(read(file)).matchAll(/docs\/([\w-]+\.md),? \(?"([^"]+)"/g)]
        .filter(([, page = "", section = ""]) => {
          const wanted = section.toLowerCase();
          return !headings(path.join(root, "docs", page)).some((h) => h.toLowerCase() === wanted || h.toLowerCase().startsWith(wanted));
        })
        .map(([, page, section]) => `${path.relative(root, file)}: docs/${page}, "${section}"`),
    );
    expect(unknown).toEqual([]);
  });

  it("nothing cites a document outside the repository or speaks of how the code was made", () => {
    // Written in pieces, so that this file does not match itself.
    const outside = new RegExp(["SPEC \u00a7", "DESIGN\\.md", "tran" + "che", "iss" + "ue [0-9]"].join("|"), "i");
    const found = files.flatMap((file) =>
      read(file)
        .split("\n")
        .flatMap((line, i) => (outside.test(line) ? [`${path.relative(root, file)}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(found).toEqual([]);
  });

  it("every Markdown link to a page or a heading resolves", () => {
    const broken = files
      .filter((file) => file.endsWith(".md"))
      .flatMap((file) => {
        const text = read(file);
        const here = path.relative(root, file);
        const anchors = [...text.matchAll(/\]\(([\w./-]+\.md)?#([\w-]+)\)/g)]
          .filter(([, page, anchor]) => !headings(page ? path.join(path.dirname(file), page) : file).some((h) => anchorOf(h) === anchor))
          .map(([, page, anchor]) => `${here}: ${page ?? ""}#${anchor}`);
        const pages = [...text.matchAll(/\]\(([\w./-]+\.(?:md|ts|json|png|mjs))\)/g)]
          .filter(([, target = ""]) => !existsSync(path.join(path.dirname(file), target)))
          .map(([, target]) => `${here}: ${target}`);
        return [...anchors, ...pages];
      });
    expect(broken).toEqual([]);
  });
});
