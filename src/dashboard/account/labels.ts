const LOGIN_TYPES: Record<string, string> = {
  password: "E-mail and password",
  oidc: "OpenID Connect",
  github: "GitHub",
  token: "API token",
  none: "None (service account)",
};

/** A login type (User and APIKey in docs/openapi.json) as a person reads it. */
export function loginTypeName(type: string): string {
  return LOGIN_TYPES[type] ?? type;
}

export const LIFETIMES: { seconds: number; label: string }[] = [
  { seconds: 24 * 60 * 60, label: "1 day" },
  { seconds: 7 * 24 * 60 * 60, label: "7 days" },
  { seconds: 30 * 24 * 60 * 60, label: "30 days" },
];
