// The dark theme turns over every colour scale a class names (app/dark.css):
// a hue used in a class but missing there would stay light in the dark theme
// (pale badges, dark text on a dark page). The inline theme script is plain
// script that the browser runs as it is.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { THEME_SCRIPT } from '../../components/theme';

const ROOT = join(import.meta.dirname, '..', '..');
const HUES = 'slate|gray|zinc|neutral|stone|red|orange|amber|yellow|lime|green|emerald|teal|cyan|sky|blue|indigo|violet|purple|fuchsia|pink|rose';

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) return sources(p);
    return /\.(tsx?|css)$/.test(n) && n !== 'dark.css' ? [p] : [];
  });
}

test('every colour a class names has its dark value in app/dark.css', () => {
  const dark = readFileSync(join(ROOT, 'app', 'dark.css'), 'utf8');
  const used = new Set<string>();
  for (const file of [...sources(join(ROOT, 'components')), ...sources(join(ROOT, 'app'))]) {
    for (const m of readFileSync(file, 'utf8').matchAll(new RegExp(`\\b[a-z]+-(${HUES})-(50|[1-9]00|950)\\b`, 'g'))) used.add(`${m[1]}-${m[2]}`);
  }
  assert.ok(used.size > 20, `found the classes (${used.size})`);
  const missing = [...used].filter((c) => !dark.includes(`--color-${c}:`));
  assert.deepEqual(missing, [], 'colours with no dark value (add their scale to app/dark.css)');
});

test('the theme script parses as a script and reads the same key the switch writes', () => {
  assert.doesNotThrow(() => new Function(THEME_SCRIPT));
  assert.match(THEME_SCRIPT, /localStorage\.getItem\('rc-theme'\)/);
});
