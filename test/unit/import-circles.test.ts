// No import circles in the product's code, type-only imports included: a file
// that two others need in turn is a module waiting to be named.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';

const root = join(import.meta.dirname, '../..');
const DIRS = ['server', 'app', 'cli', 'worker', 'core', 'protocol', 'components', 'db', 'bench', 'scripts'];
const EXTS = ['.ts', '.tsx', '.mts', '.js', '.mjs'];

function sources(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' || e.name === '.next' ? [] : sources(p);
    return EXTS.some((x) => e.name.endsWith(x)) && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

/** A relative import's file, as TypeScript would find it; null for a package or a file not in the tree. */
function resolveImport(from: string, spec: string): string | null {
  if (!spec.startsWith('.')) return null;
  const base = resolve(dirname(from), spec);
  const candidates = [base, ...EXTS.map((x) => base + x), ...EXTS.map((x) => join(base, `index${x}`)), base.replace(/\.js$/, '.ts')];
  return candidates.find((c) => existsSync(c) && statSync(c).isFile()) ?? null;
}

/** Each file's relative imports, type-only ones included. */
function importGraph(files: readonly string[]): Map<string, string[]> {
  const edges = new Map<string, string[]>();
  for (const f of files) {
    const info = ts.preProcessFile(readFileSync(f, 'utf8'), true, true);
    edges.set(
      f,
      info.importedFiles.map((i) => resolveImport(f, i.fileName)).filter((x): x is string => x !== null),
    );
  }
  return edges;
}

/** Each circle of a graph, as its files (Tarjan's strongly connected components of more than one file, or a file importing itself). */
function circlesOf(edges: ReadonlyMap<string, readonly string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const circles: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (edges.get(v) ?? []).includes(v)) circles.push(scc.sort());
    }
  };
  for (const f of edges.keys()) if (!idx.has(f)) visit(f);
  return circles;
}

test('no import circles, type-only imports included', () => {
  const circles = circlesOf(importGraph(DIRS.flatMap((d) => sources(join(root, d)))));
  assert.deepEqual(
    circles.map((c) => c.map((f) => relative(root, f))),
    [],
  );
});

test('a circle is found where there is one, a file importing itself too', () => {
  const graph = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a']],
    ['d', ['a']],
    ['e', ['e']],
  ]);
  assert.deepEqual(circlesOf(graph), [['a', 'b', 'c'], ['e']]);
});
