import { buildUi } from "../scripts/build-ui.mjs";

/**
 * Global setup of every suite that starts the Worker: wrangler.toml's [assets] directory must exist, and hold this
 * checkout's dashboard and embed, before the first Worker starts (docs/dashboard.md).
 */
export default async function setup(): Promise<void> {
  await buildUi();
}
