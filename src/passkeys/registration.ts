import { encodeBase64urlNoPadding } from "@oslojs/encoding";
import { count, eq } from "drizzle-orm";
import type { Context } from "hono";
import type * as z from "zod";
import { auditInsert } from "../audit/log";
import { changeFactors, commitAccountChanges } from "../auth/account-changes";
import { type PasskeyRow, passkeys, type UserRow } from "../db/schema";
import { dbFor } from "../db/session";
import { badRequest, conflict } from "../http/errors";
import type { AppEnv } from "../http/types";
import { nowIso } from "../lib/crypto";
import { sendSecurityNotice } from "../security/notices";
import { isUniqueViolation } from "../users/service";
import { CHALLENGE_TTL_MS, challengeIsLive, newChallenge, presentedChallenge, spendChallenge } from "./challenges";
import { PasskeyMessages } from "./messages";
import type { addPasskeyBody, PublicKeyCredentialCreationOptions } from "./schemas";
import { CeremonyRefused, PASSKEY_ALGORITHMS, verifyRegistration } from "./webauthn";

/**
 * Adding a passkey (docs/passkeys.md, "Adding a passkey"): the creation options, then the authenticator's answer
 * verified (src/passkeys/webauthn.ts) against this deployment's relying party (ACCESS_URL) and the challenge, and
 * stored.
 */

/** How many passkeys one user may hold (docs/security.md, "What one user can make Herald hold"). */
export const PASSKEYS_MAX_PER_USER = 20;

/** Transports WebAuthn defines; any other hint a browser sends is dropped rather than stored. */
const TRANSPORTS = new Set(["usb", "nfc", "ble", "smart-card", "hybrid", "internal", "cable"]);

/** What the relying party says about itself in the options. */
const RP_NAME = "Herald";

/** The WebAuthn user handle: the user's id, so a discoverable credential names its account without any personal data. */
export const userHandleOf = (userId: string) => new TextEncoder().encode(userId);

const knownTransports = (transports: readonly string[] | undefined): string[] => (transports ?? []).filter((t) => TRANSPORTS.has(t));

/**
 * Creation options for `user`: a discoverable credential (so it can sign in without a password) with user
 * verification required, attestation `none`, ES256 or RS256, and the user's passkeys excluded.
 */
export async function registrationOptions(c: Context<AppEnv>, user: UserRow): Promise<z.input<typeof PublicKeyCredentialCreationOptions>> {
  const config = c.get("config");
  const db = dbFor(c, "write");
  const held = await db
    .select({ credentialId: passkeys.credentialId, transports: passkeys.transports })
    .from(passkeys)
    .where(eq(passkeys.userId, user.id));
  const challenge = await newChallenge(db, "register", user.id);
  await challenge.insert;
  return {
    challenge: challenge.text,
    rp: { name: RP_NAME, id: config.rpId },
    user: {
      id: encodeBase64urlNoPadding(userHandleOf(user.id)),
      // What the authenticator shows in its account list: the e-mail Herald's users sign in with, else the username.
      name: user.email || user.username,
      displayName: user.name || user.username,
    },
    pubKeyCredParams: PASSKEY_ALGORITHMS.map((alg) => ({ alg, type: "public-key" as const })),
    timeout: CHALLENGE_TTL_MS,
    attestation: "none",
    excludeCredentials: held.map(({ credentialId, transports }) => ({ id: credentialId, type: "public-key" as const, transports })),
    authenticatorSelection: { residentKey: "required", requireResidentKey: true, userVerification: "required" },
    extensions: { credProps: true },
    hints: [],
  };
}

/** A name for a passkey added without one: what kind of authenticator holds it, as far as its flags tell. */
function defaultName(backupEligible: boolean, attachment: string | null | undefined): string {
  if (backupEligible) return "Synced passkey";
  if (attachment === "cross-platform") return "Security key";
  return "Passkey";
}

/**
 * Verifies the authenticator's answer to the options `registrationOptions` gave `user` and stores the passkey. A
 * bad signature, origin, RP id hash or challenge, or no user verification → 400 and nothing changed, the challenge
 * included; a verified answer spends the challenge.
 */
export async function registerPasskey(c: Context<AppEnv>, user: UserRow, body: z.infer<typeof addPasskeyBody>): Promise<PasskeyRow> {
  const config = c.get("config");
  const db = dbFor(c, "write");
  const [held] = await db.select({ n: count() }).from(passkeys).where(eq(passkeys.userId, user.id));
  if ((held?.n ?? 0) >= PASSKEYS_MAX_PER_USER) {
    throw badRequest(PasskeyMessages.tooManyPasskeys, { detail: PasskeyMessages.tooManyPasskeysDetail(PASSKEYS_MAX_PER_USER) });
  }
  const challenge = presentedChallenge(body.response.response.clientDataJSON);
  const unusable = () => badRequest(PasskeyMessages.registrationRefused, { detail: PasskeyMessages.challengeUnusable });
  if (challenge === undefined || !(await challengeIsLive(db, challenge, "register", user.id))) throw unusable();
  const credential = await verifyRegistration(body.response, {
    challenge,
    origin: config.origin,
    rpId: config.rpId,
    userVerification: true,
  }).catch((error: unknown) => {
    // The detail names what did not match, never a secret (src/passkeys/messages.ts, CeremonyDetails).
    throw error instanceof CeremonyRefused ? badRequest(PasskeyMessages.registrationRefused, { detail: error.message }) : error;
  });
  // Verified: this answer is the challenge's one use (of a replay racing it, one gets it).
  if (!(await spendChallenge(db, challenge, "register", user.id))) throw unusable();

  const now = nowIso();
  const row: PasskeyRow = {
    id: crypto.randomUUID(),
    userId: user.id,
    credentialId: credential.id,
    publicKey: credential.publicKey,
    signCount: credential.counter,
    transports: knownTransports(body.response.response.transports),
    name: body.name ?? defaultName(credential.backupEligible, body.response.authenticatorAttachment),
    backupEligible: credential.backupEligible,
    backedUp: credential.backedUp,
    createdAt: now,
    lastUsedAt: null,
    suspectAt: null,
  };
  try {
    // A new factor: what was cached about the user (whether they have one, for MFA_REQUIRED_ROLES) is stale.
    await commitAccountChanges(
      c,
      db,
      [changeFactors(user.id, [db.insert(passkeys).values(row)])],
      [auditInsert(db, c, { action: "create", resourceType: "passkey", resourceId: row.id, diff: { owner: user.id, name: row.name } })],
    );
  } catch (error) {
    // The credential id is already one of this deployment's passkeys, this user's or another's (WebAuthn's rule).
    if (isUniqueViolation(error)) throw conflict(PasskeyMessages.alreadyRegistered);
    throw error;
  }
  sendSecurityNotice(c, { userId: user.id, event: "factor_added", labels: { factor: `The passkey "${row.name}"` } });
  return row;
}
