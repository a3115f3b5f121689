/**
 * The messages and details of sign-in and session errors. Clients compare these strings (they follow Coder's
 * wording), so they are written once here and imported by the code that throws them, the route descriptions that
 * quote them and the tests; docs/api.md (Conventions) describes the error shape they go in.
 */
export const AuthMessages = {
  incorrectLogin: "Incorrect email or password.",
  suspended: "Your account is suspended. Contact an admin to reactivate your account.",
  passwordAuthDisabled: "Password authentication is disabled.",
  wrongLoginType: (attempted: string, actual: string) =>
    `Incorrect login type, attempting to use "${attempted}" but user is of login type "${actual}"`,
  /** Detail of the 401 when no credential was sent at all; `header` is the session header's name. */
  noCredential: (header: string) => `No session token was sent: use the ${header} header, an Authorization bearer header or the session cookie.`,
  /**
   * Detail of the 401 for every credential that was sent but does not work — malformed, unknown, wrong secret,
   * expired, its user suspended: telling them apart would let a probe confirm that a key id exists.
   */
  badCredential: "The session token is invalid, expired or revoked.",
  crossSiteSignIn: "Sign-in requests from another site are refused.",
  cookieNeedsOrigin: "Requests authenticated by cookie must come from an allowed origin.",
  incorrectPasscode: "Incorrect email or one-time passcode.",
  invalidPassword: "Invalid password.",
  /** The password policy's verdicts: the `detail` of the `password` validation, and `details` of validate-password. */
  passwordTooShort: (min: number) => `Password must be at least ${min} characters.`,
  passwordTooLong: (max: number) => `Password must be at most ${max} characters.`,
  passwordTooCommon: "Password is too common.",
  passwordPersonal: "Password must not contain your username or e-mail.",
  /** `reason` is the strength estimator's warning or suggestion, given a final period here. */
  passwordTooWeak: (reason: string) => `Password is too weak: ${reason.replace(/\.?$/, ".")}`,
  passwordWeakHint: "Add more words that are less common.",
  /** The 503 of every path that would accept a new password while the common-password list cannot be read. */
  passwordCheckUnavailable: "Passwords cannot be checked right now. Please try again in a minute.",
  passwordCheckUnavailableDetail: "The list of common passwords could not be read, and no password is accepted without it.",
  samePassword: "New password cannot match old password.",
  loggedOut: "Logged out!",
  /** Password sign-in's 401 after "This wasn't me", until a passcode reset completes (docs/security.md). */
  passwordMustBeReset: "Your password must be reset.",
  passwordMustBeResetDetail: "Set a new password with the passcode sent to your e-mail address, or ask for a new passcode.",
} as const;
