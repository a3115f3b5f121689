import * as z from "zod";
import { canonicalId } from "../http/ids";
import { named } from "../openapi/registry";

/** The authorization check's request and response, and the scope catalogue (docs/api.md, "Authorization checks"). */

const MAX_CHECKS = 100;

const authorizationObject = named(
  "AuthorizationObject",
  z.object({
    resource_type: z.string().min(1).max(64),
    owner_id: z.string().max(64).transform(canonicalId).optional(),
    organization_id: z.string().max(64).transform(canonicalId).optional(),
    resource_id: z.string().max(64).transform(canonicalId).optional(),
    any_org: z.boolean().optional(),
  }),
);

export const authorizationCheck = named("AuthorizationCheck", z.object({ action: z.string().min(1).max(64), object: authorizationObject }));

export const authorizationRequest = named(
  "AuthorizationRequest",
  z.object({
    checks: z
      .record(z.string().max(256), authorizationCheck)
      .refine((checks) => Object.keys(checks).length <= MAX_CHECKS, `At most ${MAX_CHECKS} checks per request.`),
  }),
);

export const ExternalAPIKeyScopes = named(
  "ExternalAPIKeyScopes",
  z.strictObject({ external: z.array(z.string()) }),
  "The sorted catalog of scopes an API key may carry; always contains `all`.",
);

export const AuthorizationResponse = named(
  "AuthorizationResponse",
  z.record(z.string(), z.boolean()),
  "Each key of the request's `checks`, mapped to whether that check is allowed.",
);
