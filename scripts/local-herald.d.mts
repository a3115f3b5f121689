/** Types of scripts/local-herald.mjs, for the TypeScript end-to-end suite. */
export function freePort(): Promise<number>;
export function startLocalHerald(options: {
  port: number;
  settings: Record<string, string>;
  label?: string;
  timeoutMs?: number;
  mailCatcher?: boolean;
  onSpawn?: (stop: () => Promise<void>) => void;
  persistTo?: string;
}): Promise<{ url: string; mailUrl?: string; output(): string; stop(): Promise<void> }>;
