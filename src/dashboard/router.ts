import { useEffect, useState } from "preact/hooks";

/**
 * The dashboard's pages live in the URL's fragment (`/#/inbox`): the Worker serves one HTML page at `/`, and a
 * fragment never reaches a server or a log (docs/dashboard.md#pages).
 */
export type Route =
  | "sign-in"
  | "setup"
  | "reset-password"
  | "inbox"
  | "preferences"
  | "account"
  | "admin/users"
  | "admin/notifier"
  | "admin/templates"
  | "admin/messages"
  | "admin/broadcasts";

const ROUTES: readonly Route[] = [
  "sign-in",
  "setup",
  "reset-password",
  "inbox",
  "preferences",
  "account",
  "admin/users",
  "admin/notifier",
  "admin/templates",
  "admin/messages",
  "admin/broadcasts",
];

/** The page the fragment names; `undefined` for an empty or unknown one. */
function currentRoute(): Route | undefined {
  const name = location.hash.replace(/^#\/?/, "").split("?")[0] ?? "";
  return ROUTES.find((route) => route === name);
}

export function href(route: Route): string {
  return `#/${route}`;
}

export function navigate(route: Route): void {
  if (currentRoute() !== route) location.hash = href(route);
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
