import { type Channel, DeliveryError } from "./types";

/** Placeholder until the push channel lands on this branch; never reached, since no push copies are created yet. */
export const sendPush: Channel = async () => {
  throw new DeliveryError("push delivery is not available", false);
};
