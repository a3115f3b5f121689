/**
 * At most `n` of the functions given to the returned runner are in flight at once; the rest wait their turn, first
 * come first served. One runner is shared by everything an invocation does, so its whole fan-out stays under `n`
 * (docs/broadcasts-at-scale.md: 50 inbox RPCs in flight per consumer invocation).
 */
export function limiter(n: number): <T>(task: () => Promise<T>) => Promise<T> {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (task) => {
    // A finishing task hands its slot straight to the next waiter, so no newcomer can slip in between.
    if (running >= n) await new Promise<void>((resume) => waiting.push(resume));
    else running += 1;
    try {
      return await task();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running -= 1;
    }
  };
}
