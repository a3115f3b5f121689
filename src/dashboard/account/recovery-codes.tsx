import { useEffect, useRef, useState } from "preact/hooks";
import { Notice } from "../ui/components";

/** The text file a person keeps: the codes, one a line, with what they are for. */
function codesFile(codes: readonly string[]): string {
  const origin = location.origin;
  return `Herald recovery codes for ${origin}\nEach code signs you in once, when your authenticator app or passkey is not at hand.\n\n${codes.join("\n")}\n`;
}

/**
 * New recovery codes, shown once (the API keeps only their hashes): listed, with Copy and Download (.txt). They live
 * in this component's state only, never in storage or the URL, and are gone when the person presses Done or leaves.
 */
export function RecoveryCodes({ codes, onDone, doneLabel = "Done" }: { codes: readonly string[]; onDone(): void; doneLabel?: string }) {
  const heading = useRef<HTMLHeadingElement>(null);
  const [copy, setCopy] = useState("");
  const [download, setDownload] = useState<string | undefined>(undefined);
  useEffect(() => heading.current?.focus(), []);
  // A file made in the page (a blob: URL), so the codes never travel anywhere to be downloaded.
  useEffect(() => {
    const url = URL.createObjectURL(new Blob([codesFile(codes)], { type: "text/plain" }));
    setDownload(url);
    return () => URL.revokeObjectURL(url);
  }, [codes]);
  return (
    <div class="card stack" data-testid="recovery-codes">
      <h4 ref={heading} tabIndex={-1} id="recovery-codes-heading">
        Your recovery codes
      </h4>
      <Notice>
        Save these codes somewhere safe now: <strong>they will not be shown again.</strong> Each one signs you in once if your authenticator app or
        passkey is not at hand.
      </Notice>
      <ul class="recovery-codes" aria-labelledby="recovery-codes-heading">
        {codes.map((code) => (
          <li key={code}>
            <code>{code}</code>
          </li>
        ))}
      </ul>
      <div class="row">
        <button
          type="button"
          onClick={() => {
            navigator.clipboard.writeText(codes.join("\n")).then(
              () => setCopy("Copied to the clipboard."),
              () => setCopy("Could not copy: select the codes and copy them yourself, or download them."),
            );
          }}
        >
          Copy codes
        </button>
        {download ? (
          <a class="button" href={download} download="herald-recovery-codes.txt">
            Download codes (.txt)
          </a>
        ) : null}
        <button type="button" class="button-primary" onClick={onDone}>
          {doneLabel}
        </button>
      </div>
      <small class="hint" role="status">
        {copy}
      </small>
    </div>
  );
}
