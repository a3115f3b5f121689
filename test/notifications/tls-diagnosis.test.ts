import * as fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CertificateCollector, clientHello, describeCertificate } from "../../src/notifications/email/tls-diagnosis";

// The certificate diagnosis reads bytes a broken or hostile server sends after a refused handshake
// (docs/email.md); the SMTP matrix (test/notifications/email-smtp.test.ts) checks its verdicts on real certificates. Here: it never
// throws, whatever arrives, and it stops at an alert.

describe("TLS certificate diagnosis", () => {
  it("a ClientHello is one TLS handshake record offering TLS 1.2 and naming the host", () => {
    const hello = clientHello("mail.example.com");
    expect([...hello.subarray(0, 3)]).toEqual([0x16, 0x03, 0x01]);
    expect((hello[3] ?? 0) * 256 + (hello[4] ?? 0)).toBe(hello.length - 5);
    expect([...hello.subarray(9, 11)]).toEqual([0x03, 0x03]);
    expect(new TextDecoder().decode(hello)).toContain("mail.example.com");
  });

  it("an alert instead of a certificate: no diagnosis", () => {
    expect(new CertificateCollector().push(Uint8Array.from([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28]))).toBeNull();
  });

  it("a certificate split across records and reads is found once complete", () => {
    const der = Uint8Array.from([0x30, 0x03, 0x02, 0x01, 0x05]);
    const certificate = [0x0b, 0, 0, 11, 0, 0, 8, 0, 0, 5, ...der];
    const record = (bytes: number[]) => [0x16, 0x03, 0x03, 0, bytes.length, ...bytes];
    const stream = Uint8Array.from([...record([0x02, 0, 0, 0]), ...record(certificate.slice(0, 6)), ...record(certificate.slice(6))]);
    const collector = new CertificateCollector();
    expect(collector.push(stream.subarray(0, 7))).toBeUndefined();
    expect(collector.push(stream.subarray(7))).toEqual(der);
  });

  it("any bytes at all: never throws", () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 5 }), fc.uint8Array({ maxLength: 600 }), (chunks, der) => {
        const collector = new CertificateCollector();
        for (const chunk of chunks) collector.push(chunk);
        const verdict = describeCertificate(der, "localhost", Date.now());
        expect(verdict === undefined || typeof verdict === "string").toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});
