/**
 * The messages and details of the inbox routes, and the close reasons of the watch socket. Clients compare these
 * strings, so they are written once here and imported by the code that answers with them and the tests; docs/api.md
 * (Conventions) describes the error shape they go in, and docs/api.md (Watching the inbox) the close codes.
 */
export const InboxMessages = {
  websocketOnly: "This endpoint only serves WebSocket connections.",
  websocketOnlyDetail: "Send a WebSocket upgrade request (Upgrade: websocket).",
  unsupportedSubprotocol: "Unsupported WebSocket subprotocol.",
  unsupportedSubprotocolDetail: (protocol: string) => `Offer the "${protocol}" subprotocol.`,
  unknownStartingBefore: "No notification of yours has this id.",
  markedRead: "Notification marked as read.",
  markedUnread: "Notification marked as unread.",
  archived: "Notification archived.",
  unarchived: "Notification unarchived.",
  snoozed: "Notification snoozed.",
  unsnoozed: "Notification unsnoozed.",
  snoozeRange: "Must be at least 1 minute and at most 366 days ahead.",
  afterSeqAhead: (seq: number) => `Greater than this inbox's current seq (${seq}): list the inbox and resume from the seq it reports.`,
  /** Close reasons of the watch socket (4401, 4008, 4409, 4429); a close reason is at most 123 bytes. */
  sessionEnded: "Your session has ended: sign in again.",
  sessionExpired: "Your session has expired: sign in again.",
  fellBehind: "Falling behind: reconnect with after_seq to catch up.",
  resync: "The events after this seq are no longer kept: list the inbox and resume from the seq it reports.",
  tooManyWatches: "Too many open watches for this user: this, the oldest, was closed.",
} as const;
