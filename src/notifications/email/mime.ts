/**
 * The one MIME message Herald sends: multipart/alternative with a text and an HTML part (docs/email.md explains why
 * this is ours and not a library's). Every header value goes through `headerValue`, so nothing a user wrote can end a
 * header line or start a new one: CR, LF and every other control character are removed before encoding.
 */

import type { Mailbox } from "./address";

export interface OutgoingEmail {
  from: Mailbox;
  to: string;
  subject: string;
  text: string;
  html: string;
  /** Without angle brackets: `<id>@<domain>`; the same on every retry of one message. */
  messageId: string;
  date: Date;
}

const CRLF = "\r\n";
/** RFC 2047 §2: an encoded-word is at most 75 characters; `=?UTF-8?B?` + `?=` leave 63, so 45 bytes of base64. */
const ENCODED_WORD_BYTES = 45;
/** RFC 5322 §2.1.1: lines SHOULD stay within 78 characters. */
const SOFT_LINE = 78;
const encoder = new TextEncoder();

/** C0 controls (CR and LF among them), DEL and C1 controls: never part of a header, collapsed to one space. */
const CONTROLS = /[\u0000-\u001f\u007f-\u009f]+/g;

export function stripControls(value: string): string {
  return value.replace(CONTROLS, " ");
}

function base64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** UTF-8 B encoded-words, each at most 75 characters, split only between code points (RFC 2047 §5). */
function encodedWords(value: string): string[] {
  const words: string[] = [];
  let chunk: number[] = [];
  for (const char of value) {
    const bytes = encoder.encode(char);
    if (chunk.length + bytes.length > ENCODED_WORD_BYTES) {
      words.push(`=?UTF-8?B?${base64(Uint8Array.from(chunk))}?=`);
      chunk = [];
    }
    chunk.push(...bytes);
  }
  if (chunk.length > 0) words.push(`=?UTF-8?B?${base64(Uint8Array.from(chunk))}?=`);
  return words;
}

/** Joins words with folding whitespace so that no line grows past 78 characters where a break is possible. */
function fold(name: string, words: string[]): string {
  let line = `${name}:`;
  let out = "";
  for (const word of words) {
    if (line.length + 1 + word.length > SOFT_LINE && line.length > name.length + 1) {
      out += `${line}${CRLF}`;
      line = "";
    }
    line += ` ${word}`;
  }
  return `${out}${line}`;
}

/**
 * One header field, folded. Printable ASCII without anything that looks like an encoded-word stays readable; any
 * other text is sent as encoded-words. Either way no line exceeds RFC 5322's 998 characters.
 */
function headerValue(name: string, value: string): string {
  const clean = stripControls(value).replace(/ {2,}/g, " ").trim();
  const words = clean.split(" ").filter((w) => w !== "");
  const plain = /^[\x20-\x7e]*$/.test(clean) && !clean.includes("=?") && words.every((w) => w.length <= SOFT_LINE - 2);
  return fold(name, plain ? words : encodedWords(clean));
}

/** `"Display Name" <address>`, the name quoted or encoded as needed; the bare address when there is no name. */
function mailboxHeader(name: string, mailbox: Mailbox): string {
  const display = stripControls(mailbox.name ?? "").trim();
  if (!display) return `${name}: ${mailbox.address}`;
  const printable = /^[\x20-\x7e]*$/.test(display) && !display.includes("=?");
  const phrase = printable ? `"${display.replace(/[\\"]/g, "\\$&")}"` : encodedWords(display).join(" ");
  return fold(name, [...phrase.split(" "), `<${mailbox.address}>`]);
}

/**
 * Quoted-printable (RFC 2045 §6.7) for the text parts: plain ASCII stays readable to filters and people, lines are
 * at most 76 characters, and line breaks are CRLF. Base64 text parts are what spam filters penalise.
 */
function quotedPrintable(text: string): string {
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  return lines
    .map((line) => {
      const bytes = encoder.encode(line);
      let out = "";
      let width = 0;
      bytes.forEach((byte, i) => {
        const last = i === bytes.length - 1;
        const literal = (byte >= 33 && byte <= 126 && byte !== 61) || ((byte === 32 || byte === 9) && !last);
        // A leading dot is encoded so the line can never be read as the end of DATA, whatever the transport does.
        const token = literal && !(byte === 46 && width === 0) ? String.fromCharCode(byte) : `=${byte.toString(16).toUpperCase().padStart(2, "0")}`;
        if (width + token.length > 75) {
          out += `=${CRLF}`;
          width = 0;
        }
        out += token;
        width += token.length;
      });
      return out;
    })
    .join(CRLF);
}

/** RFC 5322 date-time in UTC, e.g. `Tue, 24 Nov 2026 01:30:00 +0000`. */
function rfc5322Date(date: Date): string {
  return date.toUTCString().replace(/GMT$/, "+0000");
}

/** The whole message as it goes after DATA (CRLF line ends, not yet dot-stuffed). */
export function composeEmail(email: OutgoingEmail): string {
  // Derived from the Message-ID rather than random: every retry of a message has the same structure.
  const boundary = `=_herald_${email.messageId.replace(/[^A-Za-z0-9]/g, "").slice(0, 40)}`;
  const headers = [
    mailboxHeader("From", email.from),
    `To: ${email.to}`,
    headerValue("Subject", email.subject),
    `Date: ${rfc5322Date(email.date)}`,
    `Message-ID: <${email.messageId}>`,
    "MIME-Version: 1.0",
    `Content-Type: multipart/alternative; boundary="${boundary}"`,
  ];
  const part = (type: string, body: string) =>
    [`--${boundary}`, `Content-Type: ${type}; charset=UTF-8`, "Content-Transfer-Encoding: quoted-printable", "", quotedPrintable(body)].join(CRLF);
  return [...headers, "", part("text/plain", email.text), part("text/html", email.html), `--${boundary}--`, ""].join(CRLF);
}
