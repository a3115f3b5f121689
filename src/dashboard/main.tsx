import { render } from "preact";
import { App } from "./app";
import { startServiceWorker } from "./push";
import { takeDeepLink } from "./router";
import { takeNotMeLink } from "./signin/not-me";
import { takeResetLink } from "./signin/reset-password";
import { takeSecondFactorLink } from "./signin/second-factor";
import { applyTheme } from "./ui/theme";
import "./styles.css";

applyTheme();
takeResetLink();
takeNotMeLink();
takeDeepLink();
takeSecondFactorLink();
const root = document.getElementById("app");
if (root) render(<App />, root);
// Shows Web Push messages while Herald is closed, and opens their items when clicked (docs/push.md, "The dashboard").
startServiceWorker();
