import { openSealed, sealText } from "../lib/sealed";

/** The HKDF purpose of the labels' key: unchanged, so labels sealed before keep opening. */
const LABELS = "herald sealed labels v1";

/**
 * Seals labels that must not sit in the message log in clear (a one-time passcode): the row keeps only ciphertext,
 * opened at send time and dropped once the message is finished.
 */
export function seal(secret: string, labels: Record<string, string>): Promise<string> {
  return sealText(secret, LABELS, JSON.stringify(labels));
}

export async function unseal(secret: string, sealed: string): Promise<Record<string, string>> {
  return JSON.parse(await openSealed(secret, LABELS, sealed)) as Record<string, string>;
}
