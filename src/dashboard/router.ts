import { useEffect, useState } from "preact/hooks";

/**
 * The dashboard's pages live in the URL's fragment (`/#/inbox`): the Worker serves one HTML page at `/`, and a
 * fragment never reaches a server or a log (docs/dashboard.md#pages).
 */
export type Route =
  | "sign-in"
  | "setup"
  | "reset-password"
  | "second-factor"
  | "not-me"
  | "inbox"
  | "preferences"
  | "account"
  | "enrol-factor"
  | "admin/users"
  | "admin/notifier"
  | "admin/templates"
  | "admin/messages"
  | "admin/broadcasts"
  | "audit";

const ROUTES: readonly Route[] = [
  "sign-in",
  "setup",
  "reset-password",
  "second-factor",
  "not-me",
  "inbox",
  "preferences",
  "account",
  "enrol-factor",
  "admin/users",
  "admin/notifier",
  "admin/templates",
  "admin/messages",
  "admin/broadcasts",
  "audit",
];

/**
 * The paths the seeded notices link to (Coder's, kept so links in e-mails already sent still work) and the page each
 * opens. A `status:` filter in `?filter=` becomes the users page's status filter.
 */
const DEEP_LINKS: Record<string, (query: URLSearchParams) => string> = {
  "/deployment/notifications": () => href("admin/notifier"),
  "/deployment/users": (query) => {
    const status = /(?:^|\s)status:(active|suspended)(?:\s|$)/.exec(query.get("filter") ?? "")?.[1];
    return status ? `${href("admin/users")}?status=${status}` : href("admin/users");
  },
};

/** Opened on one of the notices' paths: the address becomes the dashboard's own (`/#/…`) before the app starts. */
export function takeDeepLink(): void {
  const target = DEEP_LINKS[location.pathname];
  if (target) history.replaceState(null, "", `/${target(new URLSearchParams(location.search))}`);
}

/** A parameter of the fragment's query (`#/admin/users?status=suspended`). */
export function routeParam(name: string): string | null {
  return new URLSearchParams(location.hash.split("?")[1] ?? "").get(name);
}

/** The page the fragment names; `undefined` for an empty or unknown one. */
export function currentRoute(): Route | undefined {
  const name = location.hash.replace(/^#\/?/, "").split("?")[0] ?? "";
  return ROUTES.find((route) => route === name);
}

export function href(route: Route): string {
  return `#/${route}`;
}

export function navigate(route: Route, query?: Record<string, string>): void {
  if (currentRoute() === route) return;
  location.hash = query ? `${href(route)}?${new URLSearchParams(query)}` : href(route);
}

/** Where the sign-in that is finishing goes: the inbox, unless it was started for another page of the dashboard. */
let landing: string | undefined;

/** Sets the page (a fragment, `#/…`) that the next finished sign-in opens instead of the inbox. */
export function landAfterSignIn(fragment: string): void {
  landing = fragment;
}

/** Opens the page a finished sign-in goes to. */
export function navigateAfterSignIn(): void {
  const target = landing ?? href("inbox");
  landing = undefined;
  if (location.hash !== target) location.hash = target;
}

/** The page shown now, updated on every change of the fragment. */
export function useRoute(): Route | undefined {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const changed = () => setRoute(currentRoute());
    addEventListener("hashchange", changed);
    return () => removeEventListener("hashchange", changed);
  }, []);
  return route;
}
