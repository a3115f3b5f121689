import { createStore } from "./store";

/**
 * Light, dark, or the system's choice (the default). The choice is a display preference, kept in localStorage under
 * its own key; nothing secret is ever stored there (docs/dashboard.md#security).
 */
export type Theme = "system" | "light" | "dark";
const KEY = "herald-theme";

export function asTheme(value: string | null): Theme {
  return value === "light" || value === "dark" ? value : "system";
}

function stored(): Theme {
  try {
    return asTheme(localStorage.getItem(KEY));
  } catch {
    return "system";
  }
}

export const theme = createStore<Theme>(stored());

/** Puts the theme on <html> (styles.css reads `data-theme`), now and whenever it changes. */
export function applyTheme(): void {
  const apply = (value: Theme) => {
    if (value === "system") document.documentElement.removeAttribute("data-theme");
    else document.documentElement.dataset.theme = value;
  };
  apply(theme.get());
  theme.subscribe((value) => {
    apply(value);
    try {
      if (value === "system") localStorage.removeItem(KEY);
      else localStorage.setItem(KEY, value);
    } catch {
      // Private modes may refuse storage; the choice then lasts for this page only.
    }
  });
}
