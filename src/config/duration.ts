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

/** The shortest text `parseDuration` reads back as `ms` ("1h30m", "15m", "45s", "250ms"); "" for zero. */
export function formatDuration(ms: number): string {
  const units: [string, number][] = [
    ["d", 86_400_000],
    ["h", 3_600_000],
    ["m", 60_000],
    ["s", 1000],
    ["ms", 1],
  ];
  let rest = ms;
  let out = "";
  for (const [unit, size] of units) {
    const n = Math.floor(rest / size);
    if (n > 0) out += `${n}${unit}`;
    rest -= n * size;
  }
  return out;
}
