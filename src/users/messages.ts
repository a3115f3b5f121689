/**
 * The messages and details of the account and API-key routes, errors and the few success messages alike. Clients
 * compare these strings (they follow Coder's wording), so they are written once here and imported by the code that
 * answers with them, the route descriptions that quote them and the tests; docs/api.md (Conventions) describes the
 * error shape they go in.
 */
export const UserMessages = {
  firstUserExists: "The initial user has already been created!",
  firstUserMissing: "The initial user has not been created!",
  firstUserConflict: "The initial user has already been created.",
  emailOrUsernameTaken: "User with that email or username already exists.",
  emailTaken: "User with that email already exists.",
  usernameTaken: "User with that username already exists.",
  usernameReserved: (name: string) => `"${name}" is a reserved username: /users/${name.toLowerCase()} means something else.`,
  defaultOrganizationMissing: "The default organization is missing.",
  invalidSearch: "Invalid user search query.",
  /** The search problems, each the `detail` of a `q` validation (src/users/search.ts). */
  searchNeedsValue: (key: string, allowed: readonly string[]) => `"${key}:" needs a value: one of ${allowed.join(", ")}.`,
  searchBadValue: (value: string, key: string, allowed: readonly string[]) => `"${value}" is not a valid ${key}: use one of ${allowed.join(", ")}.`,
  searchUnknownKey: (key: string) => `"${key}" is not a search key: use status, role, login_type or search, or plain text.`,
  deleted: "User has been deleted!",
  cannotDeleteSelf: "You cannot delete yourself!",
  cannotChangeOwnRoles: "You cannot change your own roles.",
  cannotChangeOwnStatus: (action: string) => `You cannot ${action} yourself.`,
  cannotChangeRoles: "You cannot change roles.",
  cannotAssignRole: (role: string) => `You cannot assign the role "${role}".`,
  cannotUnassignRole: (role: string) => `You cannot unassign the role "${role}".`,
  ownerManagesOwner: "Only an owner can manage another owner.",
  ownerChangesOwnerRoles: "Only an owner can change an owner's roles.",
  ownerGrantsSiteRoles: "Only an owner can grant or remove site roles other than member.",
  ownerSetsRolePassword: "Only an owner can set the password of a user with a site role.",
  passwordUsersOnly: "Only password users can change their password.",
  oldPasswordIncorrect: "Old password is incorrect.",
  invalidScopes: "Invalid scopes.",
  unknownScope: (scope: string) => `Unknown scope "${scope}".`,
  scopesTooWide: "A token cannot be given scopes its creator's credential does not hold.",
  lifetimeTooLong: (seconds: number) => `Lifetime must be at most ${seconds} seconds.`,
  maxLifetime: (seconds: number) => `The maximum token lifetime is ${seconds} seconds.`,
  outlivesCreator: (seconds: number) => `A token cannot outlive the token that creates it (${seconds} seconds left).`,
  tooManyTokens: "Too many API tokens.",
  tooManyTokensDetail: (cap: number) => `A user may hold at most ${cap} API tokens (TOKEN_MAX_PER_USER): delete one first.`,
  tokenNameTaken: (name: string) => `A token with name "${name}" already exists.`,
} as const;
