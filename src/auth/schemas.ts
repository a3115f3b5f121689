import * as z from "zod";
import { described, named } from "../openapi/registry";

/** Sign-in's request and response schemas: password sign-in, validate-password, the sign-in methods (docs/api.md). */

export const loginBody = named("LoginWithPasswordRequest", z.object({ email: z.email().max(320), password: z.string().max(1024) }));
export const validatePasswordBody = named("ValidateUserPasswordRequest", z.object({ password: z.string().max(4096) }));

export const AuthMethods = named(
  "AuthMethods",
  z.strictObject({
    terms_of_service_url: z.string().optional(),
    password: z.strictObject({
      enabled: z.boolean(),
      reset_passcode_deliverable: described(
        "Herald's own: whether a password-reset passcode can be sent at all (the default dispatch method is configured). The same for every address.",
        z.boolean(),
      ),
    }),
    github: z.strictObject({
      enabled: z.boolean(),
      default_provider_configured: described("Always false: Herald has no built-in GitHub app.", z.boolean()),
    }),
    oidc: z.strictObject({
      enabled: z.boolean(),
      signInText: described("OIDC_SIGN_IN_TEXT.", z.string()),
      iconUrl: described("OIDC_ICON_URL.", z.string()),
    }),
  }),
  "Which sign-in methods the server offers (Coder's shape), for a sign-in page to show the right buttons.",
);

export const LoginWithPasswordResponse = named("LoginWithPasswordResponse", z.strictObject({ session_token: z.string() }));

export const ValidateUserPasswordResponse = named(
  "ValidateUserPasswordResponse",
  z.strictObject({ valid: z.boolean(), details: described('"" when valid, else a readable reason.', z.string()) }),
);
