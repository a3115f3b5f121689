import { env } from "cloudflare:workers";
import packageList from "@zxcvbn-ts/language-common/dist/passwords.json.mjs";
import { describe, expect, it } from "vitest";
import { AuthMessages } from "../../src/auth/messages";
import { commonPasswords } from "../../src/auth/passwords/common-list";
import { CURRENT_ARGON2_PARAMS, hashPassword, verifyPassword } from "../../src/auth/passwords/hash";
import { checkPasswordPolicy, type PasswordContext } from "../../src/auth/passwords/policy";
import { coderHash } from "../fixtures/coder-hash";

const STRONG = "mellow orbit cactus lantern";

describe("hashPassword / verifyPassword", () => {
  it("a stored hash asking for more than the caps (64 MiB, 16 passes, 8 lanes) is refused unread, never computed (docs/asvs.md, 1.4.2)", async () => {
    const stored = await hashPassword(STRONG);
    for (const [from, to] of [
      ["m=19456", "m=4194304"],
      ["t=2", "t=4000"],
      ["p=1", "p=255"],
    ] as const) {
      const inflated = stored.replace(from, to);
      expect(inflated).not.toBe(stored);
      // The right password: only the refused parameters stand between it and a match.
      expect(await verifyPassword(inflated, STRONG)).toEqual({ valid: false, needsRehash: false });
    }
    expect(await verifyPassword(stored, STRONG)).toMatchObject({ valid: true });
  });

  it("produces an argon2id PHC string with the current parameters and a fresh salt", async () => {
    const { memoryCost, timeCost, parallelism } = CURRENT_ARGON2_PARAMS;
    expect({ memoryCost, timeCost, parallelism }).toEqual({ memoryCost: 19_456, timeCost: 2, parallelism: 1 });
    const first = await hashPassword(STRONG);
    const second = await hashPassword(STRONG);
    const phc = /^\$argon2id\$v=19\$m=19456,t=2,p=1\$([A-Za-z0-9+/]{22})\$([A-Za-z0-9+/]{43})$/;
    expect(first).toMatch(phc); // 22 chars = 16-byte salt, 43 chars = 32-byte hash
    expect(second).toMatch(phc);
    expect(first.split("$")[4]).not.toBe(second.split("$")[4]);
  });

  it("accepts the right password and refuses a wrong one", async () => {
    const encoded = await hashPassword(STRONG);
    expect(await verifyPassword(encoded, STRONG)).toEqual({ valid: true, needsRehash: false });
    expect(await verifyPassword(encoded, `${STRONG}!`)).toEqual({ valid: false, needsRehash: false });
    expect(await verifyPassword(encoded, "")).toEqual({ valid: false, needsRehash: false });
  });

  it("hashes every UTF-8 byte of non-ASCII passwords (standard argon2id output)", async () => {
    const password = "p\u00e4ssw\u00f6rd-\u{1F600}-\u03A9";
    // Computed with Node's crypto.argon2Sync (OpenSSL) for this password and the salt "herald-test-salt".
    const reference = "$argon2id$v=19$m=19456,t=2,p=1$aGVyYWxkLXRlc3Qtc2FsdA$YsWShMIJEXZkkRCPmSgHBIpSjODHuzBrBOqTSWsTNXY";
    expect((await verifyPassword(reference, password)).valid).toBe(true);
    // Same UTF-16 length, same first bytes: a truncating implementation would accept this.
    expect((await verifyPassword(reference, "p\u00e4ssw\u00f6rd-\u{1F600}-X")).valid).toBe(false);
    const ours = await hashPassword(password);
    expect((await verifyPassword(ours, password)).valid).toBe(true);
    expect((await verifyPassword(ours, "p\u00e4ssw\u00f6rd-\u{1F600}-\u03A8")).valid).toBe(false);
  });

  it("compares NFKC-normalised passwords", async () => {
    const encoded = await hashPassword("\uFF4D\uFF45\uFF4C\uFF4C\uFF4F\uFF57 orbit cactus lantern"); // fullwidth "mellow"
    expect((await verifyPassword(encoded, STRONG)).valid).toBe(true);
  });

  // docs/security.md, "Password hashing": hashes already stored keep verifying, whichever library hash.ts uses.
  it("verifies PHC strings that @phi-ag/argon2 0.5.28 wrote through hash.ts, non-ASCII passwords included", async () => {
    // Written by hashPassword() at commit 3fbe5bb; each also matches Node's crypto.argon2Sync (OpenSSL) for the
    // NFKC form of its password.
    const stored: [password: string, encoded: string][] = [
      ["mellow orbit cactus lantern", "$argon2id$v=19$m=19456,t=2,p=1$uk5/HyWiqASorW2ETB9E4g$CGM2UIYK6qyfCEKIwldNty87xGGlwMZa8KfDdTuh+wI"],
      [
        "Gr\u00fc\u00dfe aus K\u00f6ln, \u00e7a va \u2764",
        "$argon2id$v=19$m=19456,t=2,p=1$QLnaAAfv9vzjoEZq1utdBw$4SCWuQRZejNOLeAdst+g26qNPEV3UiQSKh8uLd2pleM",
      ],
      [
        "\u{1F510}\u{1F5DD} \u5bc6\u7801\u5f88\u957f \u043f\u0430\u0440\u043e\u043b\u044c",
        "$argon2id$v=19$m=19456,t=2,p=1$CJpuZsgk9XyA0+SDEkzV8w$OcMlxworNTesfFCWiQaIai4sGAcYHYvYUGRgxi6eig8",
      ],
      // Fullwidth letters, the "ﬁ" ligature and circled digits: stored as their NFKC form "mellow fish 12".
      [
        "\uFF4D\uFF45\uFF4C\uFF4C\uFF4F\uFF57 \uFB01sh \u2460\u2461",
        "$argon2id$v=19$m=19456,t=2,p=1$rJl8uzCXcGcBWbgDCt76sQ$jbXR+3fRooYQ6tKORhyGTm/RAdoVrMS/+ZriliKgZsQ",
      ],
    ];
    for (const [password, encoded] of stored) {
      expect(await verifyPassword(encoded, password), password).toEqual({ valid: true, needsRehash: false });
      expect((await verifyPassword(encoded, `${password}.`)).valid, password).toBe(false);
    }
    expect((await verifyPassword(stored[3]?.[1], "mellow fish 12")).valid).toBe(true);
  });

  it("asks for a rehash of a valid argon2id hash with older parameters", async () => {
    // m=4096, t=1 (Node's crypto.argon2Sync), password STRONG, salt "herald-test-salt".
    const weak = "$argon2id$v=19$m=4096,t=1,p=1$aGVyYWxkLXRlc3Qtc2FsdA$NBg76dLBG5rFkqNXP+X0wnJ3nJcGAWvBn1e40Exxl/4";
    expect(await verifyPassword(weak, "correct horse battery staple")).toEqual({ valid: true, needsRehash: true });
    expect(await verifyPassword(weak, STRONG)).toEqual({ valid: false, needsRehash: false });
  });

  it("verifies Coder's pbkdf2-sha256 hashes and asks for a rehash", async () => {
    const salt = crypto.getRandomValues(new Uint8Array(16));
    const encoded = await coderHash("hunter2-hunter2", salt);
    expect(encoded).toMatch(/^\$pbkdf2-sha256\$65535\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{86}$/);
    expect(await verifyPassword(encoded, "hunter2-hunter2")).toEqual({ valid: true, needsRehash: true });
    expect(await verifyPassword(encoded, "hunter2-hunter3")).toEqual({ valid: false, needsRehash: false });
  });

  it("refuses pbkdf2 hashes above the 100,000 iterations production WebCrypto allows", async () => {
    const encoded = await coderHash("hunter2-hunter2", new Uint8Array(16).fill(1), 100_001);
    expect(await verifyPassword(encoded, "hunter2-hunter2")).toEqual({ valid: false, needsRehash: false });
  });

  it("reports bad or missing stored hashes as invalid without throwing", async () => {
    const good = await hashPassword(STRONG);
    const coder = await coderHash(STRONG, new Uint8Array(16).fill(7), 1_000);
    const bad = [
      null,
      undefined,
      "",
      "not a hash",
      "$argon2id$",
      good.slice(0, -5),
      good.replace("$argon2id$", "$argon2i$"),
      good.replace("m=19456", "m=4194304"), // would need 4 GiB
      good.replace("m=19456", "m=abc"),
      `${good}$extra`,
      "$argon2id$v=19$m=19456,t=2,p=1$!!!!$????",
      coder.replace("$1000$", "$0$"),
      coder.replace("$1000$", "$-5$"),
      coder.slice(0, -4),
      coder.replace("$pbkdf2-sha256$", "$pbkdf2-sha512$"),
      coder.split("$").slice(0, 4).join("$"),
      "$pbkdf2-sha256$65535$$",
      "\u0000".repeat(64),
    ];
    for (const encoded of bad) {
      expect(await verifyPassword(encoded, STRONG), String(encoded)).toEqual({ valid: false, needsRehash: false });
    }
    // Still works afterwards.
    expect((await verifyPassword(good, STRONG)).valid).toBe(true);
  });

  it("spends about as long on a missing hash as on a real one", async () => {
    const encoded = await hashPassword(STRONG);
    const time = async (run: () => Promise<unknown>) => {
      const start = performance.now();
      for (let i = 0; i < 3; i++) await run();
      return (performance.now() - start) / 3;
    };
    const real = await time(() => verifyPassword(encoded, "wrong password"));
    const missing = await time(() => verifyPassword(null, "wrong password"));
    console.log(`argon2id verify: ${real.toFixed(1)} ms (real hash), ${missing.toFixed(1)} ms (dummy)`);
    if (real > 0) expect(missing / real).toBeGreaterThan(0.5);
  });
});

describe('checkPasswordPolicy (docs/security.md, "Password policy")', () => {
  const ok = { valid: true, details: "" };
  const check = (password: string, context?: PasswordContext) => checkPasswordPolicy(env.ASSETS, password, context);

  it("reads, through the ASSETS binding, exactly zxcvbn-ts's list of common passwords, in its order", async () => {
    const loaded = await commonPasswords(env.ASSETS);
    expect(loaded.length).toBe(packageList.length);
    expect(loaded.length).toBeGreaterThanOrEqual(10_000);
    // The order is zxcvbn's rank of a match, so the estimate is the same as with the list bundled.
    expect(loaded).toEqual(packageList);
  });

  it("refuses a password from anywhere in the list as too common, up to its last entry long enough to be checked", async () => {
    const tooCommon = { valid: false, details: AuthMessages.passwordTooCommon };
    expect(await check("password1234")).toEqual(tooCommon);
    expect(await check("pandemonium")).toEqual(tooCommon);
    const last = packageList.findLast((word) => word.length >= 8) ?? "";
    expect(packageList.indexOf(last)).toBeGreaterThan(packageList.length - 10);
    expect(await check(last)).toEqual(tooCommon);
  });

  it("counts code points after NFKC and never truncates", async () => {
    expect(await check("Xq7#vLp")).toEqual({
      valid: false,
      details: AuthMessages.passwordTooShort(8),
    });
    // 8 astral characters are 16 UTF-16 units but 8 code points: long enough, however weak they may be.
    const emoji = "\u{1F600}\u{1F680}\u{1F30D}\u{1F3B2}\u{1F9E9}\u{1F344}\u{1F6F8}\u{1F9CA}";
    expect(emoji.length).toBe(16);
    expect((await check(emoji)).details).not.toMatch(/at least/);
    expect((await check(emoji.slice(0, 14))).details).toBe(AuthMessages.passwordTooShort(8));
    // NFKC: the ligature "ﬃ" becomes "ffi" (3 code points), so 6 of them are long enough...
    expect((await check("\uFB03".repeat(6))).details).not.toMatch(/at least/);
    // ...and fullwidth letters are their ASCII counterparts, so this is the common password "password".
    expect(await check("\uFF50\uFF41\uFF53\uFF53\uFF57\uFF4F\uFF52\uFF44")).toEqual({
      valid: false,
      details: AuthMessages.passwordTooCommon,
    });
  });

  it("accepts 256 code points and rejects 257", async () => {
    const words = "mellow orbit cactus lantern quiet river ";
    const long = words.repeat(10).slice(0, 256);
    expect([...long].length).toBe(256);
    expect(await check(long)).toEqual(ok);
    expect(await check(`${long}x`)).toEqual({
      valid: false,
      details: AuthMessages.passwordTooLong(256),
    });
    // 256 astral code points (512 UTF-16 units) are still within the limit.
    expect((await check("\u{1F600}\u{1F680}\u{1F30D}\u{1F3B2}".repeat(64))).details).not.toMatch(/at most/);
  });

  it("rejects common passwords case-insensitively", async () => {
    for (const password of ["password", "PASSWORD", "Password1", "qwertyuiop", "iloveyou"]) {
      expect(await check(password), password).toEqual({ valid: false, details: AuthMessages.passwordTooCommon });
    }
  });

  it("rejects passwords containing the username or the e-mail local part", async () => {
    const context = { email: "Zanzibar.Quill@example.com", username: "frostbyte", name: "Zed Quill" };
    const personal = { valid: false, details: AuthMessages.passwordPersonal };
    expect(await check("my FROSTBYTE tundra lamp", context)).toEqual(personal);
    expect(await check("zanzibar.quill orbit lantern", context)).toEqual(personal);
    expect(await check(STRONG, context)).toEqual(ok);
    // Context words shorter than 3 characters are not forbidden.
    expect(await check(STRONG, { email: "me@example.com", username: "or" })).toEqual(ok);
  });

  it("rejects weak passwords with zxcvbn's reason", async () => {
    for (const password of ["aaaaaaaaaaaa", "abcdefgh1234", "dragon2019", "zanzibar1"]) {
      const result = await check(password);
      expect(result.valid, password).toBe(false);
      expect(result.details, password).toMatch(/^Password is too (weak: .+\.|common\.)$/);
    }
    // The reason is zxcvbn's own warning.
    expect((await check("aaaaaaaaaaaa")).details).toBe(AuthMessages.passwordTooWeak('Repeated characters like "aaa" are easy to guess.'));
  });

  it("accepts a strong passphrase", async () => {
    expect(await check(STRONG)).toEqual(ok);
    expect(await check("kx8#Lq2!vN-Tz")).toEqual(ok);
  });
});
