import * as z from "zod";
import { ASSIGNABLE_SITE_ROLES } from "../authz/roles";
import { TOKEN_LIFETIME_CEILING_MS } from "../config/schema";
import { uuid } from "../http/ids";
import { count, timestamp } from "../http/schemas";
import { described, named } from "../openapi/registry";
import { displayed } from "../text/display";
import { UserMessages } from "./messages";
import { isReservedUsername } from "./reserved";

/** Coder's username rule: 1–32 of [a-zA-Z0-9-], no leading/trailing or double hyphen. */
const username = z
  .string()
  .min(1)
  .max(32)
  .regex(/^[a-zA-Z0-9]+(?:-[a-zA-Z0-9]+)*$/, "must be alphanumeric with single hyphens between characters")
  // A name a path under /users/ already means could never be reached by name (docs/api.md, Conventions).
  .refine((name) => !isReservedUsername(name), { error: (issue) => UserMessages.usernameReserved(String(issue.input)) });

const email = z.email().max(320);
/** Policy (length, common list, strength) is checked separately so its reason reads well; this bounds the input. */
const password = z.string().max(1024);
/** Shown to everyone who lists users: displayed text, one line (docs/api.md, "Displayed text"). */
const displayName = displayed(z.string().max(128), "name", "single");

export const createFirstUserBody = named(
  "CreateFirstUserRequest",
  z.object({
    email,
    username,
    name: displayName.optional(),
    password: password.min(1),
  }),
);

export const createUserBody = named(
  "CreateUserRequest",
  z
    .object({
      email: email.optional(),
      username,
      name: displayName.optional(),
      password: password.optional(),
      login_type: z.enum(["password", "oidc", "github", "none"]).optional(),
      /** Service accounts (system users): no password sign-in, no custom notifications. */
      service_account: z.boolean().optional(),
      user_status: z.enum(["active", "suspended"]).optional(),
    })
    .superRefine((body, ctx) => {
      const loginType = body.login_type ?? (body.service_account ? "none" : "password");
      if (body.service_account && loginType !== "none") {
        ctx.addIssue({ code: "custom", path: ["login_type"], message: 'Service accounts must use login type "none".' });
      }
      if (loginType === "password" && !body.password) {
        ctx.addIssue({ code: "custom", path: ["password"], message: "A password is required for password login." });
      }
      if (loginType !== "password" && body.password) {
        ctx.addIssue({ code: "custom", path: ["password"], message: `Users of login type "${loginType}" cannot have a password.` });
      }
      if (!body.service_account && !body.email) {
        ctx.addIssue({ code: "custom", path: ["email"], message: "An e-mail address is required." });
      }
    }),
  "A user: a password user (the default) needs `email` and `password`; an `oidc`, `github` or `none` user needs `email` and no password; a service account (`service_account: true`) has login type `none`, no password, and an optional e-mail.",
  {
    // The superRefine above, as JSON Schema: exactly the bodies it accepts.
    anyOf: [
      {
        required: ["email", "password"],
        properties: { login_type: { const: "password" }, service_account: { const: false } },
      },
      {
        required: ["email", "login_type"],
        properties: { login_type: { enum: ["oidc", "github", "none"] }, service_account: { const: false }, password: false },
      },
      {
        required: ["service_account"],
        properties: { service_account: { const: true }, login_type: { const: "none" }, password: false },
      },
    ],
  },
);

export const listUsersQuery = z.strictObject({
  q: z.string().max(256).optional(),
  status: z.enum(["active", "suspended"]).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(50),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
});

export const updateRolesBody = named(
  "UpdateRolesRequest",
  z.object({
    roles: z.array(z.enum(ASSIGNABLE_SITE_ROLES.concat() as [string, ...string[]])).max(10),
  }),
);

export const changePasswordBody = named(
  "UpdateUserPasswordRequest",
  z.object({
    old_password: password.optional(),
    password: password.min(1),
  }),
);

const TOKEN_LIFETIME_CEILING_SECONDS = TOKEN_LIFETIME_CEILING_MS / 1000;

export const createTokenBody = named(
  "CreateTokenRequest",
  z.object({
    // Its own characters are ASCII already; the displayed-text rule (docs/api.md, "Displayed text") is applied all the same,
    // so every field another person reads goes through the one rule.
    token_name: displayed(
      z
        .string()
        .min(1)
        .max(64)
        .regex(/^[a-zA-Z0-9][a-zA-Z0-9 _.-]*$/, "must start with a letter or digit and use letters, digits, space, _ . -"),
      "token_name",
      "single",
    ),
    lifetime: described(
      "Seconds; defaults to 7 days. This deployment's TOKEN_MAX_LIFETIME (default 2,592,000 = 30 days; never above the maximum here) caps it: above it → 400 `Lifetime must be at most N seconds.`",
      z.number().int().positive().max(TOKEN_LIFETIME_CEILING_SECONDS),
    ).optional(),
    scopes: z.array(z.string().max(64)).min(1).max(100).optional(),
  }),
);

/** `DELETE /users/{user}/keys/sessions`: `except_current=true` keeps the calling session ("sign out other devices"). */
export const endSessionsQuery = z.strictObject({
  except_current: z
    .enum(["true", "false"])
    .default("false")
    .transform((v) => v === "true"),
});

const userParam = described("A user ID (UUID), a username (case-insensitive), or `me` (the caller).", z.string());

/** `{user}`, for the document: routes resolve it with `resolveUser`, which answers 404 for what the caller may not see. */
export const userPath = z.object({ user: userParam });

/** `{user}` and an API key `{id}`, for the document. */
export const userKeyPath = z.object({
  user: userParam,
  id: described("The API key id: the public 10-character half of the token.", z.string()),
});

const Role = named("Role", z.strictObject({ name: z.string(), display_name: z.string() }));

export const User = named(
  "User",
  z.strictObject({
    id: uuid,
    username: z.string(),
    name: z.string(),
    email: z.string(),
    avatar_url: z.string(),
    created_at: timestamp,
    updated_at: timestamp,
    last_seen_at: timestamp.nullable(),
    status: z.enum(["active", "suspended"]),
    login_type: z.enum(["password", "oidc", "github", "none"]),
    service_account: z.boolean(),
    is_service_account: described("The same as `service_account`, under the name Coder's clients read.", z.boolean()),
    organization_ids: z.array(uuid),
    roles: z.array(Role),
  }),
);

export const GetUsersResponse = named("GetUsersResponse", z.strictObject({ users: z.array(User), count }));

export const CreateFirstUserResponse = named("CreateFirstUserResponse", z.strictObject({ user_id: uuid, organization_id: uuid }));

export const APIKey = named(
  "APIKey",
  z.strictObject({
    id: described("The public 10-character half of the token.", z.string()),
    user_id: uuid,
    token_name: z.string(),
    login_type: z.enum(["password", "oidc", "github", "token"]),
    scopes: z.array(z.string()),
    lifetime_seconds: z.number().int(),
    expires_at: timestamp,
    created_at: timestamp,
    updated_at: timestamp,
    last_used: timestamp,
  }),
);

export const APISession = named(
  "APISession",
  APIKey.extend({
    current: described("Whether this is the session the request was made with.", z.boolean()),
    user_agent: described("The User-Agent of the request that started the session (cut to 512 characters), or null.", z.string().nullable()),
    device: described("What the User-Agent names, e.g. `Chrome 131 on macOS`; null when it names no browser.", z.string().nullable()),
    ip_prefix: described("The client address as its /24 (IPv4) or /48 (IPv6); null when the request carried none.", z.string().nullable()),
    location: described(
      "Where Cloudflare placed the address; null when it did not (local runs).",
      z.object({ country: z.string().describe("ISO 3166-1 alpha-2."), city: z.string().nullable() }).nullable(),
    ),
    methods: described("How the user proved it, in order of first use: `pwd`, `otp`, `passkey`, `oidc`, `github`.", z.array(z.string())),
  }),
);

export const GenerateAPIKeyResponse = named(
  "GenerateAPIKeyResponse",
  z.strictObject({ key: described("The whole token, `<id>-<secret>`; shown only once.", z.string()) }),
);
