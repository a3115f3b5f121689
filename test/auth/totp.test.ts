/**
 * The authenticator app's codes as docs/second-factor.md ("Authenticator app") states them: RFC 6238 with
 * HMAC-SHA-1, 30-second steps, the current step and one on either side, and the `otpauth://` URL an app scans.
 * otpauth computes them (with @noble/hashes' SHA-1): checked here against the RFC's own test vectors.
 */
import { describe, expect, it } from "vitest";
import { matchingStep, newTotpSecret, otpauthUrl, TOTP_PERIOD_SECONDS, totpCode, totpStep } from "../../src/auth/mfa/totp";

/** RFC 6238, Appendix B: the SHA-1 seed is the ASCII "12345678901234567890", here in base32. */
const RFC_SECRET = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ";

describe('RFC 6238 (docs/second-factor.md, "Authenticator app")', () => {
  // Appendix B's SHA-1 rows: Unix time in seconds → the 8-digit TOTP.
  const VECTORS: readonly [number, string][] = [
    [59, "94287082"],
    [1111111109, "07081804"],
    [1111111111, "14050471"],
    [1234567890, "89005924"],
    [2000000000, "69279037"],
    [20000000000, "65353130"],
  ];

  for (const [seconds, expected] of VECTORS) {
    it(`T = ${seconds} s gives ${expected}`, () => {
      expect(totpCode(RFC_SECRET, totpStep(seconds * 1000), 8)).toBe(expected);
    });
  }

  it("Herald's codes are the last 6 digits of the same truncation", () => {
    for (const [seconds, expected] of VECTORS) expect(totpCode(RFC_SECRET, totpStep(seconds * 1000))).toBe(expected.slice(2));
  });

  it("steps are 30 seconds long", () => {
    expect(TOTP_PERIOD_SECONDS).toBe(30);
    expect(totpStep(29_999)).toBe(0);
    expect(totpStep(30_000)).toBe(1);
  });
});

describe('which steps a code is accepted in (docs/second-factor.md, "Authenticator app")', () => {
  const secret = newTotpSecret();
  const now = 1_800_000_015_000;
  const step = totpStep(now);

  it("the current step, and one on either side", () => {
    for (const offset of [-1, 0, 1]) expect(matchingStep(secret, totpCode(secret, step + offset), now)).toBe(step + offset);
  });

  it("two steps away, on either side, is refused", () => {
    for (const offset of [-2, 2, -3, 3]) expect(matchingStep(secret, totpCode(secret, step + offset), now)).toBeUndefined();
  });

  it("a code of another secret, or not 6 digits, matches nothing", () => {
    expect(matchingStep(newTotpSecret(), totpCode(secret, step), now)).toBeUndefined();
    expect(matchingStep(secret, totpCode(secret, step, 8), now)).toBeUndefined();
    expect(matchingStep(secret, "", now)).toBeUndefined();
  });
});

describe("secrets and the app's URL", () => {
  it("a secret is 160 random bits in base32, new each time", () => {
    const a = newTotpSecret();
    expect(a).toMatch(/^[A-Z2-7]{32}$/);
    expect(newTotpSecret()).not.toBe(a);
  });

  it("the otpauth URL names the issuer twice and the account, with the secret and SHA-1, 6 digits, 30 s", () => {
    const url = new URL(otpauthUrl(RFC_SECRET, "herald.example.com", "ada@example.com"));
    expect(url.protocol).toBe("otpauth:");
    expect(url.host).toBe("totp");
    expect(decodeURIComponent(url.pathname)).toBe("/herald.example.com:ada@example.com");
    expect(Object.fromEntries(url.searchParams)).toEqual({
      issuer: "herald.example.com",
      secret: RFC_SECRET,
      algorithm: "SHA1",
      digits: "6",
      period: "30",
    });
  });
});
