import { useEffect, useState } from "preact/hooks";
import type { ApiProblem } from "./api";
import { refreshSession } from "./session";

/** Waits between automatic tries: 2 s, 4 s, 8 s, … up to 30 s, so a server that is back is found soon. */
function delayFor(attempt: number): number {
  return Math.min(30_000, 1000 * 2 ** attempt);
}

/**
 * The start-up page when Herald could not be asked where the person stands (docs/dashboard.md, "When Herald cannot
 * be reached"): what failed, a Retry button, and a countdown to the next automatic try.
 */
export function Unreachable({ problem, attempt }: { problem: ApiProblem; attempt: number }) {
  const [left, setLeft] = useState(Math.round(delayFor(attempt) / 1000));
  const [trying, setTrying] = useState(false);
  const retry = async () => {
    setTrying(true);
    try {
      await refreshSession();
    } finally {
      setTrying(false);
    }
  };
  useEffect(() => {
    const due = Date.now() + delayFor(attempt);
    setLeft(Math.round(delayFor(attempt) / 1000));
    const tick = setInterval(() => {
      const seconds = Math.max(0, Math.round((due - Date.now()) / 1000));
      setLeft(seconds);
      if (seconds === 0) {
        clearInterval(tick);
        void retry();
      }
    }, 1000);
    return () => clearInterval(tick);
  }, [attempt]);
  return (
    <section class="page narrow">
      <h1>Herald cannot be reached</h1>
      <div class="alert alert-error" role="alert">
        <strong>{problem.message}</strong>
        {problem.detail ? <span> {problem.detail}</span> : null}
      </div>
      <p role="status">{trying ? "Trying again…" : `Trying again in ${left} s.`}</p>
      <button type="button" onClick={() => void retry()} aria-disabled={trying}>
        Retry now
      </button>
    </section>
  );
}
