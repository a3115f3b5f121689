import { encode } from "uqr";

/**
 * `text` as a QR code, drawn in the page as SVG: uqr encodes it (error correction M, the quiet zone of 4 modules the
 * standard asks for), and each dark module is one square of a single path. Nothing is fetched and no image service
 * sees the text, which here is a secret (docs/dashboard.md, "Security"). Dark on light in both themes, as scanners
 * expect.
 */
export function QrCode({ text, label }: { text: string; label: string }) {
  const { data, size } = encode(text, { ecc: "M", border: 4 });
  let path = "";
  data.forEach((row, y) => {
    row.forEach((dark, x) => {
      if (dark) path += `M${x} ${y}h1v1h-1z`;
    });
  });
  return (
    <svg class="qr-code" viewBox={`0 0 ${size} ${size}`} role="img" aria-label={label} shape-rendering="crispEdges">
      <rect class="qr-light" width={size} height={size} />
      <path class="qr-dark" d={path} />
    </svg>
  );
}
