/**
 * One of the things an inbox object does at a time of its own (docs/inbox.md, "The alarm"): when it is next due, and
 * the work. `run` is called every time the alarm fires and does only what is due at `now`, so duties need not know
 * which of them the alarm was set for.
 */
export interface AlarmDuty {
  /** When this duty is next due (epoch ms), if it has anything to do. */
  nextDue(now: number): number | undefined;
  run(now: number): void | Promise<void>;
}

/**
 * A Durable Object has one alarm; this shares it between duties. It is always set to the earliest time any duty is
 * due, re-armed after every change that moves one of those times and after every firing, and deleted when nothing
 * is due. A firing runs every duty in order, then re-arms.
 */
export class SharedAlarm {
  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly duties: readonly AlarmDuty[],
  ) {}

  /** Sets the alarm to the earliest time due, counting `also` (a time about to become a duty's, e.g. a new socket's). */
  async rearm(now: number, also: readonly number[] = []): Promise<void> {
    const due = [...also];
    for (const duty of this.duties) {
      const at = duty.nextDue(now);
      if (at !== undefined) due.push(at);
    }
    const current = await this.storage.getAlarm();
    if (due.length === 0) {
      if (current !== null) await this.storage.deleteAlarm();
      return;
    }
    const next = Math.min(...due);
    if (current !== next) await this.storage.setAlarm(next);
  }

  async fire(now: number): Promise<void> {
    for (const duty of this.duties) await duty.run(now);
    await this.rearm(now);
  }
}
