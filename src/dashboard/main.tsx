import { render } from "preact";
import { App } from "./app";
import { takeDeepLink } from "./router";
import { takeResetLink } from "./signin/reset-password";
import { applyTheme } from "./ui/theme";
import "./styles.css";

applyTheme();
takeResetLink();
takeDeepLink();
const root = document.getElementById("app");
if (root) render(<App />, root);
