/**
 * The displayed-text rule (docs/api.md, "Displayed text") on every field it covers, one row per field and endpoint:
 * a refused character inserted anywhere in accepted text is a 400 in the error shape naming the field, and nothing is
 * stored; accepted text (emoji, Arabic and Hebrew, combining marks, joiners where they join) is stored as sent.
 */
import * as fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { Messages } from "../../src/http/errors";
import { NotificationsMessages } from "../../src/notifications/messages";
import { STRONG_PASSWORD } from "../fixtures/bad-input";
import { quiesce } from "../fixtures/d1-state";
import { ACCEPTED_UNITS, REFUSED_EVERYWHERE, REFUSED_IN_A_LINE } from "../fixtures/display-text";
import { stateChecks } from "../fixtures/stored-state";
import { call, createUser, json, owner, type TestUser } from "../helpers";
import { creationOptions, SoftAuthenticator } from "../passkeys/authenticator";
import { subscribeBrowser } from "../peers";
import { standInPath, standInUrl } from "../targets/stand-ins";

const checks = stateChecks("all");

let admin: { token: string; id: string };
let member: TestUser;
let unique = 0;
/**
 * Who adds the passkeys: a passkey's body answers that user's own creation options, which are limited to 10 a minute
 * per user, so the requests take turns among three users.
 */
let enrollers: TestUser[] = [];
let enrolled = 0;
let enroller: TestUser | undefined;

beforeAll(async () => {
  admin = await owner();
  [member, ...enrollers] = await Promise.all([createUser(), createUser(), createUser(), createUser()]);
  await quiesce(2);
});

interface Field {
  /** The endpoint and the field's JSON path. */
  name: string;
  field: string;
  lines: "single" | "multi";
  method: "POST";
  path: string;
  token: () => string;
  /** The request's body around the text, made before `token` is read (adding a passkey answers new options). */
  body: (text: string) => Record<string, unknown> | Promise<Record<string, unknown>>;
  /** Whether text outside ASCII is accepted (token names are letters, digits, space, `_ . -`). */
  unicode: boolean;
  /** The success status, and the stored text read back after it. */
  success: number;
  stored?: (res: Response) => Promise<string>;
}

const nextUser = () => {
  unique += 1;
  return { email: `shown-${unique}@herald.test`, username: `shown-${unique}`, password: STRONG_PASSWORD };
};

const FIELDS: Field[] = [
  {
    name: "POST /notifications/custom",
    field: "content.title",
    lines: "single",
    method: "POST",
    path: "/notifications/custom",
    token: () => member.token,
    body: (title) => ({ content: { title, message: "m" } }),
    unicode: true,
    success: 204,
  },
  {
    name: "POST /notifications/custom",
    field: "content.message",
    lines: "multi",
    method: "POST",
    path: "/notifications/custom",
    token: () => member.token,
    body: (message) => ({ content: { title: "t", message } }),
    unicode: true,
    success: 204,
  },
  {
    name: "POST /notifications/broadcasts",
    field: "content.title",
    lines: "single",
    method: "POST",
    path: "/notifications/broadcasts",
    token: () => admin.token,
    body: (title) => ({ audience: { user_ids: [member.id] }, content: { title, message: "m" } }),
    unicode: true,
    success: 202,
  },
  {
    name: "POST /notifications/broadcasts",
    field: "content.message",
    lines: "multi",
    method: "POST",
    path: "/notifications/broadcasts",
    token: () => admin.token,
    body: (message) => ({ audience: { user_ids: [member.id] }, content: { title: "t", message } }),
    unicode: true,
    success: 202,
  },
  {
    name: "POST /users/first",
    field: "name",
    lines: "single",
    method: "POST",
    path: "/users/first",
    token: () => admin.token,
    body: (name) => ({ ...nextUser(), name }),
    unicode: true,
    // The first user exists: a valid body is a 409, so only refusals are checked here.
    success: 409,
  },
  {
    name: "POST /users",
    field: "name",
    lines: "single",
    method: "POST",
    path: "/users",
    token: () => admin.token,
    body: (name) => ({ ...nextUser(), name }),
    unicode: true,
    success: 201,
    stored: async (res) => {
      const { id } = await json<{ id: string }>(res);
      return (await json<{ name: string }>(await call("GET", `/users/${id}`, { token: admin.token }))).name;
    },
  },
  {
    name: "POST /users/{user}/keys/tokens",
    field: "token_name",
    lines: "single",
    method: "POST",
    path: "/users/me/keys/tokens",
    token: () => member.token,
    body: (token_name) => ({ token_name }),
    unicode: false,
    success: 201,
  },
  {
    name: "POST /users/{user}/passkeys",
    field: "name",
    lines: "single",
    method: "POST",
    path: "/users/me/passkeys",
    token: () => enroller?.token ?? "",
    body: async (name) => {
      enroller = enrollers[enrolled++ % enrollers.length];
      return { name, response: await (await SoftAuthenticator.create()).register(await creationOptions(enroller?.token ?? "")) };
    },
    unicode: true,
    success: 201,
    stored: async (res) => (await json<{ name: string }>(res)).name,
  },
  {
    name: "POST /users/{user}/push-subscriptions",
    field: "name",
    lines: "single",
    method: "POST",
    path: "/users/me/push-subscriptions",
    token: () => member.token,
    // A browser of its own each time: the same endpoint again would update the first one (200).
    body: async (name) => ({ ...(await subscribeBrowser()).subscription, name }),
    unicode: true,
    success: 201,
    stored: async (res) => (await json<{ name: string }>(res)).name,
  },
  {
    name: "POST /users/{user}/notification-targets",
    field: "name",
    lines: "single",
    method: "POST",
    path: "/users/me/notification-targets",
    token: () => member.token,
    body: (name) => ({ kind: "slack", url: standInUrl(standInPath("slack")), name }),
    unicode: true,
    success: 201,
    stored: async (res) => (await json<{ name: string }>(res)).name,
  },
];

const ASCII_UNITS = ACCEPTED_UNITS.filter((u) => /^[a-zA-Z0-9 _.-]$/.test(u));

/** Accepted text of the field's kind, as units (a refused character goes between two of them). */
const accepted = (f: Field) =>
  fc.array(fc.constantFrom(...(f.unicode ? ACCEPTED_UNITS : ASCII_UNITS)), { minLength: 2, maxLength: 20 }).map((units) => ["x", ...units]);

const refused = (f: Field) => fc.constantFrom(...REFUSED_EVERYWHERE, ...(f.lines === "single" ? REFUSED_IN_A_LINE : []));

describe("a refused character anywhere → 400 naming the field, nothing stored", () => {
  it.each(FIELDS.map((f) => [`${f.name} ${f.field} (${f.lines} line)`, f] as const))("%s", async (_, f) => {
    await fc.assert(
      fc.asyncProperty(accepted(f), fc.nat(), refused(f), async (units, at, c) => {
        const i = 1 + (at % units.length);
        const text = [...units.slice(0, i), c, ...units.slice(i)].join("");
        const body = await f.body(text);
        const error = await checks.rejectedWithoutChange(() => call(f.method, f.path, { token: f.token(), body }), {
          status: 400,
        });
        expect([Messages.validation, NotificationsMessages.invalidCustomBody]).toContain(error.message);
        expect(error.validations?.map((v) => v.field)).toContain(f.field);
      }),
      { numRuns: 12 },
    );
  });
});

describe("accepted text is stored as sent", () => {
  it.each(FIELDS.filter((f) => f.success !== 409).map((f) => [`${f.name} ${f.field}`, f] as const))("%s", async (_, f) => {
    await fc.assert(
      fc.asyncProperty(accepted(f), async (units) => {
        const text = units.join(f.lines === "multi" ? "\n" : "");
        const body = await f.body(text);
        const res = await call(f.method, f.path, { token: f.token(), body, headers: { "Idempotency-Key": crypto.randomUUID() } });
        expect(res.status, await res.clone().text()).toBe(f.success);
        if (f.stored) expect(await f.stored(res)).toBe(text);
      }),
      { numRuns: 5 },
    );
    await quiesce(2);
  });
});
