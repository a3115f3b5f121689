/**
 * `npm run typecheck` checks every TypeScript file of `src/` and `test/` (docs/testing.md, "The layers"): each one is
 * a root file of a project the script names, so a project's `include` or `exclude` cannot leave a folder unchecked
 * while the script still passes. The projects are read from the script itself, and their files from `tsc --showConfig`.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
const tsc = path.join(root, "node_modules/.bin/tsc");

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (name === "node_modules") return [];
    return statSync(full).isDirectory() ? walk(full) : /\.(ts|tsx|mts|cts)$/.test(name) ? [full] : [];
  });
}

/** The projects `npm run typecheck` runs `tsc` on: its `-p` arguments, and the root configuration where none. */
function projects(): string[] {
  const { scripts } = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { scripts: { typecheck: string } };
  return scripts.typecheck.split("&&").map((command) => {
    const named = path.resolve(root, /(?:^|\s)-p\s+(\S+)/.exec(command)?.[1] ?? ".");
    return statSync(named).isDirectory() ? path.join(named, "tsconfig.json") : named;
  });
}

/** The root files of one project, as `tsc` resolves its `include`, `exclude` and `files`. */
function rootFiles(project: string): string[] {
  const shown = JSON.parse(execFileSync(tsc, ["-p", project, "--showConfig"], { cwd: root, encoding: "utf8" })) as { files?: string[] };
  return (shown.files ?? []).map((file) => path.resolve(path.dirname(project), file));
}

describe('docs/testing.md, "The layers"', () => {
  it("typecheck checks every TypeScript file of src/ and test/, the end-to-end tests and the pages they bundle included", () => {
    const named = projects();
    expect(named.map((p) => path.relative(root, p))).toEqual(expect.arrayContaining(["tsconfig.json", "test/e2e/tsconfig.json"]));
    const checked = new Set(named.flatMap(rootFiles));
    const all = ["src", "test"].flatMap((dir) => walk(path.join(root, dir)));
    expect(all.filter((file) => path.relative(root, file).startsWith("test/e2e/")).length).toBeGreaterThan(10);
    expect(all.filter((file) => !checked.has(file)).map((file) => path.relative(root, file))).toEqual([]);
  });
});
