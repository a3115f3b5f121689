import { describe, expect, it } from "vitest";
import { applyChange, type Filters, type Item, mayBringIn } from "../../src/dashboard/inbox/model";

// The dashboard's inbox list follows the change frames of its synced watch (docs/dashboard.md); a removal
// (docs/inbox.md, "Retention") takes the items out, whatever the filters, and never calls for a new listing.

const ALL: Filters = { read: "all", archived: "include", snoozed: "include" };

function item(id: string, fields: Partial<Item> = {}): Item {
  return {
    id,
    user_id: "00000000-0000-4000-8000-000000000000",
    template_id: "c425f63e-716a-4bf4-ae24-78348f706c3f",
    targets: [],
    title: id,
    content: "",
    icon: "DEFAULT_ICON_OTHER",
    actions: [],
    read_at: "2026-01-01T00:00:00.000Z",
    created_at: "2026-01-01T00:00:00.000Z",
    archived_at: null,
    snoozed_until: null,
    ...fields,
  };
}

describe('a removal frame in the dashboard\'s list (docs/inbox.md, "Retention")', () => {
  const [a, b, c] = [item("a"), item("b", { archived_at: "2026-01-01T00:00:00.000Z" }), item("c", { read_at: null })];

  it("takes the removed items out and keeps the others as they were", () => {
    expect(applyChange([a, b, c], { ids: ["a", "b", "unknown"], removed: true }, ALL)).toEqual([c]);
    expect(applyChange([a, b, c], { ids: ["b"], removed: true }, { read: "all", archived: "exclude", snoozed: "exclude" })).toEqual([a, c]);
  });

  it("never brings items in, even when it names ids the list does not hold", () => {
    expect(mayBringIn([a], { ids: ["x", "y"], removed: true }, { read: "read", archived: "only", snoozed: "exclude" })).toBe(false);
    // A change to an unknown id that the filters care about does, for comparison.
    expect(mayBringIn([a], { ids: ["x"], archived_at: null }, { read: "all", archived: "exclude", snoozed: "exclude" })).toBe(true);
  });
});
