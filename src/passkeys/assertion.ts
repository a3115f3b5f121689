import { encodeBase64urlNoPadding } from "@oslojs/encoding";
import { and, eq, isNull, lt } from "drizzle-orm";
import type { Context } from "hono";
import type * as z from "zod";
import { auditInsert } from "../audit/log";
import { type PasskeyRow, passkeys } from "../db/schema";
import { dbFor } from "../db/session";
import type { AppEnv } from "../http/types";
import { nowIso } from "../lib/crypto";
import { CHALLENGE_TTL_MS, challengeIsLive, newChallenge, presentedChallenge, spendChallenge } from "./challenges";
import { userHandleOf } from "./registration";
import type { AuthenticationResponseBody, PublicKeyCredentialRequestOptions } from "./schemas";
import { CeremonyRefused, verifyAssertion } from "./webauthn";

/**
 * Using a passkey (docs/passkeys.md): request options and the verification of an assertion, for every ceremony
 * that asks for one. Passwordless sign-in uses them with purpose `login` and no user; a second factor at sign-in
 * (`mfa`) and step-up (`step-up`) with the user who must prove it is them.
 */

/**
 * Who must answer: anyone with a discoverable passkey for this site (`login`), or one user with one of their own
 * passkeys (`mfa`, `step-up`).
 */
export type AssertionFor = { purpose: "login" } | { purpose: "mfa" | "step-up"; userId: string };

/**
 * Why an assertion was refused. Callers answer every reason the same way where the answer must not tell which (the
 * 401 of passwordless sign-in); the reasons are for their logic and the tests.
 * - `no-passkey`: the user has no passkey that may be used (only from `passkeyRequestOptions`);
 * - `challenge`: the challenge is unknown, used, expired, or was issued for another purpose or user;
 * - `unknown-credential`: no passkey has this credential id (for `mfa` and `step-up`: none of the user's);
 * - `not-verified`: the signature, origin, RP id hash, user presence or verification, or user handle is wrong;
 * - `suspect`: the passkey was marked suspect before;
 * - `counter`: its signature counter did not move forward, so it is marked suspect now.
 */
export type RefusalReason = "no-passkey" | "challenge" | "unknown-credential" | "not-verified" | "suspect" | "counter";

export class PasskeyRefused extends Error {
  override name = "PasskeyRefused";
  constructor(readonly reason: RefusalReason) {
    super(`passkey refused: ${reason}`);
  }
}

/** User verification: required where the passkey is the only factor; preferred where it is the second one. */
const needsUserVerification = (target: AssertionFor) => target.purpose === "login";

/**
 * Request options for `target`, with a fresh challenge bound to its purpose (and user). Passwordless sign-in gets an
 * empty `allowCredentials` (the authenticator offers its discoverable passkeys); `mfa` and `step-up` list the user's
 * passkeys that are not suspect, and refuse with `no-passkey` when there is none.
 */
export async function passkeyRequestOptions(c: Context<AppEnv>, target: AssertionFor): Promise<z.input<typeof PublicKeyCredentialRequestOptions>> {
  const config = c.get("config");
  const db = dbFor(c, "write");
  let allowCredentials: { id: string; transports: string[] }[] = [];
  if (target.purpose !== "login") {
    const held = await db
      .select({ id: passkeys.credentialId, transports: passkeys.transports })
      .from(passkeys)
      .where(and(eq(passkeys.userId, target.userId), isNull(passkeys.suspectAt)));
    if (held.length === 0) throw new PasskeyRefused("no-passkey");
    allowCredentials = held;
  }
  const challenge = await newChallenge(db, target.purpose, target.purpose === "login" ? null : target.userId);
  await challenge.insert;
  return {
    rpId: config.rpId,
    challenge: challenge.text,
    allowCredentials: allowCredentials.map(({ id, transports }) => ({ id, type: "public-key" as const, transports })),
    timeout: CHALLENGE_TTL_MS,
    userVerification: needsUserVerification(target) ? "required" : "preferred",
  };
}

/**
 * Checks that must hold before a verified assertion counts (the account's standing, for sign-in): what it throws
 * is thrown as it is, and then nothing is recorded.
 */
export type Admit = (passkey: PasskeyRow) => void | Promise<void>;

/**
 * Verifies an assertion answering options that `passkeyRequestOptions` gave for the same `target`, and returns the
 * passkey, its counter and `last_used_at` updated. Throws `PasskeyRefused` otherwise. In order:
 *
 * 1. the challenge in `clientDataJSON` must be live for this purpose (and user);
 * 2. the credential id must name a passkey (for `mfa` and `step-up`, one of the user's) that is not suspect;
 * 3. a user handle, when the authenticator gives one (it must for `login`), must be the passkey's user;
 * 4. the ceremony's checks (src/passkeys/webauthn.ts): the type, challenge, origin (ACCESS_URL's), RP id hash, user
 *    presence, user verification where required, and the signature with the stored public key;
 * 5. `admit`, if given, runs;
 * 6. the challenge is spent (of a replay racing the original, one gets it);
 * 7. the signature counter must have moved forward, unless it is 0 on both sides (authenticators that keep none); if
 *    not, the passkey is marked suspect, audited, and refused from then on (docs/passkeys.md, "Suspect passkeys").
 *
 * A refusal before step 6 changes nothing, so a wrong answer can be followed by a right one on the same challenge;
 * a verified answer is the challenge's one use.
 */
export async function verifyPasskeyAssertion(
  c: Context<AppEnv>,
  target: AssertionFor,
  response: AuthenticationResponseBody,
  admit?: Admit,
): Promise<PasskeyRow> {
  const config = c.get("config");
  const db = dbFor(c, "write");
  const userId = target.purpose === "login" ? null : target.userId;

  const challenge = presentedChallenge(response.response.clientDataJSON);
  if (challenge === undefined || !(await challengeIsLive(db, challenge, target.purpose, userId))) throw new PasskeyRefused("challenge");

  const [passkey] = await db
    .select()
    .from(passkeys)
    .where(and(eq(passkeys.credentialId, response.id), userId === null ? undefined : eq(passkeys.userId, userId)))
    .limit(1);
  if (!passkey) throw new PasskeyRefused("unknown-credential");
  if (passkey.suspectAt !== null) throw new PasskeyRefused("suspect");

  const handle = response.response.userHandle ?? undefined;
  if (handle === undefined ? target.purpose === "login" : handle !== encodeBase64urlNoPadding(userHandleOf(passkey.userId))) {
    throw new PasskeyRefused("not-verified");
  }

  // The counter is only reported here and judged below, once the signature is known to be good: a forged assertion
  // must not be able to mark someone's passkey suspect.
  const { counter: newCounter, backedUp } = await verifyAssertion(response, passkey.publicKey, {
    challenge,
    origin: config.origin,
    rpId: config.rpId,
    userVerification: needsUserVerification(target),
  }).catch((error: unknown) => {
    throw error instanceof CeremonyRefused ? new PasskeyRefused("not-verified") : error;
  });

  await admit?.(passkey);
  if (!(await spendChallenge(db, challenge, target.purpose, userId))) throw new PasskeyRefused("challenge");

  const now = nowIso();
  const counted = newCounter !== 0 || passkey.signCount !== 0;
  // Compare-and-set: of two assertions racing with the same counter, one moves it and the other is the backward one.
  const [updated] = await db
    .update(passkeys)
    .set({ signCount: newCounter, lastUsedAt: now, backedUp })
    .where(and(eq(passkeys.id, passkey.id), isNull(passkeys.suspectAt), counted ? lt(passkeys.signCount, newCounter) : eq(passkeys.signCount, 0)))
    .returning();
  if (updated) return updated;

  await db.batch([
    db
      .update(passkeys)
      .set({ suspectAt: now })
      .where(and(eq(passkeys.id, passkey.id), isNull(passkeys.suspectAt))),
    auditInsert(db, c, {
      userId: passkey.userId,
      action: "suspect",
      resourceType: "passkey",
      resourceId: passkey.id,
      diff: { sign_count: passkey.signCount, presented: newCounter },
      // The assertion is refused: 401 at sign-in, step-up's 400 (docs/second-factor.md, "Step-up").
      statusCode: target.purpose === "step-up" ? 400 : 401,
    }),
  ]);
  throw new PasskeyRefused("counter");
}
