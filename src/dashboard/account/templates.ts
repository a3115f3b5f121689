import { api, call } from "../api";

/** Every template a person can receive, system then custom: Preferences' list and the channel grid's rows. */
export async function loadTemplates() {
  const [system, custom] = await Promise.all([call(api.notifications.templates.system.$get()), call(api.notifications.templates.custom.$get())]);
  return [...system, ...custom];
}
