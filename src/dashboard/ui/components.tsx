import { type ComponentChildren, h, type LooseInputHTMLAttributes } from "preact";
import { useEffect, useRef } from "preact/hooks";
import type { ApiProblem } from "../api";
import type { Action } from "./action";
import { useNow } from "./clock";
import { dateTime, fromNow } from "./format";
import { plainDetail } from "./plain-words";

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

/** Whether a validation's field is one a form shows, or lies inside one (`audience` holds `audience.user_ids.0`). */
const isShown = (field: string, shown: readonly string[]) => shown.some((name) => field === name || field.startsWith(`${name}.`));

/**
 * A refusal from the API, announced to assistive technology (role=alert). Validations of the fields the form shows
 * (`shown`, by JSON path) are said at those fields only: the alert then just points at them and focus moves to the
 * first one, so no message is read or shown twice (docs/dashboard.md#errors). Any other validation is listed here,
 * in plain words (ui/plain-words.ts).
 */
export function ProblemAlert({ problem, shown = [] }: { problem: ApiProblem | undefined; shown?: readonly string[] }) {
  const box = useRef<HTMLDivElement>(null);
  const validations = problem?.validations ?? [];
  const atFields = validations.filter((v) => isShown(v.field, shown));
  const elsewhere = validations.filter((v) => !isShown(v.field, shown));
  useEffect(() => {
    if (atFields.length > 0) box.current?.closest("form")?.querySelector<HTMLElement>('[aria-invalid="true"]')?.focus();
  }, [problem]);
  if (!problem) return null;
  const summary =
    atFields.length > 0
      ? atFields.length === 1
        ? "Check the highlighted field."
        : "Check the highlighted fields."
      : problem.message === VALIDATION_FAILED
        ? "Some of what was entered was not accepted."
        : problem.message;
  return (
    <div class="alert alert-error" role="alert" ref={box}>
      <strong>{summary}</strong>
      {problem.detail && atFields.length === 0 ? <span> {problem.detail}</span> : null}
      {elsewhere.length > 0 ? (
        <ul class="alert-list">
          {elsewhere.map((v) => (
            <li key={v.field}>{plainDetail(v.field, v.detail)}</li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

/** The API's message when a body or query did not pass validation (docs/api.md, Conventions). */
const VALIDATION_FAILED = "Validation failed.";

/**
 * A form that runs `action` on submit (Enter in any field included) and shows its refusal above the fields; the
 * validations of the fields named in `shown` are said at those fields only (ProblemAlert).
 */
export function ActionForm({ action, shown, children }: { action: Action<[]>; shown?: readonly string[]; children: ComponentChildren }) {
  return (
    <form
      class="card stack"
      onSubmit={(event) => {
        event.preventDefault();
        void action.run();
      }}
    >
      <ProblemAlert problem={action.problem} shown={shown} />
      {children}
    </form>
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

/**
 * Something that does not work as the page would otherwise suggest (e-mail that cannot be sent). Shown with the page
 * and announced politely (role=status): it is not the answer to anything the person just did.
 */
export function Warning({ title, testId, children }: { title: string; testId?: string; children: ComponentChildren }) {
  return (
    <div class="alert alert-warning" role="status" data-testid={testId}>
      <strong>{title}</strong> {children}
    </div>
  );
}

/** The input attributes the dashboard's forms use. */
interface InputProps {
  type?: "text" | "email" | "password" | "search" | "number" | "datetime-local" | "date" | "time" | "url";
  name?: string;
  /** The id of a `<datalist>` of suggestions. */
  list?: string;
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
/**
 * A field's hint and its error, under the control, with the ids its `aria-describedby` names (`<id>-hint`,
 * `<id>-error`): one shape for every control of the dashboard.
 */
export function FieldNotes({ id, hint, error }: { id: string; hint?: string | undefined; error?: string | undefined }) {
  return (
    <>
      {hint ? (
        <small id={`${id}-hint`} class="hint">
          {hint}
        </small>
      ) : null}
      {error ? (
        <small id={`${id}-error`} class="field-error">
          {error}
        </small>
      ) : null}
    </>
  );
}

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
      <FieldNotes id={id} hint={hint} error={message} />
    </div>
  );
}

/**
 * A password being set: the API's policy (8 to 256 characters, hard to guess, docs/security.md) says in the hint what
 * it accepts, and the refusal is shown on the field (`password` in the error body).
 */
export function NewPasswordField({
  label = "New password",
  name = "password",
  value,
  onValue,
  problem,
}: {
  label?: string;
  name?: string;
  value: string;
  onValue(value: string): void;
  problem: ApiProblem | undefined;
}) {
  return (
    <Field
      label={label}
      type="password"
      name={name}
      autocomplete="new-password"
      required
      value={value}
      onValue={onValue}
      problem={problem}
      problemField="password"
      hint="8 to 256 characters, hard to guess: not a common password, and not built from your username or e-mail."
    />
  );
}

/** A username being chosen, with the rule the API checks (docs/api.md) as its hint and its refusal on the field. */
export function UsernameField({
  name = "username",
  autocomplete = "username",
  value,
  onValue,
  problem,
}: {
  name?: string;
  autocomplete?: string;
  value: string;
  onValue(value: string): void;
  problem: ApiProblem | undefined;
}) {
  return (
    <Field
      label="Username"
      name={name}
      autocomplete={autocomplete}
      required
      value={value}
      onValue={onValue}
      problem={problem}
      problemField="username"
      hint="Letters, digits and single hyphens; up to 32 characters."
    />
  );
}

/** One choice of a SelectField: the value the code uses and what the person reads. */
export interface Option<T extends string = string> {
  value: T;
  label: string;
}

/**
 * A labelled `<select>` over a fixed set of values: `onValue` receives one of the options' values, never another
 * string. `name` makes its id, so it must be unique on the page.
 */
export function SelectField<T extends string>({
  label,
  name,
  value,
  options,
  onValue,
  disabled,
  error,
}: {
  label: string;
  name: string;
  value: T;
  options: readonly Option<T>[];
  onValue(value: T): void;
  disabled?: boolean;
  /** What is wrong with the choice, in plain words, tied to the select as Field ties its message. */
  error?: string | undefined;
}) {
  const id = `field-${name}`;
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <select
        id={id}
        name={name}
        value={value}
        disabled={disabled}
        aria-invalid={error ? "true" : undefined}
        aria-describedby={error ? `${id}-error` : undefined}
        onChange={(event) => {
          const picked = options.find((option) => option.value === event.currentTarget.value);
          if (picked) onValue(picked.value);
        }}
      >
        {options.map((option) => (
          <option key={option.value} value={option.value}>
            {option.label}
          </option>
        ))}
      </select>
      {error ? (
        <small id={`${id}-error`} class="field-error">
          {error}
        </small>
      ) : null}
    </div>
  );
}

/** A time shown relative to now, with the exact time for hover and machines. */
/** A time as "5 minutes ago", kept current while it is shown; the exact time is its tooltip and `datetime`. */
export function Time({ iso }: { iso: string }) {
  const now = useNow();
  return (
    <time dateTime={iso} title={dateTime(iso)}>
      {fromNow(iso, now)}
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
