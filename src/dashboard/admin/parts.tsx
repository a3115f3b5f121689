import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { FieldNotes } from "../ui/components";
import "./admin.css";

/**
 * A table that scrolls sideways inside its own box at 360 px instead of widening the page. The box is a labelled,
 * focusable region so a keyboard user can scroll it too (a table of plain text has nothing else to focus). A table
 * that `fits` wraps its cells and drops its `optional` columns where the window is narrow, so it needs no sideways
 * scroll in a 1280 px window (docs/dashboard.md#tables).
 */
export function DataTable({ label, fits = false, children }: { label: string; fits?: boolean; children: ComponentChildren }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must be reachable by keyboard (WCAG 2.1.1).
    <section class={fits ? "table-wrap admin-table table-fits" : "table-wrap admin-table"} aria-label={label} tabIndex={0}>
      <table>
        <caption class="visually-hidden">{label}</caption>
        {children}
      </table>
    </section>
  );
}

/** A column: its heading, and whether it may be hidden where the window is narrow (its cells are `class="optional"`). */
type Column = string | { label: string; optional?: boolean };

/** Column headings, each a `<th scope="col">`. */
export function Head({ columns }: { columns: readonly Column[] }) {
  return (
    <thead>
      <tr>
        {columns.map((column) => {
          const { label, optional } = typeof column === "string" ? { label: column, optional: false } : column;
          return (
            <th key={label} scope="col" class={optional ? "optional" : undefined}>
              {label}
            </th>
          );
        })}
      </tr>
    </thead>
  );
}

/** A labelled `<textarea>` whose API validation message is tied to it, as `Field` does for inputs. */
export function TextAreaField({
  label,
  name,
  value,
  onValue,
  hint,
  error,
  rows = 4,
}: {
  label: string;
  name: string;
  value: string;
  onValue(value: string): void;
  hint?: string;
  error?: string | undefined;
  rows?: number;
}) {
  const id = `field-${name}`;
  const described = [hint ? `${id}-hint` : "", error ? `${id}-error` : ""].filter(Boolean).join(" ");
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <textarea
        id={id}
        name={name}
        rows={rows}
        value={value}
        onInput={(event) => onValue(event.currentTarget.value)}
        aria-invalid={error ? "true" : undefined}
        aria-describedby={described || undefined}
      />
      <FieldNotes id={id} hint={hint} error={error} />
    </div>
  );
}

/** A status word in a pill; the tone only repeats what the word says, so colour is never the only signal. */
export function Pill({ tone, children }: { tone: "ok" | "danger" | "muted" | "accent" | "plain"; children: ComponentChildren }) {
  return <span class={`status pill-${tone}`}>{children}</span>;
}

/** `more` after `shown`, leaving out what is shown already (offset pages shift when rows are added meanwhile). */
export function appendNew<T extends { id: string }>(shown: readonly T[], more: readonly T[]): T[] {
  const ids = new Set(shown.map((item) => item.id));
  return [...shown, ...more.filter((item) => !ids.has(item.id))];
}

/** The first block of an id, with the whole id for hover and copy. */
export function ShortId({ id }: { id: string }) {
  return (
    <code class="short-id" title={id}>
      {id.slice(0, 8)}
    </code>
  );
}

/**
 * An id shown short, with a button that copies the whole id (docs/dashboard.md#ids). The button is named for what it
 * copies ("Copy id of ada"), and "Copied" appears beside it, in a status region that screen readers announce.
 */
export function CopyId({ id, of }: { id: string; of: string }) {
  const [said, setSaid] = useState("");
  useEffect(() => {
    if (!said) return;
    const timer = setTimeout(() => setSaid(""), 4000);
    return () => clearTimeout(timer);
  }, [said]);
  return (
    <span class="copy-id">
      <ShortId id={id} />
      <button
        type="button"
        class="button-small"
        aria-label={`Copy id of ${of}`}
        onClick={() =>
          navigator.clipboard.writeText(id).then(
            () => setSaid("Copied"),
            () => setSaid("Could not copy"),
          )
        }
      >
        Copy id
      </button>
      <span role="status" class="copy-said">
        {said}
      </span>
    </span>
  );
}

/**
 * Runs `tick` every `ms` while `active`, one call at a time, and stops when `active` turns false or the page unmounts
 * (the timer is the effect's, so leaving the page clears it).
 */
export function usePolling(active: boolean, ms: number, tick: () => Promise<unknown>) {
  const latest = useRef(tick);
  latest.current = tick;
  useEffect(() => {
    if (!active) return;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const next = () => {
      timer = setTimeout(async () => {
        try {
          await latest.current();
        } catch {
          // A failed refresh is tried again on the next tick; the page keeps what it last showed.
        }
        if (!stopped) next();
      }, ms);
    };
    next();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [active, ms]);
}
