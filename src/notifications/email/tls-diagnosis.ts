/**
 * Why a server's certificate was refused, for the delivery log. workerd reports every refused certificate to the
 * Worker as the same opaque error, so after a refusal Herald starts a TLS 1.2 handshake of its own on a fresh
 * connection, reads the certificate the server sends in clear (TLS 1.2 sends it unencrypted; the handshake is
 * abandoned right after), and says which check it fails: expiry, the host name, or else the issuer.
 *
 * Diagnostic only: nothing here decides whether a certificate is trusted — the runtime already refused it. A server
 * that will not speak TLS 1.2, or sends something unparseable, gets no diagnosis, and the generic reason stands.
 * docs/email.md has the background.
 */

const encoder = new TextEncoder();

const u16 = (n: number) => [(n >> 8) & 0xff, n & 0xff];
const u24 = (n: number) => [(n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff];
const withLength16 = (bytes: number[]) => [...u16(bytes.length), ...bytes];

/** A TLS 1.2 ClientHello for `host` with the cipher suites and groups servers commonly accept. */
export function clientHello(host: string): Uint8Array {
  const suites = [0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc013, 0xc014, 0x009c, 0x009d, 0x002f, 0x0035].flatMap(u16);
  const name = [...encoder.encode(host)];
  const isIp = /^[\d.]+$|:/.test(host);
  const extension = (type: number, body: number[]) => [...u16(type), ...withLength16(body)];
  const extensions = [
    ...(isIp ? [] : extension(0x0000, withLength16([0, ...withLength16(name)]))),
    ...extension(0x000a, withLength16([0x001d, 0x0017, 0x0018].flatMap(u16))),
    ...extension(0x000b, [1, 0]),
    ...extension(0x000d, withLength16([0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601].flatMap(u16))),
  ];
  const random = [...crypto.getRandomValues(new Uint8Array(32))];
  const body = [0x03, 0x03, ...random, 0, ...withLength16(suites), 1, 0, ...withLength16(extensions)];
  const handshake = [0x01, ...u24(body.length), ...body];
  return Uint8Array.from([0x16, 0x03, 0x01, ...u16(handshake.length), ...handshake]);
}

/**
 * Collects the server's TLS records and yields the first certificate of its Certificate message. `push` returns the
 * DER bytes once they are complete, `null` when the server answered with an alert or something that is not TLS, and
 * undefined while more bytes are needed.
 */
export class CertificateCollector {
  private records: Uint8Array = new Uint8Array(0);
  private handshake: Uint8Array = new Uint8Array(0);

  push(chunk: Uint8Array): Uint8Array | null | undefined {
    this.records = concat(this.records, chunk);
    while (this.records.length >= 5) {
      const type = this.records[0] ?? 0;
      const length = ((this.records[3] ?? 0) << 8) | (this.records[4] ?? 0);
      if (this.records.length < 5 + length) break;
      if (type !== 0x16) return null;
      this.handshake = concat(this.handshake, this.records.subarray(5, 5 + length));
      this.records = this.records.slice(5 + length);
    }
    let offset = 0;
    while (this.handshake.length >= offset + 4) {
      const type = this.handshake[offset] ?? 0;
      const length = readUint(this.handshake, offset + 1, 3);
      if (this.handshake.length < offset + 4 + length) return undefined;
      if (type === 11) {
        const body = this.handshake.subarray(offset + 4, offset + 4 + length);
        const first = readUint(body, 3, 3);
        return body.length >= 6 + first && first > 0 ? body.slice(6, 6 + first) : null;
      }
      offset += 4 + length;
    }
    return undefined;
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function readUint(bytes: Uint8Array, offset: number, size: number): number {
  let n = 0;
  for (let i = 0; i < size; i++) n = n * 256 + (bytes[offset + i] ?? 0);
  return n;
}

/** One DER element: its tag and where its contents start and end. */
interface Tlv {
  tag: number;
  start: number;
  end: number;
}

function tlv(bytes: Uint8Array, offset: number): Tlv {
  const tag = bytes[offset];
  let length = bytes[offset + 1];
  if (tag === undefined || length === undefined) throw new RangeError("truncated DER");
  let start = offset + 2;
  if (length & 0x80) {
    const size = length & 0x7f;
    if (size === 0 || size > 3) throw new RangeError("unsupported DER length");
    length = readUint(bytes, start, size);
    start += size;
  }
  if (start + length > bytes.length) throw new RangeError("truncated DER");
  return { tag, start, end: start + length };
}

function children(bytes: Uint8Array, parent: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let offset = parent.start; offset < parent.end; ) {
    const child = tlv(bytes, offset);
    out.push(child);
    offset = child.end;
  }
  return out;
}

const OID_COMMON_NAME = "55 04 03";
const OID_SUBJECT_ALT_NAME = "55 1d 11";
const hex = (bytes: Uint8Array) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(" ");
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/** UTCTime or GeneralizedTime (RFC 5280 §4.1.2.5) as epoch ms. */
function time(bytes: Uint8Array, element: Tlv): number {
  const value = text(bytes.subarray(element.start, element.end));
  const full = element.tag === 0x17 ? `${Number(value.slice(0, 2)) >= 50 ? "19" : "20"}${value}` : value;
  const match = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/.exec(full);
  if (!match) throw new RangeError("unsupported time");
  const [, y, mo, d, h, mi, s] = match.map(Number) as number[];
  return Date.UTC(y ?? 0, (mo ?? 1) - 1, d ?? 1, h ?? 0, mi ?? 0, s ?? 0);
}

function commonName(bytes: Uint8Array, name: Tlv): string | undefined {
  for (const set of children(bytes, name)) {
    for (const attribute of children(bytes, set)) {
      const [oid, value] = children(bytes, attribute);
      if (oid && value && hex(bytes.subarray(oid.start, oid.end)) === OID_COMMON_NAME) return text(bytes.subarray(value.start, value.end));
    }
  }
  return undefined;
}

interface CertificateFacts {
  notBefore: number;
  notAfter: number;
  /** DNS names and IP addresses of the subjectAltName extension. */
  names: string[];
  issuer: string | undefined;
}

function certificateFacts(der: Uint8Array): CertificateFacts {
  const [tbs] = children(der, tlv(der, 0));
  if (!tbs) throw new RangeError("no TBSCertificate");
  const fields = children(der, tbs);
  const rest = fields[0]?.tag === 0xa0 ? fields.slice(1) : fields;
  const [, , issuer, validity, , , ...optional] = rest;
  if (!issuer || !validity) throw new RangeError("incomplete TBSCertificate");
  const [notBefore, notAfter] = children(der, validity);
  if (!notBefore || !notAfter) throw new RangeError("no validity");
  const names: string[] = [];
  const extensions = optional.find((f) => f.tag === 0xa3);
  const list = extensions ? children(der, extensions)[0] : undefined;
  for (const extension of list ? children(der, list) : []) {
    const parts = children(der, extension);
    const oid = parts[0];
    const value = parts[parts.length - 1];
    if (!oid || !value || hex(der.subarray(oid.start, oid.end)) !== OID_SUBJECT_ALT_NAME) continue;
    const [sequence] = children(der, value);
    for (const general of sequence ? children(der, sequence) : []) {
      const content = der.subarray(general.start, general.end);
      if (general.tag === 0x82) names.push(text(content).toLowerCase());
      if (general.tag === 0x87 && content.length === 4) names.push(Array.from(content).join("."));
    }
  }
  return { notBefore: time(der, notBefore), notAfter: time(der, notAfter), names, issuer: commonName(der, issuer) };
}

/** RFC 6125 matching: exact, or a wildcard standing for exactly one left-most label. */
function matches(host: string, name: string): boolean {
  const h = host.toLowerCase();
  if (name === h) return true;
  return name.startsWith("*.") && h.includes(".") && h.slice(h.indexOf(".") + 1) === name.slice(2);
}

/** Which check the certificate fails for `host` at `now`; undefined when the bytes are not a certificate we can read. */
export function describeCertificate(der: Uint8Array, host: string, now: number): string | undefined {
  let facts: CertificateFacts;
  try {
    facts = certificateFacts(der);
  } catch {
    return undefined;
  }
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  if (now > facts.notAfter) return `the server's certificate expired on ${day(facts.notAfter)}`;
  if (now < facts.notBefore) return `the server's certificate is not valid until ${day(facts.notBefore)}`;
  if (!facts.names.some((name) => matches(host, name))) {
    return `the server's certificate does not name ${host} (it names ${facts.names.join(", ") || "no host"})`;
  }
  // In date and naming the host: of the runtime's checks only the chain is left, which this diagnosis cannot verify
  // (it has no trust store), so it says what it saw and leaves the verdict to the refusal it explains.
  return `the runtime refused the server's certificate, which is in date and names ${host}, so it refused the chain (issuer: ${facts.issuer ?? "unnamed"})`;
}
