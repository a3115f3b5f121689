import * as z from "zod";
import { uuid } from "../http/ids";
import { timestamp } from "../http/schemas";
import { described, named } from "../openapi/registry";

/** External sign-in's schemas: login conversion and the provider callbacks' query (docs/api.md, "External sign-in"). */

export const convertLoginBody = named("ConvertLoginRequest", z.object({ password: z.string().max(1024), to_type: z.string().max(64) }));

/** The callbacks read their query by hand (they are browser redirects, never validated as a whole): documentation only. */
export const callbackQuery = z.object({
  code: described("Authorization code from the provider; with it (or `error`) the callback finishes the flow.", z.string()).optional(),
  state: described("The state the flow started with.", z.string()).optional(),
  error: described("Error code from the provider.", z.string()).optional(),
  error_description: described("Error text from the provider.", z.string()).optional(),
  redirect: described("Same-origin path to land on after sign-in (anything else becomes `/`).", z.string()).optional(),
  oidc_merge_state: described("`state_string` of a convert-login: finishing the flow converts that user's login type.", z.string()).optional(),
});

export const OAuthConversionResponse = named(
  "OAuthConversionResponse",
  z.strictObject({
    expires_at: timestamp,
    state_string: z.string(),
    to_type: z.enum(["oidc", "github"]),
    user_id: uuid,
  }),
);
