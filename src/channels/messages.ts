/**
 * The messages and details of the channel-preference routes (docs/channels.md). Clients compare these strings, so
 * they are written once here and imported by the code that throws them and by the tests.
 */
export const ChannelMessages = {
  forbidden: (action: string) => `You cannot ${action} this user's channel preferences.`,
  badChannel: 'Must be "email", "push", or "target:<id>" naming one of the user\'s targets.',
  unknownTemplate: "Not a notification template id.",
  unknownTarget: "Not one of this user's targets.",
  mandatory: (name: string) => `"${name}" is mandatory: it cannot be turned off.`,
  givenTwice: "This template and channel are given twice with different values.",
} as const;
