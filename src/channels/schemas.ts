import * as z from "zod";
import { uuid } from "../http/ids";
import { described, exemplified, named } from "../openapi/registry";
import { ChannelMessages } from "./messages";

/** At most this many switches in one PUT (docs/channels.md, "Channel preferences"). */
const SWITCHES_PER_PUT = 100;

const CHANNEL = /^(email|push|target:[0-9a-fA-F-]{36})$/;

const channel = described(
  '`"email"`, `"push"` (every browser the user subscribed), or `"target:<id>"` for one of the user\'s own targets.',
  exemplified(["push"], z.string().max(43, ChannelMessages.badChannel).regex(CHANNEL, ChannelMessages.badChannel)),
);

export const ChannelSwitch = named(
  "ChannelPreference",
  z.strictObject({ template_id: described("A template id.", uuid), channel, enabled: z.boolean() }),
);

export const channelsBody = named(
  "UpdateUserChannelPreferences",
  z.array(ChannelSwitch).min(1).max(SWITCHES_PER_PUT),
  `The switches to set (at most ${SWITCHES_PER_PUT}); the others keep their values.`,
);
