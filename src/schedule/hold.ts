import type { DispatchMethod } from "../db/schema";
import type { Schedule } from "./model";

/**
 * Which copies quiet hours hold (docs/schedule.md, "Quiet hours"): external copies meant for the person — e-mail —
 * of templates that are not mandatory. The inbox copy (and so every watch frame) is never held, nor is the
 * deployment's webhook, which feeds machines; passcodes and security notices go out at once.
 */
export function isHeldByQuietHours(method: DispatchMethod, mandatory: boolean, schedule: Schedule): boolean {
  return method === "smtp" && !mandatory && schedule.quietHours.length > 0;
}
