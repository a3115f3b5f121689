/** Types of scripts/offline.mjs, for the TypeScript test suites. */
export const OFFLINE_ENV: { CLOUDFLARE_CF_FETCH_ENABLED: string; WRANGLER_SEND_METRICS: string };
