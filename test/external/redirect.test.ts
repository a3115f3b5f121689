import { describe, expect, it } from "vitest";
import { safeRedirect } from "../../src/external/routes";

// After a browser sign-in (OIDC, GitHub, A7), `redirect` may be a path on Herald or a full URL whose origin is in
// CORS_ALLOWED_ORIGINS; anything else falls back to "/" (docs/api.md, "External sign-in").

const ORIGIN = "https://herald.example.com";
const ALLOWED = ["https://app.example.com", "http://localhost:5173", "https://Dash.Example.org:443"];

describe('redirect after a browser sign-in (docs/api.md, "External sign-in")', () => {
  const kept: [string, string][] = [
    ["/", "/"],
    ["/inbox?tab=unread#top", "/inbox?tab=unread#top"],
    ["https://app.example.com/after-login?x=1", "https://app.example.com/after-login?x=1"],
    ["HTTPS://APP.EXAMPLE.COM/welcome", "https://app.example.com/welcome"],
    ["http://localhost:5173/", "http://localhost:5173/"],
    ["https://dash.example.org/home", "https://dash.example.org/home"],
    ["https://app.example.com:443/x", "https://app.example.com/x"],
  ];
  for (const [target, expected] of kept) {
    it(`keeps ${JSON.stringify(target)}`, () => expect(safeRedirect(target, ORIGIN, ALLOWED)).toBe(expected));
  }

  const refused = [
    "https://evil.example.com/",
    "https://app.example.com.evil.example.com/",
    "https://app.example.com@evil.example.com/",
    "https://user:pass@app.example.com/",
    "http://app.example.com/",
    "https://app.example.com:8443/",
    "http://localhost:5174/",
    "//app.example.com/",
    "javascript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "ftp://app.example.com/",
    "https://app.example.com/\u0000",
    "/\\evil.example.com",
    "/.//evil.example.com",
  ];
  for (const target of refused) {
    it(`falls back to "/" for ${JSON.stringify(target)}`, () => expect(safeRedirect(target, ORIGIN, ALLOWED)).toBe("/"));
  }

  it("without CORS_ALLOWED_ORIGINS, only paths on Herald", () => {
    expect(safeRedirect("https://app.example.com/", ORIGIN, [])).toBe("/");
    expect(safeRedirect(`${ORIGIN}/inbox`, ORIGIN, [])).toBe("/");
    expect(safeRedirect("/inbox", ORIGIN, [])).toBe("/inbox");
  });
});
