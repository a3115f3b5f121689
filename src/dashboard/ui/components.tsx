import { type ComponentChildren, h, type LooseInputHTMLAttributes } from "preact";
import { useEffect, useRef } from "preact/hooks";
import type { ApiProblem } from "../api";
import { dateTime, fromNow } from "./format";

/** A page's heading and content; the heading takes focus when the page opens, so screen readers announce it. */
export function Page({ title, actions, children }: { title: string; actions?: ComponentChildren; children: ComponentChildren }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = title;
    heading.current?.focus({ preventScroll: true });
  }, [title]);
  return (
    <section class="page">
      <header class="page-header">
        <h1 ref={heading} tabIndex={-1}>
          {title}
        </h1>
        {actions ? <div class="page-actions">{actions}</div> : null}
      </header>
      {children}
    </section>
  );
}

/** A refusal from the API, announced to assistive technology (role=alert). */
export function ProblemAlert({ problem }: { problem: ApiProblem | undefined }) {
  if (!problem) return null;
  return (
    <div class="alert alert-error" role="alert">
      <strong>{problem.message}</strong>
      {problem.detail ? <span> {problem.detail}</span> : null}
      {problem.validations.length > 0 ? (
        <ul class="alert-list">
          {problem.validations.map((v) => (
            <li key={v.field}>
              <code>{v.field}</code>: {v.detail}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

/** A success or progress message, read politely by screen readers (role=status). */
export function Notice({ children }: { children: ComponentChildren }) {
  return (
    <div class="alert alert-ok" role="status">
      {children}
    </div>
  );
}

/** The input attributes the dashboard's forms use. */
interface InputProps {
  type?: "text" | "email" | "password" | "search" | "number" | "datetime-local" | "url";
  name?: string;
  autocomplete?: string;
  required?: boolean;
  placeholder?: string;
  inputMode?: "numeric" | "email" | "text";
  min?: number | string;
  max?: number | string;
  disabled?: boolean;
}

/** `<input>` with its `type` chosen at run time (Preact's JSX types want it fixed at each use). */
const input_ = (attributes: LooseInputHTMLAttributes<HTMLInputElement>) => h("input", attributes);

/**
 * A labelled input whose API validation message (by the field's JSON path, `problemField`) is tied to it with
 * aria-describedby and aria-invalid.
 */
export function Field({
  label,
  value,
  onValue,
  problem,
  problemField,
  hint,
  ...input
}: InputProps & {
  label: string;
  value: string;
  onValue(value: string): void;
  problem?: ApiProblem | undefined;
  problemField?: string;
  hint?: string;
}) {
  const id = `field-${(input.name ?? label).replace(/[^a-z0-9]+/gi, "-").toLowerCase()}`;
  const message = problemField ? problem?.about(problemField) : undefined;
  const described = [hint ? `${id}-hint` : "", message ? `${id}-error` : ""].filter(Boolean).join(" ");
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {input_({
        ...input,
        id,
        value,
        onInput: (event) => onValue(event.currentTarget.value),
        "aria-invalid": message ? "true" : undefined,
        "aria-describedby": described || undefined,
      })}
      {hint ? (
        <small id={`${id}-hint`} class="hint">
          {hint}
        </small>
      ) : null}
      {message ? (
        <small id={`${id}-error`} class="field-error">
          {message}
        </small>
      ) : null}
    </div>
  );
}

/** A time shown relative to now, with the exact time for hover and machines. */
export function Time({ iso }: { iso: string }) {
  return (
    <time dateTime={iso} title={dateTime(iso)}>
      {fromNow(iso)}
    </time>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

/** A polite spinner text for lists still loading. */
export function Loading({ what }: { what: string }) {
  return (
    <p class="loading" role="status">
      Loading {what}…
    </p>
  );
}
