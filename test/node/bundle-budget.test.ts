import { describe, expect, it } from "vitest";
import { BUDGETS, buildUi } from "../../scripts/build-ui.mjs";

// The browser's first load, gzip (docs/dashboard.md#budgets): the dashboard's page, script and style; the embed's
// one module. Built here exactly as `npm start` and the deploy build them.
describe("what a browser downloads stays within its budget", () => {
  it("dashboard ≤ 100 KiB and embed ≤ 25 KiB, gzip", async () => {
    const sizes = await buildUi();
    console.log(`first load, gzip: dashboard ${(sizes.dashboard / 1024).toFixed(1)} KiB, embed ${(sizes.embed / 1024).toFixed(1)} KiB`);
    expect(sizes.dashboard).toBeLessThanOrEqual(BUDGETS.dashboard);
    expect(sizes.embed).toBeLessThanOrEqual(BUDGETS.embed);
    expect(BUDGETS).toEqual({ dashboard: 100 * 1024, embed: 25 * 1024 });
  });
});
