import * as z from "zod";
import { ASSIGNABLE_SITE_ROLES } from "../authz/roles";
import { uuid } from "../http/ids";
import { timestamp } from "../http/schemas";
import { notificationContent, readAwareDelay } from "../notifications/schemas";
import { described, named } from "../openapi/registry";

/** The most user ids one broadcast may name (docs/broadcasts.md). */
const MAX_LISTED_RECIPIENTS = 1000;
const MAX_TARGETS = 20;

/** Site role names an audience may name; `member` is every user (docs/broadcasts.md). */
const AUDIENCE_ROLES = ["member", ...ASSIGNABLE_SITE_ROLES] as const;

/** Exactly one way of naming the audience (docs/broadcasts.md); two at once is refused rather than guessed at. */
const audience = described(
  "Who receives it: everyone, listed users, holders of site roles, or the members of an organization. Suspended, deleted and system users are never recipients (system users only when listed by id).",
  z.union([
    z.strictObject({ all: z.literal(true) }),
    z.strictObject({
      user_ids: z.array(uuid).min(1, "name at least one user").max(MAX_LISTED_RECIPIENTS, `at most ${MAX_LISTED_RECIPIENTS} user ids`),
    }),
    z.strictObject({ roles: z.array(z.enum(AUDIENCE_ROLES)).min(1, "name at least one role").max(AUDIENCE_ROLES.length) }),
    z.strictObject({ organization_id: uuid }),
  ]),
);

/** `POST /notifications/broadcasts` (docs/broadcasts.md). Unknown fields are ignored, as N1 ignores them; the audience alone is strict. */
export const createBroadcastBody = named(
  "CreateBroadcastRequest",
  z.object({
    audience,
    content: notificationContent,
    targets: z.array(uuid).max(MAX_TARGETS, `at most ${MAX_TARGETS} targets`).default([]),
    email_when_unread_after: readAwareDelay.default(0),
  }),
);
export type CreateBroadcast = z.output<typeof createBroadcastBody>;

/**
 * `Idempotency-Key`: the same key from the same caller within 24 hours answers the first broadcast's 202 again
 * (docs/broadcasts.md). Visible ASCII, as HTTP field values are; 255 characters is room for any UUID or hash a client uses.
 */
export const idempotencyHeader = z.object({
  "idempotency-key": described(
    "Makes the POST safe to retry: the same key from the same caller within 24 hours answers the first broadcast's 202 body again and sends nothing more.",
    z
      .string()
      .min(1, "must not be empty")
      .max(255, "at most 255 characters")
      .regex(/^[\x21-\x7e]+$/, "visible ASCII characters only"),
  ).optional(),
});

export const broadcastIdParam = z.strictObject({ id: uuid });

export const BroadcastCreated = named(
  "BroadcastCreated",
  z.strictObject({ id: z.uuid(), recipients: described("Recipients counted when the broadcast was accepted.", z.number().int().min(0)) }),
);

const count = z.number().int().min(0);

export const BroadcastProgress = named(
  "BroadcastProgress",
  z.strictObject({
    id: z.uuid(),
    created_by: z.uuid(),
    created_at: timestamp,
    recipients: described("Recipients: the count at creation, until the whole audience is resolved; then exact.", count),
    delivered: described("Recipients whose inbox copy is stored.", count),
    failed: described("Recipients whose inbox copy could not be stored after every retry.", count),
    pending: described("recipients − delivered − failed.", count),
    completed_at: timestamp.nullable(),
  }),
);

/** The list's page size (docs/broadcasts.md), as for the inbox list. */
const DEFAULT_PAGE_SIZE = 25;

/** `GET /notifications/broadcasts`: keyset-paged like the inbox list; unknown parameters are refused. */
export const listBroadcastsQuery = z.strictObject({
  starting_before: uuid.optional(),
  limit: z.coerce.number().int().min(1).max(100).default(DEFAULT_PAGE_SIZE),
});

const BroadcastSummary = named(
  "BroadcastSummary",
  BroadcastProgress.extend({ title: described('The content\'s title, as stored (trimmed); `""` when only a message was sent.', z.string()) }),
);

export const ListBroadcastsResponse = named(
  "ListBroadcastsResponse",
  z.strictObject({ broadcasts: described("Newest first (created_at, then id).", z.array(BroadcastSummary)) }),
);
