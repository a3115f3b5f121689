import { Hono } from "hono";
import { requireAuth } from "../auth/session";
import { dbFor } from "../db/session";
import { validationFailed } from "../http/errors";
import type { AppEnv } from "../http/types";
import { jsonBody, toValidations } from "../http/validate";
import { describeRoute } from "../openapi/describe";
import { EXTERNAL_SCOPES, isAction, isResourceType } from "./catalog";
import { type AuthzObject, authorize } from "./evaluate";
import { loadPlacements } from "./resources";
import { AuthorizationResponse, authorizationCheck, authorizationRequest, ExternalAPIKeyScopes } from "./schemas";

/** The scope catalogue (public) and authorization checks (docs/api.md, Authorization checks). */
export const authzRoutes = new Hono<AppEnv>()
  .get(
    "/auth/scopes",
    describeRoute({
      operationId: "listApiKeyScopes",
      summary: "List the scopes an API key can have",
      tags: ["Authorization"],
      responses: [{ status: 200, description: "The scope catalog.", schema: ExternalAPIKeyScopes }],
    }),
    (c) => c.json({ external: [...EXTERNAL_SCOPES] }, 200),
  )
  .post(
    "/authcheck",
    describeRoute({
      operationId: "checkAuthorization",
      summary: "Check whether the caller may perform actions on objects",
      description:
        'Every check is evaluated for the caller. `owner_id: "me"` means the caller; `resource_id` on a stored type uses the real object\'s owner and organization (not found → `false`). Unknown actions or types are `false`, not errors. At most 100 checks.',
      tags: ["Authorization"],
      access: "anyone",
      scope: "none",
      responses: [{ status: 200, description: "One boolean per check key.", schema: AuthorizationResponse }],
      errors: { 400: "More than 100 checks, or a check without `action` / `object.resource_type`." },
    }),
    requireAuth,
    jsonBody(authorizationRequest),
    async (c) => {
      c.req.valid("json");
      const { subject } = c.get("auth");
      // Keys are the caller's free-form labels. zod rebuilds records by assignment, which turns a "__proto__" key into
      // a prototype; the raw JSON keeps it as an ordinary key, so checks are taken from there (each one validated).
      const raw = (await c.req.json()) as { checks: Record<string, unknown> };
      const entries = Object.entries(raw.checks).map(([key, value]) => {
        const parsed = authorizationCheck.safeParse(value);
        if (!parsed.success) throw validationFailed(toValidations(parsed.error).map((v) => ({ ...v, field: `checks.${key}.${v.field}` })));
        return [key, parsed.data] as const;
      });

      const lookups = entries.flatMap(([, check]) => {
        const { resource_type: type, resource_id: id } = check.object;
        return id !== undefined && isResourceType(type) ? [{ type, id }] : [];
      });
      const placements = lookups.length > 0 ? await loadPlacements({ db: dbFor(c, "read"), env: c.env, callerId: subject.id }, lookups) : new Map();

      const result = new Map<string, boolean>();
      for (const [key, { action, object }] of entries) {
        const type = object.resource_type;
        // Unknown actions and types are simply not allowed (docs/api.md, Authorization checks), never an error.
        if (!isAction(action) || (type !== "*" && !isResourceType(type))) {
          result.set(key, false);
          continue;
        }
        const target: AuthzObject = {
          type,
          ownerId: object.owner_id === "me" ? subject.id : object.owner_id,
          orgId: object.organization_id,
          anyOrg: object.any_org,
        };
        if (object.resource_id !== undefined && type !== "*") {
          const placement = placements.get(`${type}:${object.resource_id}`);
          if (!placement) {
            result.set(key, false); // the object does not exist (or is not stored here)
            continue;
          }
          target.ownerId = placement.ownerId ?? target.ownerId;
          target.orgId = placement.orgId ?? target.orgId;
        }
        result.set(key, authorize(subject, action, target));
      }
      return c.json(Object.fromEntries(result), 200);
    },
  );
