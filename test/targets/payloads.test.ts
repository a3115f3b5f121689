import * as fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  clip,
  DISCORD_LIMITS,
  discordPayload,
  escapeDiscord,
  SLACK_LIMITS,
  slackPayload,
  type TargetContent,
  teamsPayload,
} from "../../src/targets/payloads";
import { receivedAt, standInPath, standInUrl } from "./stand-ins";

// The bodies of docs/targets.md, "What each service receives", made by src/targets/payloads.ts, posted straight to
// the stand-ins (test/peers/targets.ts), which check them against each service's documented limits: whatever a
// notification holds — any length, any script, markup characters, any number of actions — the service takes it.

const LINK = "https://herald.example/#/inbox";

/** Posts `payload` to a fresh stand-in path of `kind` and returns what the stand-in found wrong with it. */
async function problemsOf(kind: "slack" | "teams" | "discord", payload: unknown): Promise<string[]> {
  const path = standInPath(kind);
  const res = await fetch(standInUrl(path), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(payload) });
  await res.body?.cancel();
  const [delivery] = await receivedAt(path);
  return delivery?.problems ?? ["nothing arrived"];
}

const text = (maxLength: number) =>
  fc.oneof(
    fc.string({ unit: "grapheme", maxLength }),
    fc.string({
      unit: fc.constantFrom("&", "<", ">", "*", "_", "~", "`", "|", "[", "]", "(", ")", "#", "-", "\\", "@", ":", " ", "\n", "a", "😀"),
      maxLength,
    }),
    fc.string({ unit: "binary", maxLength }),
  );

const action = fc.record({
  label: text(120),
  url: fc.oneof(
    fc.webUrl({ withQueryParameters: true, withFragments: true }),
    fc.constantFrom("javascript:alert(1)", "/relative", "mailto:a@b.example", ""),
  ),
});

const content: fc.Arbitrary<TargetContent> = fc.record({
  title: text(400),
  body: fc.oneof(text(200), text(9000)),
  actions: fc.array(action, { maxLength: 30 }),
  createdAt: fc.constant("2026-01-01T00:00:00.000Z"),
  link: fc.constant(LINK),
});

describe('docs/targets.md, "What each service receives": every notification makes a body the service takes', () => {
  it.each([
    ["slack", slackPayload],
    ["teams", teamsPayload],
    ["discord", discordPayload],
  ] as const)("%s", async (kind, build) => {
    await fc.assert(
      fc.asyncProperty(content, async (c) => {
        expect(await problemsOf(kind, build(c))).toEqual([]);
      }),
      { numRuns: 40 },
    );
  });
});

describe('docs/targets.md, "What each service receives": limits and escaping', () => {
  const long = (n: number) => Array.from({ length: n }, (_, i) => `word${i}`).join(" ");

  it("Slack: a long title is cut to 150 with an ellipsis, a long body spread over sections of 3000, at most 50 blocks, 25 buttons", async () => {
    const payload = slackPayload({
      title: "t".repeat(400),
      body: long(40_000),
      actions: Array.from({ length: 30 }, (_, i) => ({ label: `Action ${i} ${"x".repeat(100)}`, url: `https://example.com/${i}` })),
      createdAt: "2026-01-01T00:00:00.000Z",
      link: LINK,
    }) as { blocks: { type: string; text?: { text: string }; elements?: { text: { text: string } }[] }[] };
    expect(payload.blocks).toHaveLength(SLACK_LIMITS.blocks);
    expect(payload.blocks[0]?.text?.text).toBe(`${"t".repeat(149)}…`);
    const sections = payload.blocks.filter((b) => b.type === "section");
    expect(sections).toHaveLength(48);
    for (const s of sections) expect(s.text?.text.length).toBeLessThanOrEqual(3000);
    expect(sections.at(-1)?.text?.text.endsWith("…")).toBe(true);
    const buttons = payload.blocks.at(-1)?.elements ?? [];
    expect(buttons).toHaveLength(25);
    expect(buttons[0]?.text.text).toHaveLength(75);
    expect(await problemsOf("slack", payload)).toEqual([]);
  });

  it("Slack: a body that fits one section whole is not cut, and &, < and > arrive as entities", () => {
    const payload = slackPayload({ title: "A", body: "x < y && y > z", actions: [], createdAt: "2026-01-01T00:00:00.000Z", link: LINK }) as {
      blocks: { text?: { text: string } }[];
    };
    expect(payload.blocks[1]?.text?.text).toBe("x &lt; y &amp;&amp; y &gt; z");
  });

  it("Discord: Markdown and mentions show as written, bare web addresses stay links, and no mention can ping", () => {
    expect(escapeDiscord("**bold** _it_ <@123> [x](https://evil.example) see https://ci.example.com/a_b*c")).toBe(
      "\\*\\*bold\\*\\* \\_it\\_ \\<@123\\> \\[x\\](https://evil.example) see https://ci.example.com/a_b*c",
    );
    expect(escapeDiscord("# Heading\n- item\n1. first\n> quote")).toBe("\\# Heading\n\\- item\n\\1. first\n\\> quote");
    const payload = discordPayload({ title: "@everyone", body: "@here", actions: [], createdAt: "2026-01-01T00:00:00.000Z", link: LINK });
    expect(payload.allowed_mentions).toEqual({ parse: [] });
  });

  it("Discord: a long body is cut to fit the description with its links kept whole, inside 6000 in all", async () => {
    const payload = discordPayload({
      title: "T".repeat(300),
      body: long(3000),
      actions: [{ label: "Open (the) build", url: "https://ci.example.com/build (1)" }],
      createdAt: "2026-01-01T00:00:00.000Z",
      link: LINK,
    }) as { embeds: { title: string; description: string; url: string }[] };
    const [embed] = payload.embeds;
    expect(embed?.title).toHaveLength(DISCORD_LIMITS.title);
    expect(embed?.description.length).toBeLessThanOrEqual(DISCORD_LIMITS.description);
    // The link policy drops the space (src/markdown/links.ts); a parenthesis would end the masked link early.
    expect(embed?.description.endsWith("…\n\n[Open (the) build](https://ci.example.com/build%281%29)")).toBe(true);
    expect(embed?.url).toBe("https://ci.example.com/build(1)");
    expect(await problemsOf("discord", payload)).toEqual([]);
  });

  it("Teams: an Adaptive Card 1.5 with the title, the body and an Open action", () => {
    const payload = teamsPayload({ title: "Title", body: "Body", actions: [], createdAt: "2026-01-01T00:00:00.000Z", link: LINK }) as {
      attachments: { content: { version: string; body: { text: string }[]; actions: { type: string; url: string }[] } }[];
    };
    const card = payload.attachments[0]?.content;
    expect(card?.version).toBe("1.5");
    expect(card?.body.map((b) => b.text)).toEqual(["Title", "Body"]);
    expect(card?.actions).toEqual([{ type: "Action.OpenUrl", title: "Open in Herald", url: LINK }]);
  });

  it("clip never splits a surrogate pair", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 60 }), fc.integer({ min: 2, max: 40 }), (s, max) => {
        const cut = clip(s, max);
        expect(cut.length).toBeLessThanOrEqual(Math.max(max, 0));
        expect(cut).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
      }),
    );
  });
});
