import { ApiError } from "../../http/errors";
import { AuthMessages } from "../messages";

/**
 * zxcvbn-ts's list of common passwords lives beside the Worker, not in it: almost half of the bundle's gzip was this
 * one list (docs/security.md, "Password policy"). scripts/build-ui.mjs writes it under wrangler.toml's [assets]
 * directory at this path, and the Worker reads it through its ASSETS binding. The path is outside `/assets/`, so the
 * Worker's router (which runs first for every request) never serves it to anyone.
 */
const COMMON_PASSWORDS_PATH = "/password-policy/common-passwords.json";
/** The binding looks at the path alone; the host only makes the URL absolute. */
const COMMON_PASSWORDS_URL = `https://assets.invalid${COMMON_PASSWORDS_PATH}`;

/** What reads the list: the ASSETS binding (the only fetcher the Worker passes). */
export type AssetReader = Pick<Fetcher, "fetch">;

let loading: Promise<readonly string[]> | undefined;

async function read(assets: AssetReader): Promise<readonly string[]> {
  const res = await assets.fetch(COMMON_PASSWORDS_URL);
  if (!res.ok) {
    await res.body?.cancel();
    throw new Error(`the ASSETS binding answered ${res.status}`);
  }
  const list: unknown = await res.json();
  if (!Array.isArray(list) || list.length === 0 || !list.every((word) => typeof word === "string")) {
    throw new Error("the file is not a list of passwords");
  }
  return list;
}

/**
 * The list, in the package's order (zxcvbn ranks a match by its position), read once per isolate: every caller,
 * concurrent first callers included, shares one read. A read that fails is logged once and forgotten, so the next
 * password tries again; until one succeeds every caller gets a 503 and no password is accepted unchecked.
 */
export async function commonPasswords(assets: AssetReader): Promise<readonly string[]> {
  loading ??= read(assets).catch((error: unknown) => {
    loading = undefined;
    console.error(
      `[herald] the common-password list (${COMMON_PASSWORDS_PATH}) could not be read: ${error instanceof Error ? error.message : "error"}; new passwords are refused until it can`,
    );
    throw error;
  });
  try {
    return await loading;
  } catch {
    throw new ApiError(503, AuthMessages.passwordCheckUnavailable, { detail: AuthMessages.passwordCheckUnavailableDetail });
  }
}
