// Deep imports of single zxcvbn-ts data files (their packages only type the index, which would pull several hundred
// KiB of dictionaries we do not use into the Worker bundle).
declare module "@zxcvbn-ts/language-common/dist/passwords.json.mjs" {
  const passwords: string[];
  export default passwords;
}

declare module "@zxcvbn-ts/language-common/dist/adjacencyGraphs.json.mjs" {
  import type { OptionsGraph } from "@zxcvbn-ts/core";

  const adjacencyGraphs: OptionsGraph;
  export default adjacencyGraphs;
}

declare module "@zxcvbn-ts/language-en/dist/translations.mjs" {
  import type { TranslationKeys } from "@zxcvbn-ts/core";

  const translations: TranslationKeys;
  export default translations;
}
