import { HeraldInbox } from "./element";

// The module may be loaded twice (two snippets, or a bundle plus the snippet): the first definition stays.
if (!customElements.get("herald-inbox")) customElements.define("herald-inbox", HeraldInbox);
