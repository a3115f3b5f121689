import { useCallback, useRef, useState } from "preact/hooks";
import { type ApiProblem, asProblem } from "../api";

export interface Action<A extends unknown[]> {
  run(...args: A): Promise<boolean>;
  pending: boolean;
  /** The last run's refusal, until the next run. */
  problem: ApiProblem | undefined;
  clear(): void;
}

/**
 * An async step a person starts (a form's submit, a button): tracks whether it is running, so the control can be
 * disabled, and keeps its ApiProblem for the form to show. `run` resolves true when the step succeeded.
 */
export function useAction<A extends unknown[]>(step: (...args: A) => Promise<unknown>): Action<A> {
  const [pending, setPending] = useState(false);
  const [problem, setProblem] = useState<ApiProblem | undefined>(undefined);
  const latest = useRef(step);
  latest.current = step;
  const run = useCallback(async (...args: A) => {
    setPending(true);
    setProblem(undefined);
    try {
      await latest.current(...args);
      return true;
    } catch (error) {
      setProblem(asProblem(error));
      return false;
    } finally {
      setPending(false);
    }
  }, []);
  const clear = useCallback(() => setProblem(undefined), []);
  return { run, pending, problem, clear };
}
