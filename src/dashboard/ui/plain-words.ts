/**
 * The API's validation details, said for people (docs/dashboard.md#errors). The API names a field by its JSON path and
 * words its details for client authors (`username: must be alphanumeric…`, `Too small: expected string to have >=1
 * characters`); a form shows the field under its own label, so the sentence it shows names that label and says what
 * to do. This file is the one place those sentences live: `ApiProblem.about()` and `ProblemAlert` both read it.
 */

/** Sentences the forms also say themselves, before asking the API. */
export const SAY = {
  pickUser: "Pick a user from the list, or paste a full user id.",
  /** A step-up prompt the person cancelled (docs/dashboard.md, "Step-up"). */
  stepUpCancelled: "Nothing was changed: this needs you to confirm it is you.",
  stepUpAgain: "Try again when you are ready, and confirm it is you when Herald asks.",
  /** A role that needs a second factor, before one is enrolled (docs/dashboard.md, "Second factor"). */
  factorRequired: "Your role needs a second factor first.",
  factorWhere: "Add an authenticator app or a passkey on the page that opened, then go on.",
  /** The API's answer to a wrong code at the second step of a sign-in, and what to do next. */
  incorrectCode: "Incorrect one-time code.",
  appCodeAgain: "Type the code your app shows now; it changes every 30 seconds. Or use a recovery code.",
  recoveryCodeAgain: "Each recovery code works once: check it, or try another of yours.",
  /** The browser refused or stopped a passkey ceremony (the person cancelled, or it timed out). */
  passkeyStopped: "The passkey was not used: it was cancelled or took too long.",
  passkeyAgain: "Try again, or use another way offered here.",
} as const;

/** What the dashboard's forms call each field the API names (by JSON path). */
const LABELS: Readonly<Record<string, string>> = {
  email: "E-mail",
  username: "Username",
  name: "Name",
  password: "Password",
  old_password: "Current password",
  one_time_passcode: "Passcode",
  code: "Code",
  token_name: "Token name",
  url: "URL",
  kind: "Kind",
  lifetime: "Lifetime",
  scopes: "Scopes",
  content: "Title or message",
  "content.title": "Title",
  "content.message": "Message",
  email_when_unread_after: "The e-mail wait",
  "audience.user_ids": "Users",
  "audience.roles": "Roles",
  "audience.organization_id": "Organization",
  user_id: "User",
  template_id: "Template",
  q: "Search",
};

/** The label of a field: its own, or its path's last word made readable (`audience.user_ids.3` is one of the users). */
function labelOf(field: string): string {
  const known = LABELS[field] ?? LABELS[field.replace(/\.\d+$/, "")];
  if (known) return known;
  const last = field.split(".").pop() ?? field;
  const words = last.replace(/_/g, " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** A rewrite: when `field` (a JSON path, `N` standing for any index) and `detail` match, say `say` instead. */
interface Rule {
  field?: RegExp;
  detail: RegExp;
  say(label: string, match: RegExpMatchArray): string;
}

const RULES: readonly Rule[] = [
  {
    field: /^username$/,
    detail: /alphanumeric/,
    say: () => "Username can use letters, digits and single hyphens between them (like ada-lovelace), up to 32 characters.",
  },
  {
    field: /^token_name$/,
    detail: /must start with a letter or digit/,
    say: () => "Token name must start with a letter or digit, then letters, digits, spaces, dots, dashes or underscores.",
  },
  { field: /^old_password$/, detail: /incorrect/i, say: () => "This is not your current password." },
  { field: /^content$/, detail: /non-empty title or message/, say: () => "Write a title or a message: a broadcast needs at least one." },
  {
    field: /^email_when_unread_after$/,
    detail: /duration/,
    say: () => 'Write the wait as a duration like "15m" or "1h30m", at most "24h", or leave it empty to send the e-mail at once.',
  },
  { field: /^audience\.user_ids$/, detail: /at least one/, say: () => "Pick at least one user." },
  { field: /^audience\.roles$/, detail: /at least one/, say: () => "Choose at least one role." },
  { field: /^user_id$/, detail: /UUID/, say: () => SAY.pickUser },
  { field: /^audience\.user_ids\.\d+$/, detail: /UUID/, say: () => "This is not a user id: pick the user from the list instead." },
  { field: /^audience\.organization_id$/, detail: /UUID/, say: () => "Choose an organization, or paste its full id." },
  { detail: /^no (user|organization) has this id$/, say: (_label, m) => `No ${m[1]} has this id.` },
  { detail: /^Invalid email address$/, say: () => "Enter an e-mail address, like name@example.com." },
  { detail: /^Invalid UUID$/, say: (label) => `${label} must be a full id, like 0f8c1a2e-7d3b-4c55-9e61-2b4f0a9d8c17.` },
  { detail: /^Too small: expected string to have >=1 characters?$/, say: (label) => `${label} is required.` },
  { detail: /^Too small: expected string to have >=(\d+) characters$/, say: (label, m) => `${label} needs at least ${m[1]} characters.` },
  { detail: /^Too big: expected string to have <=(\d+) characters$/, say: (label, m) => `${label} can be at most ${m[1]} characters.` },
  { detail: /^Too small: expected array to have >=(\d+) items?$/, say: (label, m) => `${label}: choose at least ${m[1]}.` },
  { detail: /^Too big: expected array to have <=(\d+) items$/, say: (label, m) => `${label}: at most ${m[1]}.` },
  { detail: /^Invalid input/, say: (label) => `${label} is not valid.` },
];

const sentence = (text: string) => (/[.!?]$/.test(text) ? text : `${text}.`);

/**
 * What to tell a person about `field`'s refusal. A detail already written for people (the password policy's
 * "Password is too common.", a search problem) is kept; one in the API's own words is rewritten, naming the form's label.
 */
export function plainDetail(field: string, detail: string): string {
  const label = labelOf(field);
  for (const rule of RULES) {
    if (rule.field && !rule.field.test(field)) continue;
    const match = detail.match(rule.detail);
    if (match) return rule.say(label, match);
  }
  // "title must be at most 120 characters": the API starts with the field's own name; the form's label replaces it.
  const first = detail.split(" ")[0] ?? "";
  const own = field.split(".").pop() ?? field;
  if (first === own) return sentence(`${label}${detail.slice(first.length)}`);
  if (/^[a-z]/.test(detail)) return sentence(`${label} ${detail}`);
  return sentence(detail);
}
