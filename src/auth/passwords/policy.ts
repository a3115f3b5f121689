import { ZxcvbnFactory } from "@zxcvbn-ts/core";
// Single data files rather than the package indexes: the English index alone would add ~600 KiB (gzip) of word lists.
// The common-password list is not bundled at all: it is read from the Worker's static assets (common-list.ts).
import adjacencyGraphs from "@zxcvbn-ts/language-common/dist/adjacencyGraphs.json.mjs";
import translations from "@zxcvbn-ts/language-en/dist/translations.mjs";
import type * as z from "zod";
import { AuthMessages } from "../messages";
import type { ValidateUserPasswordResponse } from "../schemas";
import { type AssetReader, commonPasswords } from "./common-list";

const MIN_PASSWORD_LENGTH = 8;
const MAX_PASSWORD_LENGTH = 256;
/** zxcvbn score (0–4) a password needs: 3 is "safely unguessable" for an online or slow-hash offline attack. */
const MIN_STRENGTH_SCORE = 3;
/**
 * The estimate reads only this many UTF-16 units: zxcvbn's cost grows steeply with length (hundreds of ms of CPU
 * at 256), and cutting the estimate's input can only make it stricter, never accept a weaker password.
 */
const ESTIMATE_MAX_LENGTH = 64;
/** Context words shorter than this are too likely to occur by chance to forbid. */
const MIN_CONTEXT_WORD_LENGTH = 3;

export interface PasswordContext {
  email?: string;
  username?: string;
  name?: string;
}

/** `valid`, and `details`: "" when valid, else one sentence for the user (src/auth/schemas.ts documents it). */
export type PolicyResult = z.infer<typeof ValidateUserPasswordResponse>;

let commonSet: Set<string> | undefined;
let zxcvbn: ZxcvbnFactory | undefined;

// Both are built on first use (tens of ms for ~50k words), from the list read once per isolate: module scope would
// slow every cold start, even for requests that never see a password. Each is built synchronously after the shared
// read, so concurrent first callers build it once.
function isCommon(list: readonly string[], lowered: string): boolean {
  commonSet ??= new Set(list.map((word) => word.toLowerCase()));
  return commonSet.has(lowered);
}

function estimator(list: readonly string[]): ZxcvbnFactory {
  zxcvbn ??= new ZxcvbnFactory({
    translations,
    graphs: adjacencyGraphs,
    dictionary: { "passwords-common": [...list] },
    maxLength: ESTIMATE_MAX_LENGTH,
  });
  return zxcvbn;
}

const normalize = (text: string | undefined): string => (text ?? "").normalize("NFKC").toLowerCase();
const invalid = (details: string): PolicyResult => ({ valid: false, details });

/**
 * The policy's verdict (docs/security.md, "Password policy"). `assets` is the ASSETS binding, which holds the
 * common-password list; while the list cannot be read this throws a 503 (common-list.ts) for every password that is
 * not already refused by its length, so no password is ever accepted unchecked.
 */
export async function checkPasswordPolicy(assets: AssetReader, password: string, context: PasswordContext = {}): Promise<PolicyResult> {
  const normalized = password.normalize("NFKC");
  // Code points, not UTF-16 units, and nothing is ever cut off: too long is an error, not a silent truncation.
  const length = [...normalized].length;
  if (length < MIN_PASSWORD_LENGTH) return invalid(AuthMessages.passwordTooShort(MIN_PASSWORD_LENGTH));
  if (length > MAX_PASSWORD_LENGTH) return invalid(AuthMessages.passwordTooLong(MAX_PASSWORD_LENGTH));

  const list = await commonPasswords(assets);
  const lowered = normalized.toLowerCase();
  if (isCommon(list, lowered)) return invalid(AuthMessages.passwordTooCommon);

  const email = normalize(context.email);
  const localPart = email.includes("@") ? email.slice(0, email.lastIndexOf("@")) : email;
  const personal = [localPart, normalize(context.username)].filter((word) => word.length >= MIN_CONTEXT_WORD_LENGTH);
  if (personal.some((word) => lowered.includes(word))) {
    return invalid(AuthMessages.passwordPersonal);
  }

  const userInputs = [email, localPart, normalize(context.username), ...normalize(context.name).split(/\s+/)].filter(
    (word) => word.length >= MIN_CONTEXT_WORD_LENGTH,
  );
  const { score, feedback } = estimator(list).check(normalized, userInputs);
  if (score < MIN_STRENGTH_SCORE) {
    return invalid(AuthMessages.passwordTooWeak(feedback.warning || feedback.suggestions[0] || AuthMessages.passwordWeakHint));
  }
  return { valid: true, details: "" };
}
