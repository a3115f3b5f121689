import { useEffect, useState } from "preact/hooks";

/** How often relative times ("5 minutes ago") are worked out again: a page left open never shows a stale one. */
const TICK_MS = 30_000;

const listeners = new Set<(now: number) => void>();
let timer: ReturnType<typeof setInterval> | undefined;

/**
 * The time now, renewed every 30 seconds for as long as some component shows a relative time (docs/dashboard.md,
 * "Relative times"). One timer serves every such component, and it stops when the last one goes.
 */
export function useNow(): number {
  const [now, setNow] = useState(Date.now);
  useEffect(() => {
    listeners.add(setNow);
    // A component that mounts between ticks starts from the time it mounted, not the last tick's.
    setNow(Date.now());
    timer ??= setInterval(() => {
      const at = Date.now();
      for (const listener of listeners) listener(at);
    }, TICK_MS);
    return () => {
      listeners.delete(setNow);
      if (listeners.size === 0) {
        clearInterval(timer);
        timer = undefined;
      }
    };
  }, []);
  return now;
}
