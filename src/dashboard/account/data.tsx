import { useState } from "preact/hooks";
import { answerOf, api } from "../api";
import { useAction } from "../ui/action";
import { Notice, ProblemAlert } from "../ui/components";

/** The file name the answer gives (`Content-Disposition`), or a plain one. */
function fileNameOf(res: { headers: Headers }): string {
  const named = /filename="([^"]+)"/.exec(res.headers.get("Content-Disposition") ?? "");
  return named?.[1] ?? "herald-export.json";
}

/**
 * Account → Your data (docs/dashboard.md, "Pages"): everything Herald stores about the person, as the one JSON file
 * `GET /users/me/export` writes (docs/privacy.md, "The export"). It may ask them to confirm it is them first.
 */
export function DataSection() {
  const [notice, setNotice] = useState("");
  const download = useAction(async () => {
    setNotice("");
    const res = await answerOf(api.users[":user"].export.$get({ param: { user: "me" } }));
    const url = URL.createObjectURL(await res.blob());
    const link = document.createElement("a");
    link.href = url;
    link.download = fileNameOf(res);
    link.click();
    // The click has handed the file to the browser's download; the address can go.
    setTimeout(() => URL.revokeObjectURL(url), 0);
    setNotice(`Your data was saved as ${link.download}.`);
  });
  return (
    <section class="account-section" aria-labelledby="data-heading" data-testid="your-data">
      <h2 id="data-heading" tabIndex={-1}>
        Your data
      </h2>
      <p class="muted">
        One file with everything Herald stores about you: your account, sessions and devices, tokens and sign-in methods (never their secrets),
        preferences, your inbox with every notification and its state, the message log and the audit entries about you.
      </p>
      <ProblemAlert problem={download.problem} />
      {notice ? <Notice>{notice}</Notice> : null}
      <div>
        <button type="button" class="button-primary" disabled={download.pending} onClick={() => void download.run()}>
          {download.pending ? "Preparing your data…" : "Download my data"}
        </button>
      </div>
    </section>
  );
}
