const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
const absolute = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

const STEPS: [Intl.RelativeTimeFormatUnit, number][] = [
  ["second", 60],
  ["minute", 60],
  ["hour", 24],
  ["day", 7],
  ["week", 4.35],
  ["month", 12],
  ["year", Number.POSITIVE_INFINITY],
];

/** "3 minutes ago", "in 2 hours": for lists; the exact time goes in the element's title and datetime. */
export function fromNow(iso: string, now = Date.now()): string {
  let amount = (Date.parse(iso) - now) / 1000;
  // Within a few seconds either way is "now": the server's clock and the browser's may differ by that much, and a
  // notification that has just arrived should not read "in 2 seconds".
  if (Math.abs(amount) < 10) return relative.format(0, "second");
  for (const [unit, size] of STEPS) {
    if (Math.abs(amount) < size) return relative.format(Math.round(amount), unit);
    amount /= size;
  }
  return absolute.format(new Date(iso));
}

export function dateTime(iso: string): string {
  return absolute.format(new Date(iso));
}
