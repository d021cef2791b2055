// The dashboard's theme: the system's (prefers-color-scheme), or light or dark
// as the header's switch chose, kept in localStorage. THEME_SCRIPT runs in the
// page's <head> before the first paint, so a dark page never flashes light; it
// also follows the system's changes, and other tabs' choices, while the page is open.

export const THEMES = ['system', 'light', 'dark'] as const;
export type Theme = (typeof THEMES)[number];

const KEY = 'rc-theme';
const SYSTEM_DARK = '(prefers-color-scheme: dark)';

// The same rule as chooseTheme's, as plain script (it runs before any bundle loads).
export const THEME_SCRIPT = `(function(){function apply(){var t=null;try{t=localStorage.getItem('${KEY}')}catch(e){}document.documentElement.classList.toggle('dark',t==='dark'||(t!=='light'&&matchMedia('${SYSTEM_DARK}').matches))}apply();matchMedia('${SYSTEM_DARK}').addEventListener('change',apply);addEventListener('storage',apply)})()`;

export function savedTheme(): Theme {
  try {
    const t = localStorage.getItem(KEY);
    return THEMES.includes(t as Theme) ? (t as Theme) : 'system';
  } catch {
    return 'system';
  }
}

/** Saves the choice (system: none saved) and applies it at once. */
export function chooseTheme(theme: Theme): void {
  try {
    if (theme === 'system') localStorage.removeItem(KEY);
    else localStorage.setItem(KEY, theme);
  } catch {
    // Storage refused (a locked-down profile): this page still follows the choice.
  }
  applyTheme(theme);
}

function applyTheme(theme: Theme): void {
  document.documentElement.classList.toggle('dark', theme === 'dark' || (theme === 'system' && matchMedia(SYSTEM_DARK).matches));
}

/**
 * THEME_SCRIPT's work again, from the page's bundle, for a document the head
 * script did not run in: Next builds a page's notFound() document in the
 * browser, and a script React inserts never runs. Returns the unsubscribe.
 */
export function keepTheme(): () => void {
  const apply = () => applyTheme(savedTheme());
  apply();
  const system = matchMedia(SYSTEM_DARK);
  system.addEventListener('change', apply);
  return () => system.removeEventListener('change', apply);
}
