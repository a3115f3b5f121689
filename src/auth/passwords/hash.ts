import Argon2, { Argon2Type, Argon2Version } from "@phi-ag/argon2";
import wasm from "@phi-ag/argon2/argon2.wasm";
import { timingSafeEqualBytes } from "../../lib/crypto";

// Why @phi-ag/argon2 and not hash-wasm, @noble/hashes or another argon2id: docs/security.md, "Password hashing"
// (it runs on Workers with its .wasm imported as a module, and is the fastest of those that do).

/** OWASP's argon2id baseline (19 MiB, 2 passes, 1 lane): strong, yet within a request's CPU and memory budget. */
export const CURRENT_ARGON2_PARAMS = {
  memoryCost: 19_456,
  timeCost: 2,
  parallelism: 1,
  hashLength: 32,
  saltLength: 16,
} as const;

export interface VerifyResult {
  valid: boolean;
  /** The password was right but the stored hash is legacy or weaker than current: store `hashPassword()` anew. */
  needsRehash: boolean;
}

// Checked when there is no usable stored hash (unknown account, corrupt row) so that the answer takes as long as a
// real check and does not reveal whether the account exists. Same parameters as CURRENT_ARGON2_PARAMS; its password
// was random and thrown away, and the result is ignored anyway.
const DUMMY_HASH = "$argon2id$v=19$m=19456,t=2,p=1$BVbzA0dYIz2SQdF3SX8eXg$uNd/EONIy4mtNxKKE0CTu/lD2BbCh6ZRnVTLh3p4L9k";

// A stored hash asking for more than this is treated as corrupt: an isolate has 128 MB, one bad row must not sink it.
const ARGON2_LIMITS = { memoryCost: 65_536, timeCost: 16, parallelism: 8 } as const;
const ARGON2ID_PHC = /^\$argon2id\$v=(\d{1,3})\$m=(\d{1,8}),t=(\d{1,3}),p=(\d{1,3})\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/;

// Coder's legacy format: `$pbkdf2-sha256$<iterations>$<raw base64 salt>$<raw base64 64-byte key>`.
// Production WebCrypto refuses PBKDF2 above 100,000 iterations (Coder's default is 65,535), so more is unverifiable.
const PBKDF2_MAX_ITERATIONS = 100_000;
const PBKDF2_KEY_BYTES = 64;
const PBKDF2_PHC = /^\$pbkdf2-sha256\$([1-9]\d{0,8})\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/;

const encoder = new TextEncoder();
let argon2: Promise<Argon2> | undefined;

/** Instantiated on first use (Workers refuse such work at module scope); the promise is shared by concurrent callers. */
function getArgon2(): Promise<Argon2> {
  argon2 ??= WebAssembly.instantiate(wasm).then(
    (instance) => new Argon2(instance),
    (error: unknown) => {
      argon2 = undefined;
      throw error;
    },
  );
  return argon2;
}

/**
 * Passwords are NFKC-normalised (as the policy counts them) so that the same password typed on another keyboard or
 * OS still matches. @phi-ag/argon2 copies the UTF-8 bytes but passes `string.length` (UTF-16 units) as the byte
 * count, which silently truncates non-ASCII passwords; padding with NULs up to the UTF-8 length makes exactly the
 * UTF-8 bytes get hashed, giving standard argon2id output.
 */
function argon2Input(password: string): string {
  const normalized = password.normalize("NFKC");
  return normalized + "\0".repeat(encoder.encode(normalized).length - normalized.length);
}

export async function hashPassword(password: string): Promise<string> {
  const instance = await getArgon2();
  const { saltLength, ...params } = CURRENT_ARGON2_PARAMS;
  const salt = crypto.getRandomValues(new Uint8Array(saltLength));
  try {
    return instance.hash(argon2Input(password), {
      ...params,
      salt,
      type: Argon2Type.Argon2id,
      version: Argon2Version.Version13,
    }).encoded;
  } catch (error) {
    argon2 = undefined; // a trap can leave the WASM heap inconsistent: start afresh next time
    throw error;
  }
}

async function argon2Matches(encoded: string, password: string): Promise<boolean> {
  const instance = await getArgon2();
  try {
    return instance.tryVerify(encoded, argon2Input(password), Argon2Type.Argon2id).success;
  } catch {
    argon2 = undefined;
    return false;
  }
}

function decodeRawBase64(text: string): Uint8Array<ArrayBuffer> | undefined {
  if (text.length % 4 === 1) return undefined;
  try {
    return Uint8Array.from(atob(text + "=".repeat((4 - (text.length % 4)) % 4)), (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
}

/** Parameters of a well-formed, bounded argon2id PHC string; undefined for anything else. */
function parseArgon2id(encoded: string): { v: number; m: number; t: number; p: number; hashBytes: number } | undefined {
  const match = ARGON2ID_PHC.exec(encoded);
  if (!match) return undefined;
  const [v, m, t, p] = match.slice(1, 5).map(Number) as [number, number, number, number];
  const hashBytes = decodeRawBase64(match[6] ?? "")?.length;
  if (hashBytes === undefined || decodeRawBase64(match[5] ?? "") === undefined) return undefined;
  if (m > ARGON2_LIMITS.memoryCost || t > ARGON2_LIMITS.timeCost || p > ARGON2_LIMITS.parallelism) return undefined;
  return { v, m, t, p, hashBytes };
}

interface Pbkdf2Hash {
  iterations: number;
  salt: Uint8Array<ArrayBuffer>;
  key: Uint8Array<ArrayBuffer>;
}

function parsePbkdf2(encoded: string): Pbkdf2Hash | undefined {
  const match = PBKDF2_PHC.exec(encoded);
  if (!match) return undefined;
  const iterations = Number(match[1]);
  const salt = decodeRawBase64(match[2] ?? "");
  const key = decodeRawBase64(match[3] ?? "");
  if (iterations > PBKDF2_MAX_ITERATIONS || !salt || salt.length < 8 || salt.length > 64) return undefined;
  if (key?.length !== PBKDF2_KEY_BYTES) return undefined;
  return { iterations, salt, key };
}

async function pbkdf2Matches({ iterations, salt, key }: Pbkdf2Hash, password: string): Promise<boolean> {
  try {
    // Raw UTF-8, not NFKC: Coder hashed the bytes exactly as typed.
    const material = await crypto.subtle.importKey("raw", encoder.encode(password), "PBKDF2", false, ["deriveBits"]);
    const derived = await crypto.subtle.deriveBits({ name: "PBKDF2", hash: "SHA-256", salt, iterations }, material, PBKDF2_KEY_BYTES * 8);
    return timingSafeEqualBytes(derived, key);
  } catch {
    return false;
  }
}

/**
 * Checks a password against a stored argon2id or Coder PBKDF2 hash. Never throws for bad stored input: anything
 * missing or unparseable costs one dummy argon2id check and is reported invalid.
 */
export async function verifyPassword(encoded: string | null | undefined, password: string): Promise<VerifyResult> {
  const stored = typeof encoded === "string" ? encoded : "";
  const legacy = parsePbkdf2(stored);
  if (legacy) {
    const valid = await pbkdf2Matches(legacy, password);
    return { valid, needsRehash: valid };
  }
  const params = parseArgon2id(stored);
  if (params) {
    const valid = await argon2Matches(stored, password);
    const current = CURRENT_ARGON2_PARAMS;
    const outdated =
      params.v !== Argon2Version.Version13 ||
      params.m !== current.memoryCost ||
      params.t !== current.timeCost ||
      params.p !== current.parallelism ||
      params.hashBytes !== current.hashLength;
    return { valid, needsRehash: valid && outdated };
  }
  await argon2Matches(DUMMY_HASH, password);
  return { valid: false, needsRehash: false };
}
