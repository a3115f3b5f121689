import type { TargetedKeyboardEvent } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { api, call } from "../api";
import { FieldNotes } from "../ui/components";
import "./admin.css";

/** A user as a picker offers one: enough to name them and find their organizations. */
export interface PickedUser {
  id: string;
  /** "" when only the id is known (a pasted id the caller may not read, or of no user). */
  username: string;
  email: string;
  suspended: boolean;
  organizationIds: readonly string[];
}

/** One choice in the list: a user, or the several ids pasted at once (`multiple` pickers only). */
interface Choice {
  key: string;
  users: PickedUser[];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const UUIDS = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
/** How many matches the list offers; a longer list is narrowed by typing more. */
const SHOWN = 8;
/** Typing pauses this long before a search is sent, so a word typed is one request, not one per letter. */
const PAUSE_MS = 250;

export const isUuid = (text: string) => UUID.test(text.trim());

/** How a picked user is named on the page: the username, or the short id when only the id is known. */
export const nameOf = (user: PickedUser) => user.username || user.id.slice(0, 8);

const idOnly = (id: string): PickedUser => ({ id: id.toLowerCase(), username: "", email: "", suspended: false, organizationIds: [] });

type ApiUser = Awaited<ReturnType<typeof findByText>>[number];
const toPicked = (user: ApiUser): PickedUser => ({
  id: user.id,
  username: user.username,
  email: user.email,
  suspended: user.status === "suspended",
  organizationIds: user.organization_ids,
});

async function findByText(text: string) {
  // Free text only: a colon typed in a name or address is not read as a search key (docs/api.md#searching-users).
  const q = `search:"${text.replace(/"/g, "")}"`;
  return (await call(api.users.$get({ query: { q, limit: String(SHOWN), offset: "0" } }))).users;
}

/** A pasted id is looked up, to show whose it is; one the caller cannot read is still offered as it is. */
async function findById(id: string): Promise<PickedUser> {
  try {
    return toPicked(await call(api.users[":user"].$get({ param: { user: id } })));
  } catch {
    return idOnly(id);
  }
}

/** What the list offers for `text`: matching users, the user of a pasted id, or every pasted id at once. */
export async function findUsers(text: string, multiple: boolean): Promise<Choice[]> {
  const trimmed = text.trim();
  if (isUuid(trimmed)) {
    const user = await findById(trimmed);
    return [{ key: user.id, users: [user] }];
  }
  const ids = trimmed.match(UUIDS) ?? [];
  if (ids.length > 1 && trimmed.replace(UUIDS, "").replace(/[\s,;]/g, "") === "") {
    return multiple ? [{ key: "pasted", users: [...new Set(ids.map((id) => id.toLowerCase()))].map(idOnly) }] : [];
  }
  return (await findByText(trimmed)).map((user) => ({ key: user.id, users: [toPicked(user)] }));
}

/**
 * Picks users by username, name or e-mail (docs/dashboard.md#picking-users), as an ARIA combobox: a labelled input,
 * the matches in a listbox below it (↓ ↑ to move, Enter to pick, Escape to close), and how many matched said in a
 * status line that screen readers announce. A full user id pasted is looked up and offered too; in a `multiple`
 * picker, several pasted ids at once are offered as one choice.
 */
export function UserPicker({
  id,
  label,
  hint,
  error,
  text,
  onText,
  onPick,
  multiple = false,
  exclude = [],
}: {
  id: string;
  label: string;
  hint?: string;
  error?: string | undefined;
  text: string;
  onText(text: string): void;
  onPick(users: PickedUser[]): void;
  multiple?: boolean;
  /** Ids already picked, left out of the list. */
  exclude?: readonly string[];
}) {
  const [choices, setChoices] = useState<Choice[] | undefined>(undefined);
  const [active, setActive] = useState(-1);
  const [open, setOpen] = useState(false);
  const [searching, setSearching] = useState(false);
  const asked = useRef(0);
  const listId = `${id}-list`;

  useEffect(() => {
    const wanted = text.trim();
    const ask = ++asked.current;
    if (!wanted || !open) {
      setChoices(undefined);
      setSearching(false);
      return;
    }
    setSearching(true);
    const timer = setTimeout(async () => {
      let found: Choice[];
      try {
        found = await findUsers(wanted, multiple);
      } catch {
        found = [];
      }
      // An answer to an older text is dropped: only the latest search fills the list.
      if (ask !== asked.current) return;
      setChoices(found);
      setActive(-1);
      setSearching(false);
    }, PAUSE_MS);
    return () => clearTimeout(timer);
  }, [text, open, multiple]);

  const offered = (choices ?? []).filter((choice) => choice.users.some((user) => !exclude.includes(user.id)));
  const expanded = open && offered.length > 0;

  const pick = (choice: Choice) => {
    onPick(choice.users.filter((user) => !exclude.includes(user.id)));
    setOpen(false);
    setChoices(undefined);
    setActive(-1);
  };

  const onKeyDown = (event: TargetedKeyboardEvent<HTMLInputElement>) => {
    if (event.key === "ArrowDown") {
      event.preventDefault();
      if (!open) setOpen(true);
      else setActive(Math.min(active + 1, offered.length - 1));
    } else if (event.key === "ArrowUp") {
      event.preventDefault();
      setActive(Math.max(active - 1, 0));
    } else if (event.key === "Enter" && expanded) {
      // Enter picks the highlighted match, or the first; the form is not submitted meanwhile.
      event.preventDefault();
      const choice = offered[active] ?? offered[0];
      if (choice) pick(choice);
    } else if (event.key === "Escape" && expanded) {
      event.preventDefault();
      setOpen(false);
    }
  };

  const status = !open || !text.trim() || searching || choices === undefined ? "" : describe(offered.length, text.trim());
  const described = [hint ? `${id}-hint` : "", error ? `${id}-error` : ""].filter(Boolean).join(" ");
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <div class="picker-box">
        <input
          id={id}
          type="text"
          role="combobox"
          autocomplete="off"
          spellcheck={false}
          value={text}
          aria-autocomplete="list"
          aria-expanded={expanded}
          aria-controls={expanded ? listId : undefined}
          aria-activedescendant={expanded && active >= 0 ? `${listId}-${active}` : undefined}
          aria-invalid={error ? "true" : undefined}
          aria-describedby={described || undefined}
          onInput={(event) => {
            onText(event.currentTarget.value);
            setOpen(true);
          }}
          onKeyDown={onKeyDown}
          onBlur={() => setOpen(false)}
        />
        {expanded ? (
          <div id={listId} role="listbox" aria-label={`Users matching ${text.trim()}`} class="picker-list">
            {offered.map((choice, i) => (
              // biome-ignore lint/a11y/useKeyWithClickEvents: the keys are the combobox input's (↓ ↑ Enter), which keeps focus while the options are pointed at through aria-activedescendant.
              <div
                key={choice.key}
                id={`${listId}-${i}`}
                role="option"
                tabIndex={-1}
                aria-selected={i === active}
                class="picker-option"
                // mousedown would blur the input first and close the list before the click lands.
                onMouseDown={(event) => event.preventDefault()}
                onClick={() => pick(choice)}
              >
                <ChoiceText choice={choice} />
              </div>
            ))}
          </div>
        ) : open && choices?.length === 0 && !searching ? (
          <p class="picker-list picker-none">{status}</p>
        ) : null}
      </div>
      {/* Announced, not shown: the list shows the same, and a line that comes and goes would move the controls below. */}
      <span class="visually-hidden" role="status">
        {status}
      </span>
      <FieldNotes id={id} hint={hint} error={error} />
    </div>
  );
}

function describe(count: number, text: string): string {
  if (count === 0) return `No user matches “${text}”.`;
  return `${count === 1 ? "1 user matches" : `${count} users match`}: ↓ and Enter pick one.`;
}

function ChoiceText({ choice }: { choice: Choice }) {
  const [first] = choice.users;
  if (choice.users.length > 1) return <span>Add the {choice.users.length} pasted ids</span>;
  if (!first) return null;
  if (!first.username) return <span>Use the id {first.id}</span>;
  return (
    <span>
      <strong>{first.username}</strong> <span class="muted">{first.email}</span>
      {first.suspended ? <span class="muted"> (suspended)</span> : null}
    </span>
  );
}
