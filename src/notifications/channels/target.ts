import { type Channel, DeliveryError } from "./types";

/** Placeholder until the target channel lands on this branch; never reached, since no target copies are created yet. */
export const sendTarget: Channel = async () => {
  throw new DeliveryError("target delivery is not available", false);
};
