import { render } from "preact";
import { App } from "./app";
import { takeResetLink } from "./signin/reset-password";
import { applyTheme } from "./ui/theme";
import "./styles.css";

applyTheme();
takeResetLink();
const root = document.getElementById("app");
if (root) render(<App />, root);
