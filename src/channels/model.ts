import type { DispatchMethod } from "../db/schema";

/**
 * A channel a person can switch per template (docs/channels.md, "Channel preferences"): their e-mail, every browser
 * they subscribed to push, or one of their own targets.
 */
export type ChannelKey = "email" | "push" | `target:${string}`;

/** What one user can be reached at besides the inbox: push subscriptions, and targets once verified. */
export interface Destinations {
  push: string[];
  targets: string[];
}

/** The user's switches for one template: channel → enabled. A channel not in the map is enabled. */
export type ChannelSwitches = ReadonlyMap<string, boolean>;

/** The copies meant for the person themself, which their schedule and channel switches govern. */
const PERSONAL_METHODS: readonly DispatchMethod[] = ["smtp", "push", "target"];

export function isPersonal(method: DispatchMethod): boolean {
  return PERSONAL_METHODS.includes(method);
}

const TARGET_PREFIX = "target:";

/** The channel key of one of the user's targets. */
export function targetChannel(targetId: string): ChannelKey {
  return `${TARGET_PREFIX}${targetId}`;
}

/** The target a channel key names; undefined for `email` and `push`. */
export function targetIdOf(channel: string): string | undefined {
  return channel.startsWith(TARGET_PREFIX) ? channel.slice(TARGET_PREFIX.length) : undefined;
}

/** The switch that governs a copy, if any: the deployment's webhook and the inbox have none. */
function channelOf(method: DispatchMethod, destination: string | null): ChannelKey | undefined {
  if (method === "smtp") return "email";
  if (method === "push") return "push";
  if (method === "target" && destination !== null) return targetChannel(destination);
  return undefined;
}

/** The message-log reason of a copy its channel switch turned off. */
export function switchedOffReason(channel: ChannelKey): string {
  const name = channel === "email" ? "e-mail" : channel === "push" ? "push" : "this target";
  return `disabled for ${name} by the user's channel preferences`;
}

/**
 * A copy's first state once its channel switch is applied: a pending copy whose channel the user switched off is
 * recorded `inhibited`, saying so; mandatory templates ignore the switches.
 */
export function applySwitch<T extends { status: string; statusReason: string | null }>(
  initial: T,
  switches: ChannelSwitches,
  copy: { method: DispatchMethod; destination: string | null },
  mandatory: boolean,
): T | { status: "inhibited"; statusReason: string } {
  const channel = channelOf(copy.method, copy.destination);
  if (mandatory || channel === undefined || initial.status !== "pending" || switches.get(channel) !== false) return initial;
  return { status: "inhibited", statusReason: switchedOffReason(channel) };
}

/** One copy to make: a method, and for `push` and `target` the subscription or target it goes to. */
export interface PlannedCopy {
  method: DispatchMethod;
  destination: string | null;
}

/**
 * The copies of one notification for one person (docs/channels.md, "One copy per destination"): the template's own
 * (`methods`: its external method, and the inbox unless external-only), then one per push subscription and per
 * verified target. A template the user turned off sends nothing anywhere, so it gets no per-destination copies (its
 * e-mail and inbox copies record why). External-only templates (the passcode) never go to a browser or a chat
 * channel: a code on a lock screen or in a shared channel is a code others can read. Mandatory templates (security
 * notices) go to the person's browsers but not to their targets.
 */
export function plannedCopies(
  methods: readonly DispatchMethod[],
  destinations: Destinations,
  template: { externalOnly: boolean; mandatory: boolean },
  disabled: boolean,
): PlannedCopy[] {
  const own = methods.map((method) => ({ method, destination: null }));
  if (disabled || template.externalOnly) return own;
  return [
    ...own,
    ...destinations.push.map((id) => ({ method: "push" as const, destination: id })),
    // Security notices carry "This wasn't me", a link for the account holder alone; a target may be a shared channel.
    ...(template.mandatory ? [] : destinations.targets.map((id) => ({ method: "target" as const, destination: id }))),
  ];
}
