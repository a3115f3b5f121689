/**
 * The signature check of src/passkeys/webauthn.ts (docs/passkeys.md, "How an answer is checked"), on the keys and
 * signatures where hand-written byte handling goes wrong: ES256 signatures whose r or s begins with a zero byte (DER
 * writes such an integer shorter, or with only its sign byte left as 0x00, and WebCrypto needs it back at 32 bytes),
 * ES256 public keys whose x or y begins with a zero byte, and DER that is not a P-256 signature. Keys and signatures
 * are made here with WebCrypto, through the software authenticator (test/passkeys/authenticator.ts).
 *
 * The loops are deterministic enough never to flake. A signature's r or s begins with a zero byte with probability
 * 1/256, half of those followed by a byte below 0x80 (DER then writes the integer in 31 bytes or fewer) and half by
 * one of 0x80 or more (DER keeps 32 bytes, the first 0x00): each of these four shapes has probability 1/512 for every
 * signature. The signature loop stops once each shape has occurred, about 1,070 signatures on average, and fails
 * after 12,000: the chance that 12,000 signatures hold none of one shape is (511/512)^12000, about 6·10⁻¹¹. Likewise
 * a key's x or y begins with a zero byte with probability 1/256; the key loop stops once both have occurred and
 * fails after 6,000 keys, where the chance to have missed one is (255/256)^6000, again about 6·10⁻¹¹.
 */
import { decodeCBOR } from "@levischuck/tiny-cbor";
import { decodeHex } from "@oslojs/encoding";
import { describe, expect, it } from "vitest";
import { importPasskeyKey, verifySignature } from "../../src/passkeys/webauthn";
import { derSignature, SoftAuthenticator } from "./authenticator";

const hex = (bytes: Uint8Array) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
const message = () => crypto.getRandomValues(new Uint8Array(80));

describe('docs/passkeys.md, "How an answer is checked": ES256 signatures and keys with leading zero bytes', () => {
  it("every ES256 signature verifies, those whose r or s begins with a zero byte among them, in both DER shapes", async () => {
    const failed: string[] = [];
    // How many signatures had r or s begin with a zero byte, by the length DER writes that integer in.
    const seen = { rShort: 0, rSignByte: 0, sShort: 0, sSignByte: 0 };
    let signatures = 0;
    while (Object.values(seen).includes(0) && signatures < 12_000) {
      // A new key every 100 signatures: the zero bytes are the signature's, whatever the key.
      const authenticator = await SoftAuthenticator.create("ES256");
      const key = await importPasskeyKey(await authenticator.coseKey());
      for (let i = 0; i < 100; i++, signatures++) {
        const data = message();
        const raw = await authenticator.rawSignature(data);
        if (raw[0] === 0) (raw[1] ?? 0) < 0x80 ? seen.rShort++ : seen.rSignByte++;
        if (raw[32] === 0) (raw[33] ?? 0) < 0x80 ? seen.sShort++ : seen.sSignByte++;
        const der = derSignature(raw);
        if (!(await verifySignature(key, data, der))) failed.push(hex(der));
      }
    }
    expect(failed, `of ${signatures} signatures`).toEqual([]);
    for (const [shape, count] of Object.entries(seen)) expect(count, `no ${shape} in ${signatures} signatures`).toBeGreaterThan(0);
  });

  it("every ES256 public key imports and verifies, those whose x or y begins with a zero byte among them", async () => {
    const failed: string[] = [];
    const seen = { x: 0, y: 0 };
    let keys = 0;
    while ((seen.x === 0 || seen.y === 0) && keys < 6_000) {
      keys++;
      const authenticator = await SoftAuthenticator.create("ES256");
      const cose = await authenticator.coseKey();
      const parameters = decodeCBOR(cose);
      const [x, y] = parameters instanceof Map ? [parameters.get(-2), parameters.get(-3)] : [];
      expect(x instanceof Uint8Array && x.length === 32 && y instanceof Uint8Array && y.length === 32, "x and y of 32 bytes").toBe(true);
      const zeroX = x instanceof Uint8Array && x[0] === 0;
      const zeroY = y instanceof Uint8Array && y[0] === 0;
      if (zeroX) seen.x++;
      if (zeroY) seen.y++;
      // Every key is imported (a refused one throws); one signature checked with those that have a zero byte.
      const key = await importPasskeyKey(cose);
      if (zeroX || zeroY) {
        const data = message();
        if (!(await verifySignature(key, data, derSignature(await authenticator.rawSignature(data))))) failed.push(hex(cose));
      }
    }
    expect(failed).toEqual([]);
    expect(seen.x, `no x with a leading zero byte in ${keys} keys`).toBeGreaterThan(0);
    expect(seen.y, `no y with a leading zero byte in ${keys} keys`).toBeGreaterThan(0);
  });

  it("DER that is no P-256 signature is refused, never thrown", async () => {
    const authenticator = await SoftAuthenticator.create("ES256");
    const key = await importPasskeyKey(await authenticator.coseKey());
    const data = message();
    const good = derSignature(await authenticator.rawSignature(data));
    expect(await verifySignature(key, data, good)).toBe(true);
    // P-256's group order n: r or s must be below it.
    const n = decodeHex("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551");
    const integer = (value: Uint8Array) => [0x02, value.length, ...value];
    const sequence = (...parts: number[][]) => new Uint8Array([0x30, parts.flat().length, ...parts.flat()]);
    const one = [0x02, 0x01, 0x01];
    const cases: [string, Uint8Array][] = [
      ["empty", new Uint8Array()],
      ["bytes after the SEQUENCE", new Uint8Array([...good, 0x00])],
      ["r = n", sequence(integer(new Uint8Array([0, ...n])), one)],
      ["s = n", sequence(one, integer(new Uint8Array([0, ...n])))],
      ["s = 0", sequence(one, [0x02, 0x01, 0x00])],
      ["a negative r (no sign byte before 0xff)", sequence(integer(new Uint8Array(32).fill(0xff)), one)],
      ["r of 40 bytes", sequence(integer(new Uint8Array(40).fill(0x11)), one)],
      ["the r ‖ s WebCrypto makes, not DER", await authenticator.rawSignature(data)],
      ["one bit flipped", good.map((b, i) => (i === good.length - 1 ? b ^ 1 : b))],
    ];
    for (const [label, signature] of cases) expect(await verifySignature(key, data, signature), label).toBe(false);
  });
});
