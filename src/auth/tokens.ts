import { randomAlphanumeric, sha256Hex } from "../lib/crypto";

/** docs/api.md (Conventions): `<10-char id>-<22-char secret>`, both [0-9A-Za-z]. */
const TOKEN_PATTERN = /^([0-9A-Za-z]{10})-([0-9A-Za-z]{22})$/;

export interface ParsedToken {
  id: string;
  secret: string;
}

export function parseToken(token: string): ParsedToken | undefined {
  const match = TOKEN_PATTERN.exec(token);
  if (!match?.[1] || !match[2]) return undefined;
  return { id: match[1], secret: match[2] };
}

export interface NewToken extends ParsedToken {
  token: string;
  hashedSecret: string;
}

export async function generateToken(): Promise<NewToken> {
  const id = randomAlphanumeric(10);
  const secret = randomAlphanumeric(22);
  return { id, secret, token: `${id}-${secret}`, hashedSecret: await hashTokenSecret(secret) };
}

/** Only this digest is stored: a database leak does not reveal usable tokens. */
export function hashTokenSecret(secret: string): Promise<string> {
  return sha256Hex(secret);
}
