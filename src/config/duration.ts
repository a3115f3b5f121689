/**
 * Parses Go-style durations as used by Coder's configuration ("24h", "90m", "1h30m", "45s", "500ms")
 * and plain integers (seconds). Returns milliseconds, or undefined when the text is not a duration.
 */
export function parseDuration(text: string): number | undefined {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) {
    const ms = Number(trimmed) * 1000;
    return Number.isSafeInteger(ms) ? ms : undefined;
  }
  const unitMs: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
  const part = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g;
  let total = 0;
  let consumed = 0;
  for (const match of trimmed.matchAll(part)) {
    if (match.index !== consumed) return undefined;
    total += Number(match[1]) * (unitMs[match[2] ?? ""] ?? Number.NaN);
    consumed += match[0].length;
  }
  if (consumed === 0 || consumed !== trimmed.length) return undefined;
  const ms = Math.round(total);
  // Beyond 2^53 ms (285,000 years) a duration is a typo, and arithmetic on it stops being exact.
  return Number.isSafeInteger(ms) ? ms : undefined;
}
