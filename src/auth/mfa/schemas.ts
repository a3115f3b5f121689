import * as z from "zod";
import { count } from "../../http/schemas";
import { described, named } from "../../openapi/registry";
import { AuthenticationResponse } from "../../passkeys/schemas";
import { MfaMessages } from "./messages";

/** The second factor's request and response schemas (docs/api.md, "Second factor and step-up"; docs/second-factor.md). */

/** A one-time code as typed: 6 digits from the app, or a recovery code (spaces and hyphens allowed). */
const code = described("A 6-digit code from the authenticator app, or a recovery code.", z.string().min(1).max(64));

const SecondFactorMethod = z.enum(["totp", "passkey", "recovery_code"]);

export const LoginMfaRequiredResponse = named(
  "LoginMfaRequiredResponse",
  z.strictObject({
    mfa_required: z.literal(true),
    mfa_token: described("Hand it to `POST /users/login/mfa` with a code: it lives 5 minutes, works once, and dies after 5 wrong codes.", z.string()),
    methods: described("The methods this user may use at the second step.", z.array(SecondFactorMethod)),
  }),
  "The password was right and the user has a second factor: no session yet.",
);

/** A passkey's answer (`AuthenticationResponseJSON`) to the options of the matching `passkey-options` endpoint. */
const passkeyAnswer = AuthenticationResponse;

/** Exactly one of the named fields is present: the superRefine of the schemas below. */
function exactlyOne<T extends Record<string, unknown>>(fields: readonly (keyof T & string)[]) {
  return (body: T, ctx: z.RefinementCtx) => {
    const given = fields.filter((field) => body[field] !== undefined);
    if (given.length !== 1) ctx.addIssue({ code: "custom", path: [given[1] ?? fields[0] ?? ""], message: MfaMessages.giveOne });
  };
}

/** The same rule as JSON Schema, for the OpenAPI document. */
function exactlyOneSchema(fields: readonly string[]) {
  return {
    anyOf: fields.map((field) => ({
      required: [field],
      properties: Object.fromEntries(fields.filter((other) => other !== field).map((other) => [other, false])),
    })),
  };
}

const MFA_PROOFS = ["code", "passkey"] as const;

export const loginMfaBody = named(
  "LoginWithSecondFactorRequest",
  z.object({ mfa_token: z.string().min(1).max(128), code: code.optional(), passkey: passkeyAnswer.optional() }).superRefine(exactlyOne(MFA_PROOFS)),
  "The `mfa_token` and exactly one of `code` (authenticator app or recovery code) or `passkey`.",
  exactlyOneSchema(MFA_PROOFS),
);

export const LoginWithSecondFactorResponse = named(
  "LoginWithSecondFactorResponse",
  z.strictObject({
    session_token: z.string(),
    redirect: described(
      "Only after an OpenID Connect or GitHub sign-in: where that flow was to end (a Herald path or a URL on an allowed origin), for the page to go on to.",
      z.string().optional(),
    ),
  }),
);

export const mfaPasskeyOptionsBody = named("SecondFactorPasskeyOptionsRequest", z.object({ mfa_token: z.string().min(1).max(128) }));

export const TotpEnrolment = named(
  "TotpEnrolment",
  z.strictObject({
    secret: described("The shared secret in base32, for typing into an app by hand. Shown only here.", z.string()),
    otpauth_url: described("`otpauth://totp/<issuer>:<email>?issuer=<issuer>&secret=…` for a QR code; the issuer is ACCESS_URL's host.", z.string()),
  }),
);

export const confirmTotpBody = named("ConfirmTotpRequest", z.object({ code }));

export const RecoveryCodesResponse = named(
  "RecoveryCodesResponse",
  z.strictObject({ recovery_codes: described("Ten codes, each usable once; shown only here.", z.array(z.string())) }),
);

export const MfaStatus = named(
  "MfaStatus",
  z.strictObject({
    totp: described("An authenticator app is set up (and confirmed).", z.boolean()),
    passkeys: described("Passkeys registered.", count),
    recovery_codes_left: described("Unused recovery codes; 0 without a second factor.", count),
    required: described("MFA_REQUIRED_ROLES names one of the user's site roles: without a factor, most endpoints refuse them.", z.boolean()),
  }),
);

const STEP_UP_PROOFS = ["password", "code", "passkey"] as const;

export const stepUpBody = named(
  "StepUpRequest",
  z
    .object({
      password: described("The account's password: only for a user without a second factor.", z.string().max(1024).optional()),
      code: code.optional(),
      passkey: passkeyAnswer.optional(),
    })
    .superRefine(exactlyOne(STEP_UP_PROOFS)),
  "Exactly one of `password` (a user without a second factor), or `code` or `passkey` (a user with one).",
  exactlyOneSchema(STEP_UP_PROOFS),
);
