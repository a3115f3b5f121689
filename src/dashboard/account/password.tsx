import { useState } from "preact/hooks";
import { ApiProblem, api, call } from "../api";
import { useAction } from "../ui/action";
import { Field, NewPasswordField, Notice, ProblemAlert } from "../ui/components";

/** Changing one's own password needs the current one; the other sessions end (PUT /users/{user}/password). */
export function PasswordSection({ onChanged }: { onChanged(): void }) {
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [repeat, setRepeat] = useState("");
  const [done, setDone] = useState(false);
  const change = useAction(async () => {
    setDone(false);
    if (next !== repeat) {
      throw new ApiProblem(0, "The new passwords do not match.", undefined, [{ field: "repeat", detail: "Type the same new password twice." }]);
    }
    await call(api.users[":user"].password.$put({ param: { user: "me" }, json: { old_password: current, password: next } }));
    setCurrent("");
    setNext("");
    setRepeat("");
    setDone(true);
    onChanged();
  });
  return (
    <section class="account-section" aria-labelledby="password-heading">
      <h2 id="password-heading">Password</h2>
      <form
        class="card stack narrow"
        onSubmit={(event) => {
          event.preventDefault();
          if (!change.pending) void change.run();
        }}
      >
        <ProblemAlert problem={change.problem} shown={["old_password", "password", "repeat"]} />
        {done ? <Notice>Your password was changed. Your other sessions were signed out.</Notice> : null}
        <Field
          label="Current password"
          type="password"
          name="old_password"
          autocomplete="current-password"
          required
          value={current}
          onValue={setCurrent}
          problem={change.problem}
          problemField="old_password"
        />
        <NewPasswordField value={next} onValue={setNext} problem={change.problem} />
        <Field
          label="Confirm password"
          type="password"
          name="repeat"
          autocomplete="new-password"
          required
          value={repeat}
          onValue={setRepeat}
          problem={change.problem}
          problemField="repeat"
        />
        <div>
          <button type="submit" class="button-primary">
            {change.pending ? "Changing…" : "Change password"}
          </button>
        </div>
      </form>
    </section>
  );
}
