import * as z from "zod";
import { uuid } from "../http/ids";
import { timestamp } from "../http/schemas";
import { described, exemplified, named } from "../openapi/registry";
import { displayed } from "../text/display";
import { userPath } from "../users/schemas";
import { AUTH_SECRET_BYTES, fromBase64url, P256_POINT_BYTES } from "./encryption";
import { PushMessages } from "./messages";

/**
 * The Web Push routes' request and response schemas (docs/api.md, "Web Push"). A browser's subscription is taken as
 * `PushSubscription.toJSON()` writes it; what zod cannot check alone (that `p256dh` is a point on the curve, that the
 * endpoint is a push service's) is checked by src/push/subscriptions.ts.
 */

/** Unpadded base64url of exactly `bytes` bytes. */
const keyBytes = (bytes: number, message: string) =>
  z
    .string()
    .max(Math.ceil((bytes * 4) / 3))
    .refine((text) => fromBase64url(text)?.byteLength === bytes, message);

/** A subscription's name: displayed text, one line (docs/api.md, "Displayed text"). */
const subscriptionName = displayed(z.string().min(1).max(64), "name", "single");

export const addPushSubscriptionBody = named(
  "AddPushSubscriptionRequest",
  z.object({
    endpoint: described(
      'The push service\'s URL for this browser (`subscription.endpoint`): https on Google FCM, Mozilla, Apple or Windows (docs/targets.md, "Outbound safety").',
      exemplified(["https://fcm.googleapis.com/fcm/send/dPn1zPbm0B8:APA91bE"], z.string().min(1).max(2048)),
    ),
    keys: z.object({
      p256dh: described(
        "The browser's P-256 public key, an uncompressed point (65 bytes), unpadded base64url.",
        exemplified(
          ["BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"],
          keyBytes(P256_POINT_BYTES, PushMessages.badP256dh),
        ),
      ),
      auth: described(
        "The browser's authentication secret (16 bytes), unpadded base64url.",
        exemplified(["BTBZMqHH6r4Tts7J_aSIgg"], keyBytes(AUTH_SECRET_BYTES, PushMessages.badAuth)),
      ),
    }),
    name: described(
      "Shown in the user's list; by default the browser and system the request came from (`Chrome 131 on macOS`).",
      subscriptionName,
    ).optional(),
  }),
  "A browser's push subscription as `PushSubscription.toJSON()` writes it, and a name. Other fields (`expirationTime`) are ignored.",
);

export type AddPushSubscriptionBody = z.infer<typeof addPushSubscriptionBody>;

export const PushSubscription = named(
  "PushSubscription",
  z.strictObject({
    id: uuid,
    name: z.string(),
    endpoint_origin: described("The push service's origin; the endpoint itself is a capability and is never shown.", z.string()),
    created_at: timestamp,
  }),
);

export const PushPublicKey = named(
  "PushPublicKey",
  z.strictObject({
    public_key: described("VAPID_PUBLIC_KEY: give it to `pushManager.subscribe()` as `applicationServerKey`.", z.string()),
  }),
);

/** `{user}` and a subscription `{id}`, for the document. */
export const userSubscriptionPath = userPath.extend({ id: described("The push subscription's id (a UUID).", z.string()) });
