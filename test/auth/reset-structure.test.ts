import { describe, expect, it } from "vitest";
import { checkResetAttempt, type ResetChecks } from "../../src/auth/password-reset";
import type { UserRow } from "../../src/db/schema";

// A4 must do the same work whatever the e-mail names (docs/security.md): the same lookups and the same password
// hashing, in the same order, for an unknown e-mail as for a real account with a wrong code. Times are measured by
// `npm run bench`; here the structure is checked with recording stand-ins for D1 and argon2.

const ACCOUNT: UserRow = {
  id: "0193b3a2-0000-7000-8000-000000000001",
  email: "ada@herald.test",
  username: "ada",
  name: "",
  searchName: "",
  searchEmail: "ada@herald.test",
  hashedPassword: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA",
  loginType: "password",
  status: "active",
  roles: [],
  isSystem: false,
  passwordResetRequired: false,
  deleted: false,
  createdAt: "2026-11-24T00:00:00.000Z",
  updatedAt: "2026-11-24T00:00:00.000Z",
  lastSeenAt: null,
};

function recorder(account: UserRow | undefined, codeOk: boolean, samePassword = false) {
  const calls: string[] = [];
  const checks: ResetChecks = {
    findAccount: async () => {
      calls.push("findAccount");
      return account;
    },
    verifyPassword: async (hash) => {
      calls.push(`verifyPassword(${hash === undefined || hash === null ? "dummy" : "account hash"})`);
      return { valid: samePassword };
    },
    passcodeMatches: async (userId) => {
      calls.push(`passcodeMatches(${userId === ACCOUNT.id ? "account" : "nobody"})`);
      return codeOk;
    },
  };
  return { calls, checks };
}

const attempt = { email: "ada@herald.test", one_time_passcode: crypto.randomUUID(), password: "violet-anchor-mountain-73" };

describe("A4 does the same work for every e-mail", () => {
  it("an unknown e-mail, an account with a wrong code, and a right one: one lookup, one hash, one passcode check each", async () => {
    const unknown = recorder(undefined, false);
    const wrongCode = recorder(ACCOUNT, false);
    const rightCode = recorder(ACCOUNT, true);
    const notPassword = recorder({ ...ACCOUNT, loginType: "oidc", hashedPassword: null }, false);
    expect(await checkResetAttempt(unknown.checks, attempt)).toEqual({ outcome: "incorrect" });
    expect(await checkResetAttempt(wrongCode.checks, attempt)).toEqual({ outcome: "incorrect" });
    expect(await checkResetAttempt(rightCode.checks, attempt)).toEqual({ outcome: "accepted", user: ACCOUNT });
    expect(await checkResetAttempt(notPassword.checks, attempt)).toEqual({ outcome: "incorrect" });
    const steps = (calls: string[]) => calls.map((c) => c.replace(/\(.*\)/, ""));
    for (const { calls } of [unknown, wrongCode, rightCode, notPassword])
      expect(steps(calls)).toEqual(["findAccount", "verifyPassword", "passcodeMatches"]);
    // The unknown e-mail hashes against the dummy and checks a passcode no row can have; nothing is spent on a real account.
    expect(unknown.calls).toEqual(["findAccount", "verifyPassword(dummy)", "passcodeMatches(nobody)"]);
    expect(wrongCode.calls).toEqual(["findAccount", "verifyPassword(account hash)", "passcodeMatches(account)"]);
  });

  it("the right code with the old password is told apart only after all the work", async () => {
    const same = recorder(ACCOUNT, true, true);
    expect(await checkResetAttempt(same.checks, attempt)).toEqual({ outcome: "same-password", user: ACCOUNT });
    expect(same.calls).toHaveLength(3);
  });
});
