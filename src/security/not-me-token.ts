import { type Opened, openValue, signValue } from "../lib/signed";

/** A "This wasn't me" link lives this long (docs/security.md, "This wasn't me"). */
export const NOT_ME_LIFETIME_MS = 7 * 24 * 3_600_000;

const PURPOSE = "not-me";

/**
 * What a "This wasn't me" link carries, signed under SECRET_KEY for this purpose only: the account and the event it
 * answers (whose id makes it single-use), and what the page shows of the event. The page reads these fields to
 * explain the event; the server trusts them only once the signature holds.
 */
export interface NotMeClaims {
  userId: string;
  eventId: string;
  event: string;
  /** When the event happened (epoch ms). */
  at: number;
  device: string;
  place: string;
}

/** The token of a notice's link; it goes in the URL's fragment, so no server or proxy log ever sees it. */
export function signNotMeToken(secret: string, claims: NotMeClaims): Promise<string> {
  return signValue(secret, PURPOSE, claims, claims.at + NOT_ME_LIFETIME_MS);
}

export async function openNotMeToken(secret: string, token: string): Promise<Opened<NotMeClaims>> {
  const opened = await openValue<NotMeClaims>(secret, PURPOSE, token);
  if (!opened.ok) return opened;
  const claims = opened.value;
  const wellFormed =
    typeof claims === "object" &&
    claims !== null &&
    typeof claims.userId === "string" &&
    typeof claims.eventId === "string" &&
    typeof claims.event === "string" &&
    typeof claims.at === "number";
  return wellFormed ? opened : { ok: false, reason: "malformed" };
}
