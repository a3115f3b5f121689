import { useEffect, useState } from "preact/hooks";
import { api, call } from "../api";
import { useAction } from "../ui/action";
import { Empty, Loading, Page, ProblemAlert, Time } from "../ui/components";
import { BroadcastForm } from "./broadcast-form";
import { DataTable, Head, Pill, usePolling } from "./parts";

type Broadcast = Awaited<ReturnType<typeof loadPage>>["broadcasts"][number];

const PAGE = 25;
/** How often the list is refreshed while a broadcast is still fanning out. */
const POLL_MS = 2000;

function loadPage(limit: number, startingBefore?: string) {
  const query = { limit: String(limit), ...(startingBefore ? { starting_before: startingBefore } : {}) };
  return call(api.notifications.broadcasts.$get({ query }));
}

/** The list's order (docs/broadcasts.md): newest first by (created_at, id). */
const older = (a: Broadcast, b: Broadcast) => a.created_at < b.created_at || (a.created_at === b.created_at && a.id < b.id);

/**
 * A refreshed first page in place of the rows it covers; rows loaded further down ("Load more") are kept below it.
 */
function merge(head: Broadcast[], shown: Broadcast[]): Broadcast[] {
  const last = head.at(-1);
  if (!last) return [];
  return [...head, ...shown.filter((b) => older(b, last))];
}

const COLUMNS = ["Title", "Sent", "Recipients", "Delivered", "Failed", "Pending", "Progress", "Status"];

/**
 * Broadcasts (docs/broadcasts.md): the form that sends one, and the list of GET /notifications/broadcasts with each
 * one's progress. While any broadcast is still fanning out the list refreshes every 2 s; polling stops when all are
 * complete or the page is left.
 */
export function AdminBroadcastsPage() {
  const [items, setItems] = useState<Broadcast[] | undefined>(undefined);
  const [more, setMore] = useState(false);

  const refresh = useAction(async () => {
    // The rows on screen, up to the API's page limit, so a refresh never drops what "Load more" added.
    const limit = Math.min(100, Math.max(PAGE, items?.length ?? 0));
    const { broadcasts } = await loadPage(limit);
    setItems((shown) => (shown === undefined ? broadcasts : merge(broadcasts, shown)));
    if (items === undefined) setMore(broadcasts.length === limit);
  });
  const loadMore = useAction(async () => {
    const last = items?.at(-1);
    if (!last) return;
    const { broadcasts } = await loadPage(PAGE, last.id);
    setItems((shown) => [...(shown ?? []), ...broadcasts]);
    setMore(broadcasts.length === PAGE);
  });

  useEffect(() => {
    void refresh.run();
  }, []);

  const sending = (items ?? []).some((b) => b.completed_at === null);
  usePolling(sending, POLL_MS, refresh.run);

  return (
    <Page title="Broadcasts">
      <BroadcastForm onSent={() => void refresh.run()} />
      <section class="admin-section" aria-labelledby="sent-heading">
        <h2 id="sent-heading">Sent broadcasts</h2>
        <ProblemAlert problem={refresh.problem ?? loadMore.problem} />
        {items === undefined ? (
          refresh.pending ? (
            <Loading what="broadcasts" />
          ) : null
        ) : items.length === 0 ? (
          <Empty>No broadcast has been sent yet.</Empty>
        ) : (
          <>
            <p class="hint" data-testid="broadcasts-polling">
              {sending ? "Updating every 2 seconds while a broadcast is being delivered." : "Every broadcast is complete."}
            </p>
            <DataTable label="Sent broadcasts, newest first">
              <Head columns={COLUMNS} />
              <tbody>
                {items.map((b) => (
                  <BroadcastRow key={b.id} broadcast={b} />
                ))}
              </tbody>
            </DataTable>
            {more ? (
              <div class="pager">
                <button type="button" disabled={loadMore.pending} onClick={() => void loadMore.run()}>
                  {loadMore.pending ? "Loading…" : "Load more"}
                </button>
              </div>
            ) : null}
          </>
        )}
      </section>
    </Page>
  );
}

function BroadcastRow({ broadcast: b }: { broadcast: Broadcast }) {
  const done = b.delivered + b.failed;
  const complete = b.completed_at !== null;
  // A broadcast to nobody is complete with nothing to count: its bar is full rather than an empty 0 of 0.
  const max = Math.max(1, b.recipients);
  const value = b.recipients === 0 ? (complete ? 1 : 0) : Math.min(done, b.recipients);
  const percent = Math.round((value / max) * 100);
  const name = b.title || "Untitled broadcast";
  return (
    <tr data-testid="broadcast-row" data-broadcast-id={b.id} data-completed={String(complete)}>
      <td class="wrap">{b.title || <span class="muted">{name}</span>}</td>
      <td>
        <Time iso={b.created_at} />
      </td>
      <td data-testid="broadcast-recipients">{b.recipients}</td>
      <td data-testid="broadcast-delivered">{b.delivered}</td>
      <td data-testid="broadcast-failed">{b.failed}</td>
      <td data-testid="broadcast-pending">{b.pending}</td>
      <td>
        <progress value={value} max={max} aria-label={`Progress of ${name}`} /> <span>{percent}%</span>
      </td>
      <td>
        {complete ? (
          <Pill tone={b.failed > 0 ? "danger" : "ok"}>{b.failed > 0 ? "Completed with failures" : "Completed"}</Pill>
        ) : (
          <Pill tone="accent">Sending</Pill>
        )}
      </td>
    </tr>
  );
}
