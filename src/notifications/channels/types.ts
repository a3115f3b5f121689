import type { Config } from "../../config/config";
import type { MessageRow, TemplateRow } from "../../db/schema";
import type { Env } from "../../env";
import type { RenderedNotification } from "../render";

/** A send either succeeds, fails in a way worth retrying, or fails for good (docs/email.md has the classification of each channel). */
export class DeliveryError extends Error {
  override name = "DeliveryError";
  constructor(
    message: string,
    readonly retryable: boolean,
    /** How long the receiver asked to be left alone (`Retry-After`): the next try waits at least this long. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

export interface DeliveryContext {
  env: Env;
  config: Config;
  message: MessageRow;
  template: TemplateRow;
  rendered: RenderedNotification;
  /** The payload as sent: labels opened, actions rendered, no sealed fields. */
  payload: Record<string, unknown>;
  /** Epoch ms by which the send must be over (inside the lease, and the queue consumer's wall-clock limit). */
  deadline: number;
  /**
   * Called as the send reaches each stage; renews the message's lease, and throws when the lease was lost so the
   * send stops before its next command (docs/email.md, "Never lose, never duplicate").
   */
  progress?: () => Promise<void>;
}

export type Channel = (ctx: DeliveryContext) => Promise<void>;
