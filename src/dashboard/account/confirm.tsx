import { useEffect, useRef, useState } from "preact/hooks";

/**
 * A button that asks before acting, in place ("Revoke? Yes / Cancel") instead of a window.confirm dialog. Asking moves
 * focus to Cancel, so a second Enter does not confirm by accident; Cancel returns focus to the button.
 */
export function ConfirmButton({
  id,
  label,
  question,
  about,
  name,
  disabled,
  onConfirm,
}: {
  id: string;
  label: string;
  question: string;
  /** What the question concerns, for screen readers ("token ci-deploy"). */
  about: string;
  /** The button's accessible name when its label alone is not enough in a list ("Suspend ada"); it starts with the label. */
  name?: string;
  disabled?: boolean;
  onConfirm(): void;
}) {
  const [asking, setAsking] = useState(false);
  const cancel = useRef<HTMLButtonElement>(null);
  const start = useRef<HTMLButtonElement>(null);
  const wasAsking = useRef(false);
  useEffect(() => {
    if (asking) cancel.current?.focus();
    else if (wasAsking.current) start.current?.focus();
    wasAsking.current = asking;
  }, [asking]);
  if (!asking) {
    return (
      <button type="button" class="button-danger" ref={start} aria-label={name} disabled={disabled} onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  }
  return (
    <span class="confirm">
      <span id={`${id}-question`} class="confirm-question">
        {question}
        <span class="visually-hidden"> ({about})</span>
      </span>
      <button
        type="button"
        class="button-danger"
        aria-describedby={`${id}-question`}
        onClick={() => {
          wasAsking.current = false;
          setAsking(false);
          onConfirm();
        }}
      >
        Yes
      </button>
      <button type="button" ref={cancel} onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}
