import { eq } from "drizzle-orm";
import type { Config } from "../config/config";
import type { Database } from "../db/client";
import { notificationTemplates } from "../db/schema";
import { githubProvider } from "../external/github";
import { oidcProvider } from "../external/oidc";
import { passcodeDeliverable } from "../notifications/configured";
import { TEMPLATE_IDS } from "../notifications/templates";

/** The method an owner set for the passcode template, "" for the deployment's default. */
export async function passcodeTemplateMethod(db: Database): Promise<"" | "smtp" | "webhook"> {
  const [row] = await db
    .select({ method: notificationTemplates.method })
    .from(notificationTemplates)
    .where(eq(notificationTemplates.id, TEMPLATE_IDS.oneTimePasscode));
  return row?.method ?? "";
}

/** Which sign-in methods this server offers, in Coder's `AuthMethods` shape (GET /users/authmethods; docs/api.md, Endpoints). */
export interface AuthMethods {
  terms_of_service_url?: string;
  /** `reset_passcode_deliverable` is Herald's own (docs/api.md, "Password reset by one-time passcode"). */
  password: { enabled: boolean; reset_passcode_deliverable: boolean };
  /** `default_provider_configured` is Coder's built-in GitHub app; Herald has none. */
  github: { enabled: boolean; default_provider_configured: boolean };
  oidc: { enabled: boolean; signInText: string; iconUrl: string };
}

export function authMethods(config: Config, passcodeMethod: "" | "smtp" | "webhook" = ""): AuthMethods {
  return {
    password: { enabled: !config.PASSWORD_AUTH_DISABLED, reset_passcode_deliverable: passcodeDeliverable(config, passcodeMethod) },
    github: { enabled: githubProvider.configured(config), default_provider_configured: false },
    oidc: { enabled: oidcProvider.configured(config), signInText: config.OIDC_SIGN_IN_TEXT ?? "", iconUrl: config.OIDC_ICON_URL ?? "" },
  };
}
