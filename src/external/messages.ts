/**
 * The messages and details of external sign-in (OpenID Connect, GitHub) and login conversion. Clients compare these
 * strings, so they are written once here and imported by the code that throws them, the route descriptions that
 * quote them and the tests; docs/api.md (Conventions) describes the error shape they go in, and docs/api.md
 * (External sign-in) lists them.
 */
export const ExternalMessages = {
  linkedElsewhere: "This account is linked to another identity at this provider.",
  signupsDisabled: "Signups are disabled.",
  signupsDisabledDetail: "Ask an administrator to create your account.",
  signupRace: "An account for this identity was created at the same time; sign in again.",
  conversionUsed: "The login conversion has expired or was already used: start it again.",
  passwordLoginRequired: "User account must have password based authentication.",
  emailMismatch: "The identity provider's verified e-mail does not match your account's e-mail.",
  identityTaken: "This external identity already belongs to another account.",
  conversionStateMismatch: "The conversion state does not match this browser's conversion.",
  conversionForOther: (toType: string, provider: string) => `This conversion is to "${toType}", not "${provider}".`,
  otherProvider: "The sign-in was started with another provider: start again.",
  providerError: "The identity provider returned an error.",
  stateMismatch: "The sign-in state does not match: start again.",
  emailNotVerified: "Your e-mail address is not verified by the identity provider.",
  domainNotAllowed: "Your e-mail domain is not allowed to sign in.",
  notConfigured: (provider: string) => `Sign-in with ${provider} is not configured.`,
  convertSelfOnly: "Only the user themself can convert their login type.",
  cannotConvertTo: (toType: string) => `Cannot convert to login type "${toType}".`,
  unknownLoginType: (toType: string) => `Unknown login type "${toType}".`,
  methodNotConfigured: "That sign-in method is not configured.",
  cookieMissing: (what: string) => `The ${what} cookie is missing: start again.`,
  cookieExpired: (what: string) => `The ${what} cookie has expired: start again.`,
  cookieInvalid: (what: string) => `The ${what} cookie is not valid: start again.`,
  githubProfileRefused: "GitHub refused to share the user's profile.",
  githubProfileRefusedDetail: (path: string, status: number) => `GET ${path} answered ${status}.`,
  githubStateMismatch: "The sign-in state does not match.",
  githubExchangeFailed: "Failed to exchange the authorization code with GitHub.",
  oidcUnreachable: "The OpenID Connect provider could not be reached.",
  oidcUnreachableDetail: "Discovery of the issuer failed.",
  oidcExchangeFailed: "Failed to exchange the authorization code with the OpenID Connect provider.",
  oidcNoIdToken: "The OpenID Connect provider returned no ID token.",
} as const;
