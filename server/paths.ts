// Where the checkout is, found from this module's location. It works from
// the sources (tsx), from dist/ (esbuild bundles) and from Next's server bundle.
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(): string {
  if (process.env.RC_ROOT) return resolve(process.env.RC_ROOT);
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    if (existsSync(join(dir, 'db', 'migrations'))) return dir;
    dir = dirname(dir);
  }
  return process.cwd();
}

export const ROOT = findRoot();
export const MIGRATIONS_DIR = join(ROOT, 'db', 'migrations');
