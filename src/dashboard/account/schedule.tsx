import { useEffect, useState } from "preact/hooks";
import { type QuietRange, quietUntil, type Schedule, type Weekday } from "../../schedule/model";
import { api, call } from "../api";
import { useAction } from "../ui/action";
import { Field, FieldNotes, Loading, Notice, type Option, ProblemAlert, SelectField } from "../ui/components";

/**
 * Preferences → "Quiet hours and digest" (docs/schedule.md): the time zone (the browser's until the person saves
 * another), quiet ranges by day, the digest, and a sentence saying what happens to an e-mail sent now.
 */

interface RangeForm {
  days: Weekday[];
  start: string;
  end: string;
}
type DigestKind = "off" | "every" | "daily";

const WEEK: readonly Weekday[] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
const DAY_NAMES: Record<Weekday, string> = { mon: "Mon", tue: "Tue", wed: "Wed", thu: "Thu", fri: "Fri", sat: "Sat", sun: "Sun" };
const LENGTHS: readonly Option[] = ["15m", "30m", "1h", "2h", "4h", "8h", "12h", "24h"].map((value) => ({ value, label: `Every ${value}` }));
const KINDS: readonly Option<DigestKind>[] = [
  { value: "off", label: "Off: each e-mail on its own" },
  { value: "every", label: "Every few hours" },
  { value: "daily", label: "Once a day" },
];
const MAX_RANGES = 7;

const browserZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
const minutes = (text: string) => Number(text.slice(0, 2)) * 60 + Number(text.slice(3, 5));
const validClock = (text: string) => /^([01]\d|2[0-3]):[0-5]\d$/.test(text);

function clockIn(zone: string, at: number): string {
  return new Intl.DateTimeFormat("en-GB", { timeZone: zone, hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).format(at);
}

function knownZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return /^[A-Za-z]/.test(zone);
  } catch {
    return false;
  }
}

/** What an e-mail sent now would do under the form as it stands (saved or not). */
function preview(zone: string, ranges: RangeForm[], kind: DigestKind, length: string, daily: string, now = Date.now()): string {
  if (!knownZone(zone)) return "Choose a time zone to see when e-mail goes out.";
  if (kind === "every") return `E-mail is gathered into one digest, ${length} after the first one arrives.`;
  if (kind === "daily" && validClock(daily)) return `E-mail is gathered into one digest at ${daily} in ${zone}.`;
  const quietHours: QuietRange[] = ranges
    .filter((r) => validClock(r.start) && validClock(r.end) && r.days.length > 0)
    .map((r) => ({ days: r.days, start: minutes(r.start), end: minutes(r.end) }));
  const schedule: Pick<Schedule, "timezone" | "quietHours"> = { timezone: zone, quietHours };
  const until = quietUntil(schedule, now);
  if (until !== undefined) return `E-mail waits until ${clockIn(zone, until)} in ${zone}.`;
  return quietHours.length > 0 ? `E-mail goes out at once: it is not quiet hours now in ${zone}.` : "E-mail goes out at once.";
}

export function QuietHoursAndDigest() {
  const [zone, setZone] = useState<string | undefined>(undefined);
  const [ranges, setRanges] = useState<RangeForm[]>([]);
  const [kind, setKind] = useState<DigestKind>("off");
  const [length, setLength] = useState("1h");
  const [daily, setDaily] = useState("08:00");
  const [saved, setSaved] = useState(false);

  const load = useAction(async () => {
    const schedule = await call(api.users[":user"].notifications.schedule.$get({ param: { user: "me" } }));
    // Never set: the browser's own zone is the likeliest right answer (saved only when the person saves).
    setZone(schedule.updated_at === null ? browserZone() : schedule.timezone);
    setRanges(schedule.quiet_hours.map((r) => ({ days: WEEK.filter((d) => r.days.includes(d)), start: r.start, end: r.end })));
    const dailyAt = /^daily@(\d\d:\d\d)$/.exec(schedule.digest)?.[1];
    if (dailyAt) {
      setKind("daily");
      setDaily(dailyAt);
    } else if (schedule.digest !== "off") {
      setKind("every");
      setLength(schedule.digest);
    } else setKind("off");
  });
  useEffect(() => void load.run(), [load.run]);

  const save = useAction(async () => {
    const digest = kind === "off" ? "off" : kind === "daily" ? `daily@${daily}` : length;
    const stored = await call(
      api.users[":user"].notifications.schedule.$put({
        param: { user: "me" },
        json: { timezone: zone ?? "UTC", quiet_hours: ranges, digest },
      }),
    );
    // The zone as stored: its canonical spelling, however it was typed (docs/schedule.md, "The schedule").
    setZone(stored.timezone);
    setSaved(true);
  });

  const change =
    <T,>(set: (value: T) => void) =>
    (value: T): void => {
      setSaved(false);
      save.clear();
      set(value);
    };
  const setRange = (index: number, patch: Partial<RangeForm>) =>
    change<RangeForm[]>(setRanges)(ranges.map((r, i) => (i === index ? { ...r, ...patch } : r)));

  if (zone === undefined) return load.problem ? <ProblemAlert problem={load.problem} /> : <Loading what="quiet hours and digest" />;
  const lengths = LENGTHS.some((o) => o.value === length) ? LENGTHS : [...LENGTHS, { value: length, label: `Every ${length}` }];
  return (
    <section class="pref-group" aria-labelledby="schedule-heading" data-testid="schedule">
      <h2 id="schedule-heading">Quiet hours and digest</h2>
      <p class="muted">For e-mail only: your inbox always gets every notification at once. Security notices and passcodes are never held.</p>
      <form
        class="stack"
        onSubmit={(event) => {
          event.preventDefault();
          if (!save.pending) void save.run();
        }}
      >
        <Field
          label="Time zone"
          name="timezone"
          value={zone}
          onValue={change<string>(setZone)}
          problem={save.problem}
          problemField="timezone"
          hint="An IANA name such as Europe/Berlin; your browser's is filled in until you save another."
          list="schedule-zones"
          autocomplete="off"
        />
        <datalist id="schedule-zones">
          {zoneNames().map((name) => (
            <option key={name} value={name} />
          ))}
        </datalist>
        <fieldset class="stack">
          <legend>Quiet hours</legend>
          {ranges.length === 0 ? <p class="muted">No quiet hours: e-mail goes out whenever it is sent.</p> : null}
          {ranges.map((range, index) => {
            // A refusal of the days (none ticked) is said at them, tied to every box (docs/dashboard.md, "Errors").
            const daysError = save.problem?.about(`quiet_hours.${index}.days`);
            const daysId = `field-range-${index}-days`;
            return (
              <div class="schedule-range" key={index} data-testid="quiet-range">
                <fieldset class="schedule-days">
                  <legend>Quiet range {index + 1}: days it starts on</legend>
                  {WEEK.map((day) => (
                    <label key={day} class="schedule-day">
                      <input
                        type="checkbox"
                        name={`range-${index}-${day}`}
                        checked={range.days.includes(day)}
                        aria-invalid={daysError ? "true" : undefined}
                        aria-describedby={daysError ? `${daysId}-error` : undefined}
                        onChange={(event) =>
                          setRange(index, { days: WEEK.filter((d) => (d === day ? event.currentTarget.checked : range.days.includes(d))) })
                        }
                      />{" "}
                      {DAY_NAMES[day]}
                    </label>
                  ))}
                  <FieldNotes id={daysId} error={daysError} />
                </fieldset>
                <Field
                  label="From"
                  type="time"
                  name={`range-${index}-start`}
                  required
                  value={range.start}
                  onValue={(start) => setRange(index, { start })}
                  problem={save.problem}
                  problemField={`quiet_hours.${index}.start`}
                />
                <Field
                  label="Until"
                  type="time"
                  name={`range-${index}-end`}
                  required
                  value={range.end}
                  onValue={(end) => setRange(index, { end })}
                  problem={save.problem}
                  problemField={`quiet_hours.${index}.end`}
                  hint="An earlier time is the next morning."
                />
                <div>
                  <button type="button" onClick={() => change<RangeForm[]>(setRanges)(ranges.filter((_, i) => i !== index))}>
                    Remove range {index + 1}
                  </button>
                </div>
              </div>
            );
          })}
          {ranges.length < MAX_RANGES ? (
            <div>
              <button type="button" onClick={() => change<RangeForm[]>(setRanges)([...ranges, { days: [...WEEK], start: "22:00", end: "07:00" }])}>
                Add quiet hours
              </button>
            </div>
          ) : null}
        </fieldset>
        <SelectField
          label="Digest"
          name="digest-kind"
          value={kind}
          options={KINDS}
          onValue={change<DigestKind>(setKind)}
          error={save.problem?.about("digest")}
        />
        {kind === "every" ? (
          <SelectField label="How often" name="digest-length" value={length} options={lengths} onValue={change<string>(setLength)} />
        ) : null}
        {kind === "daily" ? (
          <Field label="Digest time" type="time" name="digest-daily" required value={daily} onValue={change<string>(setDaily)} />
        ) : null}
        <p class="schedule-preview" data-testid="schedule-preview" aria-live="polite">
          {preview(zone, ranges, kind, length, daily)}
        </p>
        <ProblemAlert
          problem={save.problem}
          shown={["timezone", "digest", ...ranges.flatMap((_, i) => [`quiet_hours.${i}.days`, `quiet_hours.${i}.start`, `quiet_hours.${i}.end`])]}
        />
        {saved ? <Notice>Quiet hours and digest saved.</Notice> : null}
        <div>
          <button type="submit" class="button-primary" aria-disabled={save.pending}>
            {save.pending ? "Saving…" : "Save quiet hours and digest"}
          </button>
        </div>
      </form>
    </section>
  );
}

/** The runtime's zone names where the browser lists them (a hint only: the API decides what it accepts). */
function zoneNames(): string[] {
  const intl = Intl as typeof Intl & { supportedValuesOf?: (key: string) => string[] };
  return intl.supportedValuesOf?.("timeZone") ?? [];
}
