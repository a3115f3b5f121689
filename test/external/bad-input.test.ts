/**
 * Bad input on external sign-in: the OIDC and GitHub callbacks, which start and finish a browser sign-in, and login
 * conversion (A7), which moves a password account to one of them (docs/api.md: External sign-in, Converting a
 * password account; docs/security.md, Controls: open redirects). Every endpoint gets property-based junk — malformed
 * JSON, wrong JSON types, missing fields, huge and unicode values, hostile path segments, query strings, flow and
 * conversion cookies (tampered, expired, swapped, duplicated) and credentials — and must answer a 4xx in the error
 * shape (docs/api.md, Conventions) without changing state, or, for a callback, a 302 to the provider or to this
 * origin; no callback hands out a session without a completed sign-in, and a `redirect` is only ever kept as a path
 * on this origin. The harness is shared with the other bad-input suites (test/fixtures/bad-input.ts,
 * test/fixtures/stored-state.ts; docs/testing.md, "Bad input and permissions, in depth").
 *
 * | endpoint                                      | body | path | query | credentials | > 1 MiB | other        |
 * |-----------------------------------------------|------|------|-------|-------------|---------|--------------|
 * | POST /users/{user}/convert-login              | yes  | yes  |       | yes, Origin | yes     |              |
 * | GET /users/oidc/callback, …/github/callback   |      |      | yes   | (public)    |         | flow cookies |
 *
 * State is fingerprinted from every table (login_conversions and user_links included; for notification_messages only
 * the columns fixed at enqueue time; test/fixtures/stored-state.ts), and the raw-path and wrong-method requests,
 * sent with the member's token, from the member's inbox too. Fixtures (a live conversion, a started flow per
 * provider) are made in beforeAll and their background work (account notices) is waited out before the first
 * property runs; anything that legitimately changes state runs at the end of the file, last of all one real OIDC
 * sign-in through the test provider, a peer every test file shares (test/external/oauth-peers.ts: scripted right
 * before its flow, for an account of its own).
 *
 * Test names use the endpoints' short labels, the keys of docs/api.md's endpoint tables: A7 login conversion.
 */
import { env } from "cloudflare:workers";
import * as fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { CONVERSION_COOKIE, FLOW_COOKIE } from "../../src/external/cookies";
import { ExternalMessages } from "../../src/external/messages";
import { openValue, signValue } from "../../src/lib/signed";
import { anyText, notA, textLongerThan, textWithin } from "../fixtures/arbitraries";
import {
  alnum,
  type BodyEndpoint,
  badCredentials,
  baseRequestsSucceed,
  type EndpointCall,
  foreignOrigins,
  headerText,
  hostileSegment,
  jsonBodyProperties,
  knownUserRefs,
  oversizedBodies,
  type PathEndpoint,
  query,
  RAW_PATH_BODY,
  RUNS,
  rawPaths,
  SESSION_COOKIE,
  segmentsNamingNobody,
  wrongMethods,
} from "../fixtures/bad-input";
import { quiesce } from "../fixtures/d1-state";
import { assertErrorShape, expectRejected } from "../fixtures/error-shape";
import { stateChecks } from "../fixtures/stored-state";
import { BASE, call, createUser, json, owner, send, type TestUser } from "../helpers";
import { CookieJar, followRedirects, oidcNextLogin } from "./oauth-peers";

/**
 * Every table, and, for each token given to a check, that caller's inbox. The storage is this file's own (vitest gives
 * each test file its own D1 and objects; docs/testing.md), so only this file's fixtures start background work, which
 * it waits out (quiesce) before comparing.
 */
const checks = stateChecks("all");
const { snapshot, rejectedWithoutChange, answeredWithoutChange } = checks;

/** ACCESS_URL of wrangler.toml: the origin every redirect must stay on. */
const ACCESS_URL = "http://localhost:8787";
/** The test deployment's SECRET_KEY (vitest.config.ts), to open the flow cookies the callbacks set. */
const SECRET = env.SECRET_KEY ?? "";

// ---------------------------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------------------------

interface FlowFixture {
  /** The signed flow cookie the start of a sign-in set, and what it holds. */
  cookie: string;
  state: string;
  value: Record<string, unknown>;
}

interface Fixtures {
  admin: { token: string; id: string };
  /** The caller of the conversion fuzz. */
  member: TestUser;
  /** A live login conversion and the cookie that binds it to this browser. */
  conversion: { state: string; cookie: string };
  flows: Record<"oidc" | "github", FlowFixture>;
  knownRefs: Set<string>;
}
let fx: Fixtures;

const randomIp = () => `10.${Math.floor(Math.random() * 255)}.${Math.floor(Math.random() * 255)}.${Math.floor(Math.random() * 255)}`;

/** A browser GET to Herald that does not follow redirects (the callbacks answer 302s). */
function browse(path: string, cookie?: string): Promise<Response> {
  const headers = new Headers({ "CF-Connecting-IP": randomIp() });
  if (cookie !== undefined) headers.set("Cookie", cookie);
  const url = path.startsWith("http") ? path : `${BASE}/api/v2${path}`;
  return send(new Request(url, { headers, redirect: "manual" }));
}

/** The value a response set for cookie `name`, if it set one. */
function setCookieValue(res: Response, name: string): string | undefined {
  const header = res.headers.getSetCookie().find((c) => c.startsWith(`${name}=`));
  return header?.split(";")[0]?.slice(name.length + 1);
}

const PROVIDERS = {
  oidc: { path: "/users/oidc/callback", authorizeOrigin: new URL(env.OIDC_ISSUER_URL ?? "http://missing.invalid").origin },
  github: { path: "/users/oauth2/github/callback", authorizeOrigin: new URL(env.GITHUB_WEB_URL ?? "http://missing.invalid").origin },
} as const;
type ProviderName = keyof typeof PROVIDERS;

async function startFlow(provider: ProviderName): Promise<FlowFixture> {
  const res = await browse(PROVIDERS[provider].path);
  expect(res.status, await res.clone().text()).toBe(302);
  const cookie = setCookieValue(res, FLOW_COOKIE) ?? "";
  const opened = await openValue<Record<string, unknown>>(SECRET, FLOW_COOKIE, cookie);
  if (!opened.ok) throw new Error(`flow cookie did not open: ${opened.reason}`);
  return { cookie, state: String(opened.value.state), value: opened.value };
}

beforeAll(async () => {
  const admin = await owner();
  const [member, converter] = await Promise.all([createUser(), createUser()]);

  const started = await call("POST", "/users/me/convert-login", { token: converter.token, body: { password: converter.password, to_type: "oidc" } });
  expect(started.status, await started.clone().text()).toBe(201);
  const conversion = {
    state: (await json<{ state_string: string }>(started)).state_string,
    cookie: setCookieValue(started, CONVERSION_COOKIE) ?? "",
  };
  expect(conversion.cookie).not.toBe("");

  const flows = { oidc: await startFlow("oidc"), github: await startFlow("github") };
  const knownRefs = await knownUserRefs();
  fx = { admin, member, conversion, flows, knownRefs };
  // Creating those accounts notified the owner after each response; let that settle before anything is compared.
  await quiesce(2);
});

// ---------------------------------------------------------------------------------------------------------------
// JSON bodies
// ---------------------------------------------------------------------------------------------------------------

const BODY_ENDPOINTS: readonly BodyEndpoint[] = [
  {
    name: "A7 POST /users/{user}/convert-login",
    method: "POST",
    path: () => "/users/me/convert-login",
    token: () => fx.member.token,
    base: () => ({ password: fx.member.password, to_type: "oidc" }),
    bad: { password: fc.oneof(notA("string"), textLongerThan(1024)), to_type: fc.oneof(notA("string"), textLongerThan(64)) },
    required: ["password", "to_type"],
  },
];

describe("JSON bodies", () => {
  jsonBodyProperties(BODY_ENDPOINTS, checks, { malformed: RUNS.few, notAnObject: RUNS.few, fields: RUNS.some, nesting: 5 });
});

// ---------------------------------------------------------------------------------------------------------------
// Body size, credentials, Origin
// ---------------------------------------------------------------------------------------------------------------

/** Every authenticated endpoint of this file, with a request the member could make successfully. */
const AUTHED: readonly EndpointCall[] = [
  {
    name: "A7 POST /users/{user}/convert-login",
    method: "POST",
    path: () => `/users/${fx.member.id}/convert-login`,
    body: () => ({ password: fx.member.password, to_type: "oidc" }),
    as: "member",
  },
];

describe("body size", () => {
  oversizedBodies(AUTHED, () => fx, checks);
});

describe("credentials", () => {
  badCredentials(AUTHED, () => fx, checks, RUNS.few);

  foreignOrigins("a valid session cookie from a foreign or missing Origin cannot change anything → 403", AUTHED, () => fx, checks, RUNS.many);
});

// ---------------------------------------------------------------------------------------------------------------
// Path parameters
// ---------------------------------------------------------------------------------------------------------------

describe("path parameters", () => {
  /** Path segments that name no user, and are no UUID. */
  const hostile = () => hostileSegment(fx.knownRefs, { uuids: false });

  const USER_PATHS: readonly PathEndpoint[] = [
    {
      name: "A7 POST /users/{user}/convert-login",
      method: "POST",
      path: (s) => `/users/${s}/convert-login`,
      body: () => ({ password: fx.member.password, to_type: "oidc" }),
      as: "member",
    },
  ];

  segmentsNamingNobody(
    "$name: a {user} that names nobody → 404",
    USER_PATHS,
    () => fc.oneof(hostile(), fc.uuid()),
    () => fx,
    checks,
    RUNS.few,
  );

  // Unencoded: the URL parser and the router see these as written (bad escapes, NUL escapes, case, empty segments).
  const RAW_PATHS = [
    "/users/%ZZ/convert-login",
    "/users/me/convert-login%00",
    "/users/oidc/callback%00",
    "/users/oidc/callback/",
    "/users/oauth2/github/callback%00",
    "/users/oauth2/%00/callback",
  ] as const;
  rawPaths(RAW_PATHS, () => ({ token: fx.member.token, body: RAW_PATH_BODY, inboxes: [fx.member.token] }), checks);
});

// ---------------------------------------------------------------------------------------------------------------
// Wrong methods
// ---------------------------------------------------------------------------------------------------------------

describe("wrong methods", () => {
  wrongMethods(
    () => ({
      "/users/me/convert-login": ["POST"],
      "/users/oidc/callback": ["GET"],
      "/users/oauth2/github/callback": ["GET"],
    }),
    () => fx.member.token,
    checks,
    RUNS.many,
  );
});

// ---------------------------------------------------------------------------------------------------------------
// External sign-in callbacks
// ---------------------------------------------------------------------------------------------------------------

/** A Location that keeps the browser on this service. */
function isSameOrigin(location: string): boolean {
  return URL.parse(location, ACCESS_URL)?.origin === ACCESS_URL;
}

/** A stored post-sign-in target that stays on this service when used as a Location (no //host, no /\host). */
function isSameOriginPath(target: unknown): boolean {
  return typeof target === "string" && target.startsWith("/") && !target.startsWith("//") && !target.startsWith("/\\") && isSameOrigin(target);
}

const OPEN_REDIRECTS = [
  "https://evil.example.com/steal",
  "//evil.example.com",
  "/\\evil.example.com",
  "\\\\evil.example.com",
  "javascript:alert(1)",
  "/\t/evil.example.com",
  "evil.example.com",
  "http:evil.example.com",
  "/%2F%2Fevil.example.com",
  "%2F%2Fevil.example.com",
  "/.//evil.example.com",
  "/x/..//evil.example.com",
  "/%2e//evil.example.com",
  "/%2E%2E//evil.example.com/x",
  "/./\\evil.example.com",
  "/\u0000//evil.example.com",
  " //evil.example.com",
  "\u3000//evil.example.com",
  "/\u2028//evil.example.com",
  "data:text/html,<script>",
] as const;

describe("external sign-in callbacks", () => {
  const KEYS = ["code", "state", "error", "error_description", "redirect", "oidc_merge_state", "iss", "session_state", "scope", "x"] as const;
  /** Placeholders stand for values only known at run time: the live flow's state, the other flow's, the conversion's. */
  const value = fc.oneof(
    { weight: 5, arbitrary: anyText.filter((s) => s.length <= 300) },
    { weight: 2, arbitrary: fc.constantFrom(...OPEN_REDIRECTS) },
    { weight: 3, arbitrary: fc.constantFrom("$STATE", "$OTHER_STATE", "$CONVERSION", "access_denied", "", "http://localhost:8787/", "/") },
  );
  const COOKIE_KINDS = [
    "none",
    "own flow",
    "other flow",
    "conversion",
    "own flow + conversion",
    "tampered flow",
    "expired flow",
    "conversion as flow",
    "quoted flow",
    "duplicated flow",
    "garbage",
  ] as const;

  async function cookieFor(kind: (typeof COOKIE_KINDS)[number], provider: ProviderName, garbage: string): Promise<string | undefined> {
    const own = fx.flows[provider];
    const other = fx.flows[provider === "oidc" ? "github" : "oidc"];
    switch (kind) {
      case "none":
        return undefined;
      case "own flow":
        return `${FLOW_COOKIE}=${own.cookie}`;
      case "other flow":
        return `${FLOW_COOKIE}=${other.cookie}`;
      case "conversion":
        return `${CONVERSION_COOKIE}=${fx.conversion.cookie}`;
      case "own flow + conversion":
        return `${FLOW_COOKIE}=${own.cookie}; ${CONVERSION_COOKIE}=${fx.conversion.cookie}`;
      case "tampered flow":
        return `${FLOW_COOKIE}=${own.cookie.slice(0, -1)}${own.cookie.endsWith("0") ? "1" : "0"}`;
      case "expired flow":
        return `${FLOW_COOKIE}=${await signValue(SECRET, FLOW_COOKIE, own.value, Date.now() - 1_000)}`;
      case "conversion as flow":
        return `${FLOW_COOKIE}=${fx.conversion.cookie}; ${CONVERSION_COOKIE}=${own.cookie}`;
      case "quoted flow":
        return `${FLOW_COOKIE}="${own.cookie}"`;
      case "duplicated flow":
        return `${FLOW_COOKIE}=${garbage}; ${FLOW_COOKIE}=${own.cookie}`;
      case "garbage":
        return `${FLOW_COOKIE}=${garbage}; ${CONVERSION_COOKIE}=${garbage}; ${garbage}`;
    }
  }

  function resolve(v: string, provider: ProviderName): string {
    if (v === "$STATE") return fx.flows[provider].state;
    if (v === "$OTHER_STATE") return fx.flows[provider === "oidc" ? "github" : "oidc"].state;
    if (v === "$CONVERSION") return fx.conversion.state;
    return v;
  }

  it("hostile query strings with any cookie → a 4xx in the error shape, or a 302 to the provider or this origin; never a session", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<ProviderName>("oidc", "github"),
        fc.array(fc.tuple(fc.constantFrom(...KEYS), value), { maxLength: 5 }),
        fc.constantFrom(...COOKIE_KINDS),
        headerText.filter((s) => !s.includes(";")),
        async (provider, rawPairs, cookieKind, garbage) => {
          const pairs = rawPairs.map(([k, v]) => [k, resolve(v, provider)] as const);
          const params = new URLSearchParams(query(pairs));
          const cookie = await cookieFor(cookieKind, provider, garbage);
          const before = await snapshot();
          const res = await browse(`${PROVIDERS[provider].path}?${query(pairs)}`, cookie);
          const text = await res.text();
          expect(res.status, text.slice(0, 300)).toBeLessThan(500);
          expect(setCookieValue(res, SESSION_COOKIE), "no session without a completed sign-in").toBeUndefined();
          if (res.status === 302) {
            const location = res.headers.get("Location") ?? "";
            const starting = !params.has("code") && !params.has("error");
            if (starting && URL.parse(location)?.origin === PROVIDERS[provider].authorizeOrigin) {
              // The start of a flow: to the provider, with a fresh flow cookie whose state the authorize URL carries.
              const flow = await openValue<{ state: string; type: string }>(SECRET, FLOW_COOKIE, setCookieValue(res, FLOW_COOKIE) ?? "");
              expect(flow.ok).toBe(true);
              if (flow.ok) {
                expect(flow.value.type).toBe(provider);
                expect(new URL(location).searchParams.get("state")).toBe(flow.value.state);
              }
            } else {
              expect(isSameOrigin(location), `302 to ${location}`).toBe(true);
            }
          } else {
            expect(res.status, text.slice(0, 300)).toBeGreaterThanOrEqual(400);
            expect(res.headers.get("Content-Type")).toMatch(/^application\/json/);
            assertErrorShape(JSON.parse(text));
          }
          expect(await snapshot(), "a callback changed stored state without a completed sign-in").toEqual(before);
        },
      ),
      { numRuns: RUNS.many },
    );
  });

  it("the live flow's cookie and state with a junk code → 400 from the code exchange, no session, nothing stored", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<ProviderName>("oidc", "github"),
        fc.oneof(
          anyText.filter((s) => s.length <= 300),
          fc.uuid(),
          alnum(43),
        ),
        fc.array(
          fc.tuple(
            fc.constantFrom("iss", "session_state", "scope", "redirect", "x"),
            anyText.filter((s) => s.length <= 100),
          ),
          { maxLength: 2 },
        ),
        async (provider, code, extra) => {
          const flow = fx.flows[provider];
          const path = `${PROVIDERS[provider].path}?${query([["code", code], ["state", flow.state], ...extra])}`;
          const before = await snapshot();
          const res = await browse(path, `${FLOW_COOKIE}=${flow.cookie}`);
          expect(setCookieValue(res, SESSION_COOKIE)).toBeUndefined();
          await expectRejected(res, { status: 400 });
          expect(await snapshot()).toEqual(before);
        },
      ),
      { numRuns: RUNS.some },
    );
  });

  it("the live flow's cookie with an error from the provider → 400 naming it (bounded), nothing stored", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<ProviderName>("oidc", "github"),
        anyText,
        fc.option(anyText, { nil: undefined }),
        async (provider, error, description) => {
          const pairs: [string, string][] = [
            ["error", error],
            ["state", fx.flows[provider].state],
          ];
          if (description !== undefined) pairs.push(["error_description", description]);
          const body = await rejectedWithoutChange(
            () => browse(`${PROVIDERS[provider].path}?${query(pairs)}`, `${FLOW_COOKIE}=${fx.flows[provider].cookie}`),
            {
              status: 400,
              message: ExternalMessages.providerError,
            },
          );
          expect((body.detail ?? "").length).toBeLessThanOrEqual(302);
        },
      ),
      { numRuns: RUNS.few },
    );
  });

  // Guards the dot-segment forms ("/.//host", "/x/..//host", "/%2e//host"), which once got through: URL parsing removes
  // dot segments, so vetting the raw text and then keeping the parsed pathname turned "/.//evil.example.com" into
  // "//evil.example.com" (a host) in the Location header.
  it.each(OPEN_REDIRECTS)("redirect=%j is kept only as a same-origin path for after the sign-in", async (target) => {
    for (const provider of ["oidc", "github"] as const) {
      const res = await answeredWithoutChange(() => browse(`${PROVIDERS[provider].path}?${query([["redirect", target]])}`));
      expect(res.status).toBe(302);
      const flow = await openValue<{ redirect: string }>(SECRET, FLOW_COOKIE, setCookieValue(res, FLOW_COOKIE) ?? "");
      if (!flow.ok) throw new Error(`flow cookie did not open: ${flow.reason}`);
      expect(
        isSameOriginPath(flow.value.redirect),
        `${provider}: redirect=${JSON.stringify(target)} stored as ${JSON.stringify(flow.value.redirect)}`,
      ).toBe(true);
    }
  });

  it("any redirect value is kept only as a same-origin path", async () => {
    const target = fc.oneof(
      anyText.filter((s) => s.length <= 300),
      fc.webUrl({ withQueryParameters: true, withFragments: true }),
      fc.webPath().map((p) => `/${p}`),
      fc
        .tuple(
          fc.constantFrom("/", "/.", "/..", "/a/..", "/%2e", "/%2E%2e", "/./.", "/a/./.."),
          fc.constantFrom("/", "//", "\\", "/\\", "//\\"),
          fc.domain(),
        )
        .map(([a, b, host]) => `${a}${b}${host}`),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom<ProviderName>("oidc", "github"), target, async (provider, redirect) => {
        const res = await browse(`${PROVIDERS[provider].path}?${query([["redirect", redirect]])}`);
        expect(res.status).toBe(302);
        const flow = await openValue<{ redirect: string }>(SECRET, FLOW_COOKIE, setCookieValue(res, FLOW_COOKIE) ?? "");
        expect(flow.ok && isSameOriginPath(flow.value.redirect), `stored ${JSON.stringify(flow.ok ? flow.value.redirect : flow.reason)}`).toBe(true);
      }),
      { numRuns: RUNS.many },
    );
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Hostile but legal values: answered normally, and nothing changes that should not
// ---------------------------------------------------------------------------------------------------------------

describe("hostile but legal values are answered normally", () => {
  it("A7: to_type other than oidc or github → 400 naming it as documented, nothing stored", async () => {
    const toType = fc
      .oneof(fc.constantFrom("password", "none", "token", "OIDC", "GitHub", "oidc ", " github", "saml", ""), textWithin(0, 64))
      .filter((t) => t !== "oidc" && t !== "github");
    await fc.assert(
      fc.asyncProperty(toType, async (t) => {
        const expected = ["password", "none", "token"].includes(t) ? ExternalMessages.cannotConvertTo(t) : ExternalMessages.unknownLoginType(t);
        await rejectedWithoutChange(
          () => call("POST", "/users/me/convert-login", { token: fx.member.token, body: { password: fx.member.password, to_type: t } }),
          { status: 400, message: expected },
        );
      }),
      { numRuns: RUNS.some },
    );
  });

  it("A7: a service account (no password login) → 400 whatever the password", async () => {
    const svc = await createUser({ service: true });
    await quiesce(2);
    await fc.assert(
      fc.asyncProperty(textWithin(0, 1024), fc.constantFrom("oidc", "github"), async (password, toType) => {
        await rejectedWithoutChange(() => call("POST", "/users/me/convert-login", { token: svc.token, body: { password, to_type: toType } }), {
          status: 400,
          message: ExternalMessages.passwordLoginRequired,
        });
      }),
      { numRuns: RUNS.few },
    );
  });

  it("A7: a wrong password → 401 (429 once the account's budget is spent), nothing stored", async () => {
    const user = await createUser();
    await quiesce(2);
    await fc.assert(
      fc.asyncProperty(
        textWithin(0, 1024).filter((p) => p !== user.password),
        async (password) => {
          await rejectedWithoutChange(() => call("POST", "/users/me/convert-login", { token: user.token, body: { password, to_type: "oidc" } }), {
            status: [401, 429],
          });
        },
      ),
      { numRuns: 5 },
    );
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The fixtures were live: the base request above succeeds (so each rejection really was about the input)
// ---------------------------------------------------------------------------------------------------------------

describe("the requests the fuzz corrupted were valid", () => {
  baseRequestsSucceed(BODY_ENDPOINTS, [["A7", 201]]);
});

describe("a completed sign-in", () => {
  // The browser must never be sent to "//evil.example.com" (see the redirect tests above). One real OIDC sign-in
  // through the test provider per target; the account is made for this test alone.
  it("lands on this origin even when redirect smuggled a host through dot segments", async () => {
    const admin = await owner();
    const sub = `fuzz-${crypto.randomUUID().slice(0, 8)}`;
    const email = `${sub}@idp.test`;
    const created = await call("POST", "/users", { token: admin.token, body: { email, username: sub, login_type: "oidc" } });
    expect(created.status, await created.clone().text()).toBe(201);
    for (const target of ["/.//evil.example.com", "/x/..//evil.example.com"]) {
      await oidcNextLogin({ sub, email, email_verified: true });
      const jar = new CookieJar();
      const startUrl = `${ACCESS_URL}/api/v2${PROVIDERS.oidc.path}?${query([["redirect", target]])}`;
      const started = await browse(startUrl);
      jar.absorb(startUrl, started);
      expect(started.status).toBe(302);
      const chain = await followRedirects(new URL(started.headers.get("Location") ?? ""), jar, { stopWhen: (url) => url.origin === ACCESS_URL });
      if (!chain.stoppedAt) throw new Error(`the provider did not send the browser back: ${chain.finalBody ?? ""}`);
      const done = await browse(chain.stoppedAt, jar.header(chain.stoppedAt));
      expect(done.status, await done.clone().text()).toBe(302);
      const location = done.headers.get("Location") ?? "";
      expect(isSameOrigin(location), `redirect=${target} sent the signed-in browser to ${location}`).toBe(true);
    }
  });
});
