import { z } from "zod";
import { ASSIGNABLE_SITE_ROLES } from "../authz/roles";

/** Coder's username rule: 1–32 of [a-zA-Z0-9-], no leading/trailing or double hyphen. */
export const username = z
  .string()
  .min(1)
  .max(32)
  .regex(/^[a-zA-Z0-9]+(?:-[a-zA-Z0-9]+)*$/, "must be alphanumeric with single hyphens between characters");

export const email = z.email().max(320);
/** Policy (length, common list, strength) is checked separately so its reason reads well; this bounds the input. */
export const password = z.string().max(1024);
const displayName = z.string().max(128);

export const createFirstUserBody = z.object({
  email,
  username,
  name: displayName.optional(),
  password: password.min(1),
});

export const createUserBody = z
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
  });

export const listUsersQuery = z.strictObject({
  q: z.string().max(256).optional(),
  status: z.enum(["active", "suspended"]).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(50),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
});

export const updateRolesBody = z.object({
  roles: z.array(z.enum(ASSIGNABLE_SITE_ROLES.concat() as [string, ...string[]])).max(10),
});

export const changePasswordBody = z.object({
  old_password: password.optional(),
  password: password.min(1),
});

export const createTokenBody = z.object({
  token_name: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[a-zA-Z0-9][a-zA-Z0-9 _.-]*$/, "must start with a letter or digit and use letters, digits, space, _ . -"),
  /** Seconds; defaults to 7 days, capped by TOKEN_MAX_LIFETIME. */
  lifetime: z.number().int().positive().optional(),
  scopes: z.array(z.string().max(64)).min(1).max(100).optional(),
});

/** `DELETE /users/{user}/keys/sessions`: `except_current=true` keeps the calling session ("sign out other devices"). */
export const endSessionsQuery = z.strictObject({
  except_current: z
    .enum(["true", "false"])
    .default("false")
    .transform((v) => v === "true"),
});
