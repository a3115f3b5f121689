/** Types for scripts/build-ui.mjs, for the test configurations that build the browser bundles first. */
export declare const PUBLIC_DIR: string;
export declare const BUDGETS: { dashboard: number; embed: number };
/** Builds the dashboard and the embed into dist/public; the gzip size of each first load. */
export declare function buildUi(): Promise<{ dashboard: number; embed: number }>;
