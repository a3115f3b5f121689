import { Hono } from "hono";
import * as z from "zod";
import { limitPerIp } from "../auth/rate-limit";
import { dbFor } from "../db/session";
import { badRequest } from "../http/errors";
import type { AppEnv } from "../http/types";
import { jsonBody } from "../http/validate";
import { describeRoute, errors, RATE } from "../openapi/describe";
import { named } from "../openapi/registry";
import { SecurityMessages } from "./messages";
import { reportNotMe } from "./not-me";
import { openNotMeToken } from "./not-me-token";

const notMeBody = named(
  "NotMeRequest",
  z.object({
    /** The token from the fragment of a notice's "This wasn't me" link. */
    token: z.string().min(1).max(2048),
  }),
);

const NotMeResponse = named(
  "NotMeResponse",
  z.object({
    revoked_sessions: z.number().int().describe("Login sessions ended."),
    revoked_tokens: z.number().int().describe("API tokens ended."),
  }),
);

/** "This wasn't me" (docs/security.md): the link in every security notice, answered without signing anyone in. */
export const securityRoutes = new Hono<AppEnv>().post(
  "/users/not-me",
  describeRoute({
    operationId: "reportNotMe",
    summary: "Report that a security notice's event was not you",
    description:
      "No authentication: the token from the notice's link proves the account. Every session and API token of the user ends (watch sockets close with 4401), password sign-in answers 401 `Your password must be reset.` until a passcode reset completes, a passcode e-mail is sent, and the owners are told. Each link works once, for 7 days, and never signs anyone in.",
    tags: ["Sign-in"],
    responses: [{ status: 200, description: "What was ended.", schema: NotMeResponse }],
    errors: errors({ 400: `\`${SecurityMessages.badNotMeLink}\`: a forged, expired or used link, or an account that is gone.` }, RATE),
  }),
  jsonBody(notMeBody),
  async (c) => {
    const { token } = c.req.valid("json");
    await limitPerIp(c, "not-me");
    const refused = () => badRequest(SecurityMessages.badNotMeLink, { detail: SecurityMessages.badNotMeLinkDetail, event: "authentication_failed" });
    const opened = await openNotMeToken(c.get("config").SECRET_KEY, token);
    if (!opened.ok) throw refused();
    const outcome = await reportNotMe(c, dbFor(c, "write"), opened.value);
    if (!outcome) throw refused();
    return c.json(outcome, 200);
  },
);
