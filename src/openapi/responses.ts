import { z } from "zod";
import type { PolicyResult } from "../auth/passwords/policy";
import { DISPATCH_METHODS, MESSAGE_STATUSES } from "../db/schema";
import type { InboxNotification as InboxNotificationType } from "../inbox/model";
import type { InboxCounts } from "../inbox/user-inbox";
import type { toTemplateResponse } from "../notifications/routes";
import type { UserResponse } from "../users/service";
import { described, named } from "./registry";

/**
 * Response bodies. Responses are not validated at runtime, so these zod schemas are written for the document; each
 * one mirrors the code that builds the body, and where the code exports that body's type the compile-time checks at
 * the end of this file keep the two in step (same keys, and the code's values fit the documented ones).
 */

export const timestamp = described("RFC 3339 UTC timestamp with milliseconds.", z.iso.datetime());
const uuid = z.uuid();
const count = z.number().int().min(0);

const ValidationError = named(
  "ValidationError",
  z.strictObject({ field: described("JSON path of the bad field, e.g. `content.title`.", z.string()), detail: z.string() }),
);

/** docs/api.md (Conventions): every error body, and a few success replies. */
export const ResponseBody = named(
  "Response",
  z.strictObject({
    message: z.string(),
    detail: z.string().optional(),
    validations: z.array(ValidationError).optional(),
  }),
  "Generic message body: every non-2xx body with content has this shape; `detail` and `validations` are omitted when empty.",
);

export const ExternalAPIKeyScopes = named(
  "ExternalAPIKeyScopes",
  z.strictObject({ external: z.array(z.string()) }),
  "The sorted catalog of scopes an API key may carry; always contains `all`.",
);

export const AuthMethods = named(
  "AuthMethods",
  z.strictObject({
    terms_of_service_url: z.string().optional(),
    password: z.strictObject({ enabled: z.boolean() }),
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

export const AuthorizationResponse = named(
  "AuthorizationResponse",
  z.record(z.string(), z.boolean()),
  "Each key of the request's `checks`, mapped to whether that check is allowed.",
);

export const LoginWithPasswordResponse = named("LoginWithPasswordResponse", z.strictObject({ session_token: z.string() }));

export const ValidateUserPasswordResponse = named(
  "ValidateUserPasswordResponse",
  z.strictObject({ valid: z.boolean(), details: described('"" when valid, else a readable reason.', z.string()) }),
);

export const OAuthConversionResponse = named(
  "OAuthConversionResponse",
  z.strictObject({
    expires_at: timestamp,
    state_string: z.string(),
    to_type: z.enum(["oidc", "github"]),
    user_id: uuid,
  }),
);

export const NotificationMethodsResponse = named(
  "NotificationMethodsResponse",
  z.strictObject({ available: z.array(z.string()), default: z.enum(["smtp", "webhook"]) }),
);

const InboxNotification = named(
  "InboxNotification",
  z.strictObject({
    id: uuid,
    user_id: uuid,
    template_id: uuid,
    targets: z.array(uuid),
    title: z.string(),
    content: z.string(),
    icon: z.string(),
    actions: z.array(z.strictObject({ label: z.string(), url: z.string() })),
    read_at: timestamp.nullable(),
    created_at: timestamp,
    archived_at: described("When it was archived; archived notifications are read.", timestamp.nullable()),
    snoozed_until: described(
      "While set, the notification is snoozed until then (not unread, left out of the list by default).",
      timestamp.nullable(),
    ),
  }),
);

const seq = described("The inbox's sequence number: of the last change (lists and counts) or of this change (frames).", count);

export const ListInboxNotificationsResponse = named(
  "ListInboxNotificationsResponse",
  z.strictObject({
    notifications: z.array(InboxNotification),
    unread_count: described("The caller's total unread count, ignoring filters.", count),
    seq,
  }),
);

const InboxNotificationFrame = named(
  "InboxNotificationFrame",
  z.strictObject({ seq, notification: InboxNotification, unread_count: count }),
  "Watch frame: a newly delivered (or woken) notification that matches the filters, and the unread count after it.",
);

const InboxChangeFrame = named(
  "InboxChangeFrame",
  z.strictObject({
    seq,
    change: z.union([
      z.strictObject({
        ids: z.array(uuid),
        read_at: timestamp.nullable().optional(),
        archived_at: timestamp.nullable().optional(),
        snoozed_until: timestamp.nullable().optional(),
      }),
      z.strictObject({ all: z.literal(true), read_at: timestamp }),
    ]),
    unread_count: count,
  }),
  "Watch frame sent only with `sync=true`: a change to existing notifications, whatever the filters. The fields present are those that changed, with their new values; `all: true` is mark-all-as-read (every notification that was unread).",
);

export const InboxWatchFrame = named(
  "InboxWatchFrame",
  z.union([InboxNotificationFrame, InboxChangeFrame]),
  "One text frame of the inbox watch, after the upgrade: a notification, or (with `sync=true`) a change. Frames arrive in `seq` order.",
);

export const UpdateInboxNotificationReadStatusResponse = named(
  "UpdateInboxNotificationReadStatusResponse",
  z.strictObject({ message: z.string(), notification: InboxNotification, unread_count: count }),
  "Satisfies both the interface's Response shape and the richer client shape.",
);

export const InboxCountsResponse = named(
  "InboxCountsResponse",
  z.strictObject({
    unread: described("Neither read nor snoozed.", count),
    archived: count,
    snoozed: count,
    total: count,
    by_template: z.array(z.strictObject({ template_id: uuid, unread: count, total: count })),
    seq,
  }),
);

export const BulkInboxActionResponse = named(
  "BulkInboxActionResponse",
  z.strictObject({ updated: described("Notifications the action changed.", count), unread_count: count }),
);

export const NotificationTemplate = named(
  "NotificationTemplate",
  z.strictObject({
    id: uuid,
    name: z.string(),
    title_template: z.string(),
    body_template: z.string(),
    actions: described("A JSON array of `{label, url}` templates, as a string.", z.string()),
    group: z.string(),
    method: described('"" when the template uses the deployment default.', z.enum(["", "smtp", "webhook"])),
    kind: z.enum(["system", "custom"]),
    enabled_by_default: z.boolean(),
  }),
);

export const NotificationPreference = named(
  "NotificationPreference",
  z.strictObject({ id: described("A template id.", uuid), disabled: z.boolean(), updated_at: timestamp }),
);

const NotificationMessage = named(
  "NotificationMessage",
  z.strictObject({
    id: uuid,
    notification_id: uuid,
    template_id: uuid,
    user_id: uuid,
    method: z.enum(DISPATCH_METHODS),
    status: z.enum(MESSAGE_STATUSES),
    status_reason: z.string(),
    attempts: count,
    created_by: z.string(),
    created_at: timestamp,
    updated_at: timestamp,
    sent_at: timestamp.nullable(),
    next_retry_after: timestamp.nullable(),
    targets: z.array(uuid),
  }),
);

export const ListNotificationMessagesResponse = named(
  "ListNotificationMessagesResponse",
  z.strictObject({ messages: z.array(NotificationMessage), count }),
);

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
  APIKey.extend({ current: described("Whether this is the session the request was made with.", z.boolean()) }),
);

export const GenerateAPIKeyResponse = named(
  "GenerateAPIKeyResponse",
  z.strictObject({ key: described("The whole token, `<id>-<secret>`; shown only once.", z.string()) }),
);

/** `GET /api/v2/openapi.json` itself: only the top-level fields are described. */
export const OpenApiDocumentSchema = z.looseObject({
  openapi: z.string(),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.unknown()),
});

// Compile-time faithfulness: where the code exports a response type, the documented schema has the same keys and
// every value the code can produce fits the documented type.
type SameKeys<A, B> = [Exclude<keyof A, keyof B>, Exclude<keyof B, keyof A>] extends [never, never] ? true : false;
type Fits<Code, Doc> = [Code] extends [Doc] ? (SameKeys<Code, Doc> extends true ? true : false) : false;
/** @public A compile-time check: it fails to type-check when a documented schema drifts from the code. */
export type ResponseChecks = [
  Fits<UserResponse, z.output<typeof User>>,
  Fits<InboxNotificationType, z.output<typeof InboxNotification>>,
  Fits<InboxCounts, z.output<typeof InboxCountsResponse>>,
  Fits<ReturnType<typeof toTemplateResponse>, z.output<typeof NotificationTemplate>>,
  Fits<PolicyResult, z.output<typeof ValidateUserPasswordResponse>>,
];
/** @public */
export const responseChecks: ResponseChecks = [true, true, true, true, true];
