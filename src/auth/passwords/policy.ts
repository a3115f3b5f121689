import { ZxcvbnFactory } from "@zxcvbn-ts/core";
// Single data files rather than the package indexes: the English index alone would add ~600 KiB (gzip) of word lists.
import adjacencyGraphs from "@zxcvbn-ts/language-common/dist/adjacencyGraphs.json.mjs";
import commonPasswords from "@zxcvbn-ts/language-common/dist/passwords.json.mjs";
import translations from "@zxcvbn-ts/language-en/dist/translations.mjs";
import type * as z from "zod";
import { AuthMessages } from "../messages";
import type { ValidateUserPasswordResponse } from "../schemas";

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

// Both are built on first use (tens of ms for ~50k words): module scope would slow every cold start, even for
// requests that never see a password.
function isCommon(lowered: string): boolean {
  commonSet ??= new Set(commonPasswords.map((word) => word.toLowerCase()));
  return commonSet.has(lowered);
}

function estimator(): ZxcvbnFactory {
  zxcvbn ??= new ZxcvbnFactory({
    translations,
    graphs: adjacencyGraphs,
    dictionary: { "passwords-common": commonPasswords },
    maxLength: ESTIMATE_MAX_LENGTH,
  });
  return zxcvbn;
}

const normalize = (text: string | undefined): string => (text ?? "").normalize("NFKC").toLowerCase();
const invalid = (details: string): PolicyResult => ({ valid: false, details });

export function checkPasswordPolicy(password: string, context: PasswordContext = {}): PolicyResult {
  const normalized = password.normalize("NFKC");
  // Code points, not UTF-16 units, and nothing is ever cut off: too long is an error, not a silent truncation.
  const length = [...normalized].length;
  if (length < MIN_PASSWORD_LENGTH) return invalid(AuthMessages.passwordTooShort(MIN_PASSWORD_LENGTH));
  if (length > MAX_PASSWORD_LENGTH) return invalid(AuthMessages.passwordTooLong(MAX_PASSWORD_LENGTH));

  const lowered = normalized.toLowerCase();
  if (isCommon(lowered)) return invalid(AuthMessages.passwordTooCommon);

  const email = normalize(context.email);
  const localPart = email.includes("@") ? email.slice(0, email.lastIndexOf("@")) : email;
  const personal = [localPart, normalize(context.username)].filter((word) => word.length >= MIN_CONTEXT_WORD_LENGTH);
  if (personal.some((word) => lowered.includes(word))) {
    return invalid(AuthMessages.passwordPersonal);
  }

  const userInputs = [email, localPart, normalize(context.username), ...normalize(context.name).split(/\s+/)].filter(
    (word) => word.length >= MIN_CONTEXT_WORD_LENGTH,
  );
  const { score, feedback } = estimator().check(normalized, userInputs);
  if (score < MIN_STRENGTH_SCORE) {
    return invalid(AuthMessages.passwordTooWeak(feedback.warning || feedback.suggestions[0] || AuthMessages.passwordWeakHint));
  }
  return { valid: true, details: "" };
}
