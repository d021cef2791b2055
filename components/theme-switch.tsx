'use client';
// The header's theme switch: the system's, light or dark (components/theme.ts).
import { useEffect, useState } from 'react';
import { chooseTheme, keepTheme, savedTheme, THEMES, type Theme } from './theme';

export function ThemeSwitch() {
  // 'system' until mounted: the server cannot know the saved choice.
  const [theme, setTheme] = useState<Theme>('system');
  useEffect(() => setTheme(savedTheme()), []);
  useEffect(keepTheme, []);
  return (
    <select
      aria-label="Theme"
      value={theme}
      onChange={(e) => {
        const t = e.target.value as Theme;
        setTheme(t);
        chooseTheme(t);
      }}
      className="rounded bg-white px-1 py-1 text-xs text-zinc-700 ring-1 ring-zinc-300"
    >
      {THEMES.map((t) => (
        <option key={t} value={t}>
          {t === 'system' ? 'System theme' : t === 'light' ? 'Light' : 'Dark'}
        </option>
      ))}
    </select>
  );
}
