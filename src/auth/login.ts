import { eq } from "drizzle-orm";
import type { Database } from "../db/client";
import { type UserRow, users } from "../db/schema";
import { ApiError, forbidden } from "../http/errors";
import { findLiveUserByEmail } from "../users/service";
import { AuthMessages } from "./messages";
import { hashPassword, verifyPassword } from "./passwords/hash";

/**
 * Checks an e-mail/password pair in the order docs/api.md ("Signing in with a password") gives. An unknown e-mail verifies a dummy hash, so it
 * costs the same time as a wrong password and both get the same 401. Only after a correct password are the login
 * type, suspension and a required reset revealed.
 */
export async function verifyLogin(db: Database, email: string, password: string): Promise<UserRow> {
  const user = await findLiveUserByEmail(db, email);
  const { valid, needsRehash } = await verifyPassword(user?.hashedPassword, password);
  if (!user || !valid) throw new ApiError(401, AuthMessages.incorrectLogin);
  if (user.loginType !== "password") throw forbidden(AuthMessages.wrongLoginType("password", user.loginType));
  if (user.status === "suspended") throw new ApiError(401, AuthMessages.suspended);
  // After "This wasn't me" the password may be the intruder's too: only a passcode reset, which proves the mailbox,
  // lets it sign in again (docs/security.md).
  if (user.passwordResetRequired) throw new ApiError(401, AuthMessages.passwordMustBeReset, { detail: AuthMessages.passwordMustBeResetDetail });
  if (needsRehash) {
    // Imported Coder hashes (pbkdf2) and older parameters are upgraded to argon2id while we hold the password.
    const hashedPassword = await hashPassword(password);
    await db.update(users).set({ hashedPassword }).where(eq(users.id, user.id));
    user.hashedPassword = hashedPassword;
  }
  return user;
}
