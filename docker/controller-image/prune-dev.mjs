// Removes the development-only packages from node_modules, as
// `npm prune --omit=dev` would, without npm (the image's Node has none) and
// without a registry: package-lock.json marks each of them `"dev": true`.
import { readFileSync, rmSync } from 'node:fs';

const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'));
let removed = 0;
for (const [path, entry] of Object.entries(lock.packages ?? {})) {
  if (entry.dev && path.startsWith('node_modules/')) {
    rmSync(path, { recursive: true, force: true });
    removed++;
  }
}
console.log(`prune-dev: removed ${removed} development packages`);
