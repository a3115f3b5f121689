// The Herald icon a push notification shows (docs/push.md, "The dashboard"): a white H on the dashboard's accent blue
// in a rounded square, drawn here and written as a PNG, since a system notification may not render SVG. Built by
// scripts/build-ui.mjs; nothing but node:zlib.
import { crc32, deflateSync } from "node:zlib";

const ACCENT = [0x1f, 0x5f, 0xbf];
const SAMPLES = 4;

/** Coverage of the pixel at (x, y) of a `size` square: 0 outside the rounded square, 1 for the H, 2 for the rest. */
function shapeAt(x, y, size) {
  const radius = size * 0.22;
  const dx = Math.max(radius - x, 0, x - (size - radius));
  const dy = Math.max(radius - y, 0, y - (size - radius));
  if (dx * dx + dy * dy > radius * radius) return 0;
  const u = x / size;
  const v = y / size;
  const inStem = (u >= 0.3 && u <= 0.42) || (u >= 0.58 && u <= 0.7);
  const inBar = u >= 0.3 && u <= 0.7 && v >= 0.46 && v <= 0.56;
  return v >= 0.26 && v <= 0.76 && (inStem || inBar) ? 1 : 2;
}

function chunk(type, data) {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, "ascii");
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/** The icon as an RGBA PNG of `size` × `size` pixels, its edges smoothed by 4 × 4 samples a pixel. */
export function heraldIconPng(size) {
  const rows = [];
  for (let y = 0; y < size; y++) {
    const row = Buffer.alloc(1 + size * 4); // filter byte 0: none
    for (let x = 0; x < size; x++) {
      let white = 0;
      let blue = 0;
      for (let sy = 0; sy < SAMPLES; sy++) {
        for (let sx = 0; sx < SAMPLES; sx++) {
          const shape = shapeAt(x + (sx + 0.5) / SAMPLES, y + (sy + 0.5) / SAMPLES, size);
          if (shape === 1) white++;
          else if (shape === 2) blue++;
        }
      }
      const covered = white + blue;
      const at = 1 + x * 4;
      if (covered === 0) continue;
      for (let c = 0; c < 3; c++) row[at + c] = Math.round((white * 255 + blue * ACCENT[c]) / covered);
      row[at + 3] = Math.round((covered * 255) / (SAMPLES * SAMPLES));
    }
    rows.push(row);
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header.set([8, 6, 0, 0, 0], 8); // 8 bits a channel, RGBA, deflate, adaptive filtering, no interlace
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(Buffer.concat(rows), { level: 9 })),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}
