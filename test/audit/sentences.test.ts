/**
 * docs/security.md, "The audit log": every action Herald writes reads as its own sentence, made from the action, the
 * resource and the diff; an action without one reads plainly rather than not at all.
 */
import { describe, expect, it } from "vitest";
import { type DescribedEntry, describeEntry } from "../../src/audit/sentences";

const ALICE = "11111111-1111-4111-8111-111111111111";
const BOB = "22222222-2222-4222-8222-222222222222";
const entry = (action: string, resourceType: string, more: Partial<DescribedEntry> = {}): DescribedEntry => ({
  action,
  resourceType,
  resourceId: BOB,
  diff: {},
  userId: ALICE,
  actor: "alice",
  target: resourceType === "user" ? "bob" : null,
  ...more,
});

describe('docs/security.md, "The audit log": description', () => {
  const cases: [DescribedEntry, string][] = [
    [entry("login", "api_key", { resourceId: "abcdefghij" }), "alice signed in with a password"],
    [
      entry("login", "api_key", { diff: { login_type: "password", second_factor: "totp" } }),
      "alice signed in with a password and an authenticator app",
    ],
    [entry("login", "api_key", { diff: { method: "passkey", passkey: "p" } }), "alice signed in with a passkey"],
    [entry("login", "api_key", { diff: { login_type: "github" } }), "alice signed in with GitHub"],
    [entry("logout", "api_key"), "alice signed out"],
    [entry("step_up", "api_key", { diff: { method: "recovery_code" } }), "alice confirmed it was them with a recovery code"],
    [entry("create", "api_key", { diff: { token_name: "ci", scopes: ["all"] } }), 'alice created API token "ci"'],
    [entry("delete", "api_key", { resourceId: "abcdefghij" }), "alice deleted API token abcdefghij"],
    [entry("create_first_user", "user", { resourceId: ALICE, target: "alice" }), "alice set up Herald as its first owner"],
    [entry("signup", "user", { resourceId: ALICE, diff: { login_type: "oidc" } }), "alice signed up with OpenID Connect"],
    [entry("create", "user", { diff: { username: "bob" } }), 'alice created user "bob"'],
    [entry("delete", "user", { diff: { username: "bob" } }), 'alice deleted user "bob"'],
    // Since erasure the entry names no one (docs/privacy.md, "Erasure"): the account's row answers for it.
    [entry("delete", "user", { target: `deleted-${BOB}` }), `alice deleted user "deleted-${BOB}"`],
    [entry("export", "user"), "alice exported bob's data"],
    [entry("export", "user", { resourceId: ALICE, target: "alice" }), "alice exported their data"],
    [entry("update_roles", "user", { diff: { roles: { old: [], new: ["auditor"] } } }), "alice changed bob's site roles to auditor"],
    [entry("suspend", "user"), "alice suspended bob"],
    [entry("activate", "user"), "alice activated bob"],
    [entry("change_password", "user"), "alice changed bob's password"],
    [entry("change_password", "user", { resourceId: ALICE, target: "alice" }), "alice changed their password"],
    [entry("reset_password", "user", { resourceId: ALICE }), "alice reset their password with a one-time passcode"],
    [entry("end_sessions", "user", { resourceId: ALICE, diff: { except_current: true } }), "alice ended their sessions except the current one"],
    [entry("start_convert_login", "user", { resourceId: ALICE, diff: { to_type: "github" } }), "alice started changing their sign-in to GitHub"],
    [
      entry("convert_login", "user", { resourceId: ALICE, diff: { login_type: { old: "password", new: "oidc" } } }),
      "alice changed their sign-in to OpenID Connect",
    ],
    [entry("login_second_factor_asked", "user", { resourceId: ALICE }), "alice gave the right password and was asked for a second factor"],
    [entry("login_second_factor_failed", "user", { resourceId: ALICE, userId: null, actor: null }), "Someone failed the second factor of a sign-in"],
    [
      entry("report_not_me", "user", { resourceId: ALICE, diff: { event: "new_device", revoked_sessions: 2, revoked_tokens: 1 } }),
      "alice reported that a change to their account was not them; 2 sessions and 1 API token ended",
    ],
    [entry("begin_totp", "user", { resourceId: ALICE }), "alice began adding an authenticator app"],
    [entry("enable_totp", "user", { resourceId: ALICE }), "alice turned on an authenticator app"],
    [entry("disable_totp", "user"), "alice removed bob's authenticator app"],
    [entry("regenerate_recovery_codes", "user", { resourceId: ALICE }), "alice made new recovery codes for themself"],
    [entry("reset_mfa", "user"), "alice removed bob's second factors"],
    [entry("create", "passkey", { diff: { name: "Yubi" } }), 'alice added passkey "Yubi"'],
    [entry("delete", "passkey", { diff: { name: "Yubi" } }), 'alice removed passkey "Yubi"'],
    [entry("suspect", "passkey"), "A passkey of alice was refused and set aside: its signature counter went backwards"],
    [entry("create", "push_subscription", { diff: { name: "Chrome 131 on Linux" } }), 'alice turned on push notifications in "Chrome 131 on Linux"'],
    [entry("update", "push_subscription", { diff: { name: "Laptop" } }), 'alice renewed the push subscription of "Laptop"'],
    [entry("delete", "push_subscription", { diff: { name: "Laptop" } }), 'alice turned off push notifications in "Laptop"'],
    [
      entry("expire", "push_subscription", { diff: { name: "Laptop" }, userId: null, actor: null }),
      'The push service ended the subscription of "Laptop", so Herald removed it',
    ],
    [
      entry("update", "deployment_config", { resourceId: "notifier_paused", diff: { notifier_paused: { old: false, new: true } } }),
      "alice paused notification delivery",
    ],
    [entry("update", "notification_template", { resourceId: "t1" }), "alice changed notification template t1"],
    [entry("update", "notification_preference", { resourceId: ALICE }), "alice changed their notification preferences"],
    [entry("update", "notification_schedule", { resourceId: ALICE }), "alice changed their quiet hours and digest"],
    [entry("create", "notification_broadcast", { diff: { recipients: 3 } }), "alice sent a broadcast to 3 people"],
    [entry("create", "notification_target", { diff: { kind: "slack", name: "Ops" } }), 'alice added a Slack channel "Ops"'],
    [entry("verify", "notification_target", { diff: { kind: "slack", name: "Ops" } }), 'alice verified notification target "Ops"'],
    [entry("verify_failed", "notification_target", { diff: { name: "Ops" } }), 'alice entered an incorrect code for notification target "Ops"'],
    [entry("delete", "notification_target", { diff: { name: "Ops" } }), 'alice removed notification target "Ops"'],
    [
      entry("delete", "notification_target", { diff: { name: "Ops", reason: "too many incorrect codes" } }),
      'Notification target "Ops" of alice was removed after too many incorrect codes',
    ],
    [entry("frobnicate", "widget", { resourceId: "w1", userId: crypto.randomUUID(), actor: null }), "An unknown user did frobnicate on widget w1"],
  ];
  it.each(cases.map(([given, expected]) => [expected, given] as const))("%s", (expected, given) => {
    expect(describeEntry(given)).toBe(expected);
  });
});
