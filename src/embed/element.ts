import { type ChangeFrame, type NotificationFrame, type WatchHandle, type WatchStatus, watchInbox } from "../client/watch";
import type { InboxNotification } from "../inbox/model";
import { archive, type Credentials, HttpError, listInbox, markAllRead, markRead } from "./api";
import { bellIcon, h, relativeTime } from "./dom";
import { applyChange, itemView, plainText, viewKey, visible, withPlainTitle } from "./list";
import { stylesheet } from "./styles";

/** docs/embed.md, "Attributes, properties, methods": what the element is doing, also sent as the `herald-status` event. */
export type HeraldInboxState = "idle" | "connecting" | "live" | "reconnecting" | "unauthorized" | "error";

interface Settings extends Credentials {
  limit: number;
}

const DEFAULT_LIMIT = 20;
/** The API's largest page: a list read again (a resync) keeps up to this many of the items it held. */
const MAX_PAGE = 100;
/** Change frames kept to apply onto an older page that was being read while they arrived. */
const KEPT_FRAMES = 100;
/** What a subprotocol and a header value may carry (RFC 9110 token): anything else could never authenticate. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Retries of a failed first list: full jitter over min(30 s, 1 s · 2^attempt), like the watch's own backoff. */
const RETRY_MS = 1000;
const RETRY_MAX_MS = 30_000;

const STATUS_TEXT: Partial<Record<HeraldInboxState, string>> = {
  connecting: "Loading…",
  reconnecting: "Connection lost. Reconnecting…",
  unauthorized: "Sign in to see your notifications.",
  error: "Notifications are unavailable.",
};

/**
 * `<herald-inbox server="https://herald.example.com">`: a bell with the unread count and a panel listing the newest
 * notifications, kept live by the typed client's `watchInbox()` (docs/embed.md). The token, when the page gives
 * one, lives only in a private field.
 */
export class HeraldInbox extends HTMLElement {
  static observedAttributes = ["server", "limit"];

  #token: string | undefined;
  readonly #root: ShadowRoot;
  readonly #bell: HTMLButtonElement;
  readonly #badge: HTMLSpanElement;
  readonly #panel: HTMLElement;
  readonly #status: HTMLParagraphElement;
  readonly #empty: HTMLParagraphElement;
  readonly #list: HTMLUListElement;
  readonly #markAll: HTMLButtonElement;
  readonly #more: HTMLButtonElement;
  readonly #viewAll: HTMLAnchorElement;
  readonly #announcer: HTMLParagraphElement;

  /** What the running connection was started with; compared with the wanted settings after every change. */
  #settings: Settings | undefined;
  /** Bumped by every stop: an answer or frame from an older connection is dropped. */
  #generation = 0;
  #watch: WatchHandle | undefined;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #attempt = 0;
  #scheduled = false;
  #state: HeraldInboxState = "idle";
  /** A failed action, shown until the next one. */
  #notice = "";
  #items: InboxNotification[] = [];
  /** How many items the list holds: `limit`, grown by each "Load more"; a new notification pushes the oldest out. */
  #capacity = DEFAULT_LIMIT;
  /** Every item the list can show is loaded: no "Load more". */
  #complete = true;
  #loadingMore = false;
  #frames: ChangeFrame[] = [];
  #unread: number | undefined;
  /** The seq of the state the last list showed: frames at or below it are already in it. */
  #listSeq = -1;
  #views = new Map<string, HTMLLIElement>();
  #viewKeys = new WeakMap<HTMLLIElement, string>();
  #open = false;

  constructor() {
    super();
    this.#root = this.attachShadow({ mode: "open" });
    this.#root.adoptedStyleSheets = [stylesheet()];
    this.#badge = h("span", { class: "badge", part: "badge", "aria-hidden": "true", hidden: true });
    this.#bell = h(
      "button",
      { type: "button", class: "bell", part: "bell", "aria-expanded": "false", "aria-controls": "panel", "aria-label": "Notifications" },
      bellIcon(),
      this.#badge,
    );
    this.#markAll = h("button", { type: "button", class: "text-button", part: "mark-all", disabled: true }, "Mark all as read");
    this.#status = h("p", { class: "status", part: "status", hidden: true });
    this.#empty = h("p", { class: "empty", part: "empty", hidden: true }, "No notifications yet.");
    // Focusable, so a list taller than the panel can be scrolled from the keyboard even when it holds no button.
    this.#list = h("ul", { part: "list", "aria-labelledby": "heading", tabindex: "0", hidden: true });
    this.#more = h("button", { type: "button", class: "text-button", part: "load-more", hidden: true }, "Load more");
    // The dashboard at Herald's `/` is the full inbox (docs/dashboard.md).
    this.#viewAll = h("a", { class: "text-button", part: "view-all", target: "_blank", rel: "noopener noreferrer" }, "View all");
    this.#panel = h(
      "section",
      { id: "panel", class: "panel", part: "panel", "aria-labelledby": "heading", hidden: true },
      h("div", { class: "head" }, h("h2", { id: "heading", part: "heading" }, "Notifications"), this.#markAll),
      this.#status,
      this.#empty,
      this.#list,
      h("div", { class: "foot" }, this.#more, this.#viewAll),
    );
    // Outside the panel, so counts are announced (politely) whether or not it is open.
    this.#announcer = h("p", { class: "sr", role: "status", "aria-live": "polite", "aria-atomic": "true" });
    this.#root.append(this.#bell, this.#panel, this.#announcer);

    this.#bell.addEventListener("click", () => this.#toggle(!this.#open));
    this.#markAll.addEventListener("click", () => void this.#readAll());
    this.#more.addEventListener("click", () => void this.#loadMore());
    // Scrolled to the end of what is loaded: the next page, as "Load more" would.
    this.#list.addEventListener("scroll", () => {
      const list = this.#list;
      if (list.scrollTop + list.clientHeight >= list.scrollHeight - 32) void this.#loadMore();
    });
    this.#root.addEventListener("keydown", (event) => {
      if (!(event instanceof KeyboardEvent) || event.key !== "Escape" || !this.#open) return;
      // Handled here: an enclosing dialog of the host page should not close with the panel.
      event.stopPropagation();
      this.#toggle(false, true);
    });
    this.#root.addEventListener("focusout", (event) => {
      const next = event instanceof FocusEvent ? event.relatedTarget : null;
      if (this.#open && next instanceof Node && !this.#root.contains(next)) this.#toggle(false);
    });

    // A token set before this module defined the element landed on the element itself: take it into the private field.
    if (Object.hasOwn(this, "token")) {
      const early: unknown = Reflect.get(this, "token");
      Reflect.deleteProperty(this, "token");
      this.token = typeof early === "string" ? early : undefined;
    }
  }

  /**
   * Write-only (docs/embed.md, "Attributes, properties, methods"): sets the token the element authenticates with, kept in memory only;
   * `undefined`, `null` or "" goes back to the session cookie. Reading it always gives `undefined`, so no other script
   * can read the token back from the element.
   */
  set token(value: string | null | undefined) {
    const token = typeof value === "string" && value.trim() !== "" ? value.trim() : undefined;
    if (token === this.#token) return;
    this.#token = token;
    this.#schedule();
  }

  get token(): undefined {
    return undefined;
  }

  /** The caller's unread count, as Herald last reported it; undefined until the first list. */
  get unreadCount(): number | undefined {
    return this.#unread;
  }

  get state(): HeraldInboxState {
    return this.#state;
  }

  /**
   * Lists and connects again with the same settings: for a page whose user signed in again (cookie mode) after the
   * element reported `unauthorized`. A new token needs no call: setting it reconnects.
   */
  reconnect(): void {
    this.#stop();
    this.#schedule();
  }

  connectedCallback(): void {
    this.#schedule();
  }

  disconnectedCallback(): void {
    this.#toggle(false);
    this.#schedule();
  }

  attributeChangedCallback(): void {
    this.#schedule();
  }

  /**
   * Settings change in bursts (the parser sets attributes, a script sets the token; moving the element disconnects and
   * reconnects it): reconcile once, after the burst.
   */
  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      this.#sync();
    });
  }

  /** The settings the attributes and the token ask for, "error" when they cannot work, undefined when detached. */
  #wanted(): Settings | "error" | undefined {
    if (!this.isConnected) return undefined;
    let server: URL;
    try {
      server = new URL(this.getAttribute("server") ?? "");
    } catch {
      return "error";
    }
    if (server.protocol !== "https:" && server.protocol !== "http:") return "error";
    if (this.#token !== undefined && !TOKEN.test(this.#token)) return "error";
    const limit = Number(this.getAttribute("limit") ?? DEFAULT_LIMIT);
    return {
      server: server.origin,
      token: this.#token,
      limit: Number.isInteger(limit) && limit >= 1 && limit <= 100 ? limit : DEFAULT_LIMIT,
    };
  }

  #sync(): void {
    const wanted = this.#wanted();
    const current = this.#settings;
    if (
      typeof wanted === "object" &&
      current &&
      wanted.server === current.server &&
      wanted.token === current.token &&
      wanted.limit === current.limit
    ) {
      return;
    }
    this.#stop();
    this.#items = [];
    this.#unread = undefined;
    this.#listSeq = -1;
    this.#frames = [];
    this.#complete = true;
    this.#loadingMore = false;
    if (typeof wanted !== "object") {
      this.#setState(wanted ?? "idle");
      this.#render();
      return;
    }
    this.#settings = wanted;
    this.#capacity = wanted.limit;
    this.#viewAll.href = `${wanted.server}/`;
    void this.#start(this.#generation, wanted);
  }

  #stop(): void {
    this.#generation += 1;
    this.#settings = undefined;
    this.#watch?.close();
    this.#watch = undefined;
    clearTimeout(this.#retryTimer);
    this.#attempt = 0;
    this.#notice = "";
  }

  /** List, then watch from the list's seq: the watch replays whatever happened since (docs/inbox.md, "Sequenced sync"). */
  async #start(generation: number, settings: Settings): Promise<void> {
    this.#setState(this.#state === "reconnecting" ? "reconnecting" : "connecting");
    let seq: number;
    try {
      seq = await this.#load(generation, settings);
    } catch (error) {
      if (generation !== this.#generation) return;
      const status = error instanceof HttpError ? error.status : 0;
      if (status === 401) return this.#setState("unauthorized");
      // A refused scope or Origin (403) or a request Herald does not understand will not get better by retrying.
      if (status >= 400 && status < 500 && status !== 408 && status !== 429) return this.#setState("error");
      this.#setState("reconnecting");
      const delay = Math.round(Math.random() * Math.min(RETRY_MAX_MS, RETRY_MS * 2 ** this.#attempt));
      this.#attempt += 1;
      this.#retryTimer = setTimeout(() => {
        if (generation === this.#generation) void this.#start(generation, settings);
      }, delay);
      return;
    }
    if (generation !== this.#generation) return;
    this.#attempt = 0;
    this.#watch = watchInbox({
      baseUrl: settings.server,
      token: settings.token,
      format: "markdown",
      sync: true,
      afterSeq: seq,
      onNotification: (frame) => {
        if (generation === this.#generation) this.#arrived(frame);
      },
      onChange: (frame) => {
        if (generation === this.#generation) this.#changed(frame);
      },
      // The events after the last delivered seq are gone (4409): list again and resume from that list's seq.
      onResync: () => this.#load(generation, settings),
      onStatus: (status, detail) => {
        if (generation === this.#generation) this.#watchStatus(status, detail);
      },
    });
  }

  /**
   * Lists the inbox into the element, as many items as it held (from `limit` up to the API's largest page); returns
   * the list's seq. Throws on failure (the watch retries a resync).
   */
  async #load(generation: number, settings: Settings): Promise<number> {
    const size = Math.min(MAX_PAGE, Math.max(settings.limit, this.#capacity));
    const page = await listInbox(settings, size);
    if (generation !== this.#generation) throw new Error("superseded");
    this.#items = page.notifications.filter(visible);
    this.#capacity = size;
    this.#complete = page.notifications.length < size;
    this.#listSeq = page.seq;
    this.#setUnread(page.unread_count, false);
    this.#render();
    return page.seq;
  }

  /**
   * A change showed an item this copy never had (unarchived elsewhere): list again. A list older than frames already
   * applied would undo them, so such a list is read again (a few times at most).
   */
  async #refresh(generation: number, settings: Settings, tries = 3): Promise<void> {
    try {
      const seq = await this.#load(generation, settings);
      const delivered = this.#watch?.seq;
      if (delivered !== undefined && seq < delivered && tries > 1) await this.#refresh(generation, settings, tries - 1);
    } catch {
      // The next change or reconnect lists again; the count, from frames, stays right meanwhile.
    }
  }

  /**
   * The page after the last item held (`starting_before`, as the dashboard pages, docs/inbox.md, "Sequenced sync"):
   * the page is true at its own seq, so the change frames that arrived after it are applied on top; new
   * notifications are already at the top of the list.
   */
  async #loadMore(): Promise<void> {
    const settings = this.#settings;
    const last = this.#items.at(-1);
    if (!settings || !last || this.#complete || this.#loadingMore) return;
    const generation = this.#generation;
    this.#loadingMore = true;
    this.#render();
    try {
      const page = await listInbox(settings, settings.limit, last.id);
      if (generation !== this.#generation) return;
      let more = page.notifications;
      for (const frame of this.#frames) if (frame.seq > page.seq) more = applyChange(more, frame.change, () => true).items;
      const held = new Set(this.#items.map((item) => item.id));
      this.#items = [...this.#items, ...more.filter((item) => visible(item) && !held.has(item.id))];
      this.#capacity = Math.max(this.#capacity, this.#items.length);
      this.#complete = page.notifications.length < settings.limit;
      this.#notice = "";
    } catch {
      if (generation === this.#generation) this.#fail("Older notifications could not be loaded.");
    } finally {
      if (generation === this.#generation) {
        this.#loadingMore = false;
        this.#render();
      }
    }
  }

  #watchStatus(status: WatchStatus, detail: string | undefined): void {
    if (status === "open") this.#setState("live");
    else if (status === "reconnecting") this.#setState("reconnecting");
    else if (status === "stopped" && detail === "replaced") {
      // The person's newer watches pushed this one out (4429): reconnecting would push out another (docs/embed.md).
      this.#setState("error");
      this.#fail("Too many open inboxes: this one stopped updating. Reload the page to resume.");
    } else if (status === "stopped" && detail !== "closed") this.#setState("unauthorized");
  }

  #arrived(frame: NotificationFrame): void {
    if (frame.seq <= this.#listSeq) return;
    const notification = frame.notification;
    const items = [notification, ...this.#items.filter((item) => item.id !== notification.id)];
    // The oldest item pushed out can come back with "Load more".
    if (items.length > this.#capacity) this.#complete = false;
    this.#items = items.slice(0, this.#capacity);
    this.#setUnread(frame.unread_count, false);
    this.#render();
    const event = withPlainTitle(notification);
    this.#announce(`New notification: ${event.title || plainText(notification.content)}. ${frame.unread_count} unread.`);
    // A copy: the page's listeners cannot change what the element shows.
    this.dispatchEvent(new CustomEvent("herald-notification", { detail: event, bubbles: true, composed: true }));
  }

  #changed(frame: ChangeFrame): void {
    this.#frames.push(frame);
    if (this.#frames.length > KEPT_FRAMES) this.#frames.shift();
    if (frame.seq <= this.#listSeq) return;
    const { items, unseen, revealed } = applyChange(this.#items, frame.change, (id) => this.#views.has(id));
    this.#items = items;
    this.#setUnread(frame.unread_count, true);
    this.#render();
    // An item this list has not shown came back (unarchived, woken): only the server knows where it goes.
    const settings = this.#settings;
    if (unseen && revealed && settings) void this.#refresh(this.#generation, settings);
  }

  async #read(id: string): Promise<void> {
    const settings = this.#settings;
    if (!settings) return;
    const generation = this.#generation;
    try {
      const answer = await markRead(settings, id);
      if (generation !== this.#generation) return;
      this.#notice = "";
      this.#items = this.#items.map((item) => (item.id === id ? { ...item, read_at: answer.notification.read_at } : item));
      // While live, the change frame brings the count in seq order; an answer could be older than a frame already applied.
      if (this.#state !== "live") this.#setUnread(answer.unread_count, true);
      this.#render();
    } catch {
      if (generation === this.#generation) this.#fail("The notification could not be marked as read.");
    }
  }

  /** Archives the item: it leaves the list at once; the change frame that follows finds it gone already. */
  async #archive(id: string): Promise<void> {
    const settings = this.#settings;
    if (!settings) return;
    const generation = this.#generation;
    try {
      const answer = await archive(settings, id);
      if (generation !== this.#generation) return;
      this.#notice = "";
      this.#items = this.#items.filter((item) => item.id !== id);
      if (this.#state !== "live") this.#setUnread(answer.unread_count, true);
      this.#render();
    } catch {
      if (generation === this.#generation) this.#fail("The notification could not be archived.");
    }
  }

  async #readAll(): Promise<void> {
    const settings = this.#settings;
    if (!settings) return;
    const generation = this.#generation;
    try {
      await markAllRead(settings);
      if (generation !== this.#generation) return;
      this.#notice = "";
      if (this.#state !== "live") {
        const now = new Date().toISOString();
        this.#items = this.#items.map((item) => (item.read_at === null && item.snoozed_until === null ? { ...item, read_at: now } : item));
        this.#setUnread(0, true);
      }
      this.#render();
    } catch {
      if (generation === this.#generation) this.#fail("The notifications could not be marked as read.");
    }
  }

  #fail(message: string): void {
    this.#notice = message;
    this.#render();
    this.#announce(message);
  }

  #setState(state: HeraldInboxState): void {
    if (state === this.#state) return;
    this.#state = state;
    this.#render();
    this.dispatchEvent(new CustomEvent("herald-status", { detail: { state }, bubbles: true, composed: true }));
  }

  #setUnread(count: number, announce: boolean): void {
    if (count === this.#unread) return;
    const first = this.#unread === undefined;
    this.#unread = count;
    if (announce && !first) this.#announce(`${count} unread ${count === 1 ? "notification" : "notifications"}.`);
    this.dispatchEvent(new CustomEvent("herald-unread-count", { detail: { unreadCount: count }, bubbles: true, composed: true }));
  }

  #announce(message: string): void {
    this.#announcer.textContent = message;
  }

  #toggle(open: boolean, focusBell = false): void {
    if (open === this.#open) return;
    this.#open = open;
    this.#panel.hidden = !open;
    this.#bell.setAttribute("aria-expanded", String(open));
    if (open) {
      document.addEventListener("click", this.#outside, true);
      this.#render(true);
    } else {
      document.removeEventListener("click", this.#outside, true);
      if (focusBell) this.#bell.focus();
    }
  }

  /** A click anywhere outside the element closes the panel (the path crosses the shadow boundary, so it sees inside). */
  readonly #outside = (event: Event): void => {
    if (!event.composedPath().includes(this)) this.#toggle(false);
  };

  #render(times = false): void {
    const unread = this.#unread;
    this.#bell.setAttribute("aria-label", unread === undefined ? "Notifications" : `Notifications, ${unread} unread`);
    this.#badge.hidden = !unread;
    this.#badge.textContent = unread !== undefined && unread > 99 ? "99+" : String(unread ?? 0);
    this.#markAll.disabled = !unread;

    // A list already shown stays while reconnecting; the status line says it may be stale.
    const loaded = unread !== undefined;
    const status = this.#notice || (this.#state === "connecting" && loaded ? "" : (STATUS_TEXT[this.#state] ?? ""));
    this.#status.hidden = status === "";
    this.#status.textContent = status;
    this.#empty.hidden = this.#items.length > 0 || !loaded;
    this.#list.hidden = this.#items.length === 0;
    this.#more.hidden = this.#complete || this.#items.length === 0;
    this.#more.disabled = this.#loadingMore;
    this.#more.textContent = this.#loadingMore ? "Loading…" : "Load more";

    const wanted = new Set(this.#items.map((item) => item.id));
    // An item that leaves (archived) while it holds the focus hands it to the item in its place, else the list.
    let focusAt: number | undefined;
    const focused = this.#root.activeElement;
    for (const [id, view] of this.#views) {
      if (wanted.has(id)) continue;
      if (focused && view.contains(focused)) focusAt = [...this.#list.children].indexOf(view);
      view.remove();
      this.#views.delete(id);
    }
    const now = Date.now();
    this.#items.forEach((item, index) => {
      const key = viewKey(item);
      let view = this.#views.get(item.id);
      if (!view || this.#viewKeys.get(view) !== key) {
        const fresh = itemView(item, {
          now,
          server: this.#settings?.server ?? location.origin,
          read: (id) => void this.#read(id),
          archive: (id) => void this.#archive(id),
        });
        this.#viewKeys.set(fresh, key);
        if (view) {
          // The item changed (read): keep the keyboard where it was instead of dropping focus to the page.
          const focused = this.#root.activeElement;
          const hadFocus = focused !== null && view.contains(focused);
          view.replaceWith(fresh);
          if (hadFocus) fresh.focus();
        }
        this.#views.set(item.id, fresh);
        view = fresh;
      } else if (times) {
        const time = view.querySelector("time");
        if (time) time.textContent = relativeTime(item.created_at, now);
      }
      // Only misplaced items move: moving a node would take the focus out of it.
      const at = this.#list.children[index];
      if (at !== view) this.#list.insertBefore(view, at ?? null);
    });
    if (focusAt !== undefined) {
      const next = this.#list.children[Math.min(focusAt, this.#list.children.length - 1)];
      (next instanceof HTMLElement ? next : this.#list).focus();
    }
  }
}
