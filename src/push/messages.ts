/**
 * The messages of the Web Push routes and deliveries. Clients compare these strings, so they are written once here
 * and imported by the code that throws or records them, the route descriptions that quote them and the tests;
 * docs/api.md (Conventions) describes the error shape they go in, docs/push.md the rules behind them.
 */
export const PushMessages = {
  /** Web Push needs the VAPID key pair (docs/push.md, "Keys"). */
  notConfigured: "Web Push is not configured on this deployment.",
  notConfiguredDetail: "The operator has not set VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY.",
  onlySelf: "Only the user themself can subscribe a browser.",
  tooMany: "Too many push subscriptions.",
  tooManyDetail: (cap: number) => `A user may hold at most ${cap} push subscriptions: remove one first.`,
  /** `validations` details for what a browser's subscription must be. */
  badP256dh: "must be the browser's P-256 public key: an uncompressed point of 65 bytes, unpadded base64url",
  badAuth: "must be the browser's 16-byte authentication secret, unpadded base64url",
  /** Message-log reasons of push copies (docs/push.md, "Delivery"). */
  deliveryNotConfigured: "Web Push is not configured (VAPID_PUBLIC_KEY, VAPID_PRIVATE_KEY)",
  subscriptionRemoved: "the push subscription was removed",
  subscriptionGone: (status: number) => `the push service answered ${status}: the subscription has expired or was revoked, so it was removed`,
} as const;
