// The docs cannot drift from the code: every generated table (scripts/docs.ts) is regenerated here and must
// match its page; the settings' documented defaults must be the ones the code applies; the README stays
// short; and every relative link leads to a file, and a heading, that exists.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { test } from 'node:test';
import { RUN_SPECS } from '../../cli/commands/run';
import { CONTROLLER_SETTINGS, loadConfig } from '../../server/config';
import { loadWorkerConfig, WORKER_SETTINGS } from '../../worker/config';
import { blocks, docFiles, markdownTable, render, ROOT, runFlags, TABLES } from '../../scripts/docs';

const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

test('every generated table in README.md and docs/*.md is what the code says now', () => {
  for (const file of docFiles()) {
    for (const b of blocks(read(file), file)) {
      const want = render(b, file);
      assert.ok(
        b.body === want,
        `${file}: the table "${b.name}" differs from ${TABLES[b.name]!.source}; run npm run docs\n--- in ${file}:\n${b.body}\n--- from the code:\n${want}`,
      );
    }
  }
});

test('each generated table is in some page, so removing its markers does not pass unnoticed', () => {
  const used = new Set(docFiles().flatMap((f) => blocks(read(f), f).map((b) => b.name)));
  for (const name of Object.keys(TABLES)) assert.ok(used.has(name), `no page has <!-- generated:${name} -->`);
});

test('a page whose table was edited by hand fails, naming the page and the table', () => {
  const page = '# x\n\n<!-- generated:exit-codes -->\n| Code | Meaning |\n<!-- /generated:exit-codes -->\n';
  const [b] = blocks(page, 'docs/x.md');
  assert.equal(b?.name, 'exit-codes');
  assert.notEqual(b?.body, render(b!, 'docs/x.md'));
  assert.throws(() => blocks('<!-- generated:exit-codes -->\n| a |\n', 'docs/x.md'), /docs\/x\.md: <!-- generated:exit-codes --> has no/);
  assert.throws(() => render({ name: 'nonsense', args: [] }, 'docs/x.md'), /docs\/x\.md: no generated table is called nonsense/);
  assert.throws(() => TABLES['worker-env']!.render(['RC_NOPE']), /RC_NOPE is not a setting of worker\/config\.ts/);
});

test('rc run --help describes every flag rc run parses, and only those', () => {
  const flags = runFlags();
  assert.deepEqual(
    flags.map((f) => f.spec.name).sort(),
    RUN_SPECS.filter((s) => s.name !== 'help')
      .map((s) => s.name)
      .sort(),
  );
  assert.equal(flags.find((f) => f.spec.name === 'select')?.usage, '-s, --select <selector>');
  // A flag alone on its line takes its meaning from the lines under it.
  assert.match(flags.find((f) => f.spec.name === 'gpu-idle-timeout')?.meaning ?? '', /^kill the job once its GPUs have been idle/);
  const help = 'usage: rc run\n\n  -s, --select <selector>   labels\n      --nope                not a flag\n';
  assert.throws(() => runFlags(help, RUN_SPECS), /describes --nope, which rc run does not take/);
  assert.throws(() => runFlags('  -s, --select <selector>   labels\n', RUN_SPECS), /does not describe --device/);
  assert.throws(() => runFlags('      --no-wait <x>   y\n', RUN_SPECS), /disagree on whether --no-wait takes a value/);
});

test('a table pads its columns and escapes a | inside a cell', () => {
  assert.equal(markdownTable(['A', 'B'], [['x', '`a | b`']]), '| A   | B        |\n| --- | -------- |\n| x   | `a \\| b` |');
});

test('a setting documented with a default in backticks has that default in the code', () => {
  // A literal that names a path (./rc-workspace, <checkout>/.rc) is resolved by the code, not compared.
  const literal = (d: string) => /^`([^`<>/$~]+)`/.exec(d)?.[1];
  const env = (e: Record<string, string | undefined>) => e as unknown as NodeJS.ProcessEnv;
  const controllerDefaults = loadConfig(env({}));
  for (const [name, doc] of Object.entries(CONTROLLER_SETTINGS)) {
    const key = name as keyof typeof CONTROLLER_SETTINGS;
    const value = literal(doc.default);
    if (value !== undefined) assert.deepEqual(loadConfig(env({ [name]: value }))[key], controllerDefaults[key], `${name}: docs say ${doc.default}`);
    else if (doc.default.startsWith('unset')) assert.equal(controllerDefaults[key], undefined, `${name}: docs say unset`);
  }
  const base = { RC_CONTROLLER: 'http://127.0.0.1:1', RC_HOST_TOKEN: 'rc_h_0123456789' };
  const workerDefaults = loadWorkerConfig(env(base));
  for (const [name, doc] of Object.entries(WORKER_SETTINGS)) {
    const key = name as keyof typeof WORKER_SETTINGS;
    const value = literal(doc.default);
    if (value !== undefined) assert.deepEqual(loadWorkerConfig(env({ ...base, [name]: value }))[key], workerDefaults[key], `${name}: docs say ${doc.default}`);
    else if (doc.default.startsWith('unset')) assert.equal(workerDefaults[key], undefined, `${name}: docs say unset`);
    else if (doc.default === 'required')
      assert.throws(() => loadWorkerConfig(env({ ...base, [name]: undefined })), new RegExp(name), `${name}: docs say required`);
  }
  // The literals are compared at all: a broken pattern would skip every row.
  assert.equal(literal(CONTROLLER_SETTINGS.RC_OUTPUT_LIMIT_BYTES.default), '16777216');
});

test('README.md is at most 10 KiB', () => {
  const size = statSync(join(ROOT, 'README.md')).size;
  assert.ok(size <= 10_240, `README.md is ${size} bytes, over 10,240: move reference material to docs/ (docs/development.md, "The docs")`);
});

/** GitHub's id for a heading: its text, lower-cased, without punctuation, spaces as hyphens; repeats get -1, -2. */
function anchors(markdown: string): Set<string> {
  const ids = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of withoutFences(markdown).split('\n')) {
    const h = /^#{1,6} +(.*?) *#* *$/.exec(line);
    if (!h) continue;
    const text = h[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/[`*]/g, '');
    const id = text
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(id) ?? 0;
    seen.set(id, n + 1);
    ids.add(n === 0 ? id : `${id}-${n}`);
  }
  return ids;
}

/** Fenced blocks hold examples, not headings or links. */
function withoutFences(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
}

test('every relative link in README.md and docs/*.md leads to a file that exists, and to a heading there', () => {
  const broken: string[] = [];
  for (const file of docFiles()) {
    const text = read(file);
    // Code spans hold examples too: `[x](y)` in one is no link.
    for (const m of withoutFences(text)
      .replace(/`+[^`\n]*`+/g, '')
      .matchAll(/!?\[[^\]]*\]\(<?([^)\s>]+)>?(?: "[^"]*")?\)/g)) {
      const target = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
      const [path, anchor] = target.split('#') as [string, string | undefined];
      const full = path === '' ? join(ROOT, file) : join(ROOT, dirname(file), decodeURIComponent(path));
      // A link out of the checkout (docs/architecture.md to the project's DESIGN.md) is not this repository's to check.
      if (relative(ROOT, full).startsWith('..')) continue;
      if (!existsSync(full)) broken.push(`${file}: ${target} (no such file)`);
      else if (anchor && full.endsWith('.md') && !anchors(readFileSync(full, 'utf8')).has(anchor)) broken.push(`${file}: ${target} (no such heading)`);
    }
  }
  assert.deepEqual(broken, []);
});

test('a heading’s id is GitHub’s', () => {
  assert.deepEqual(
    [...anchors("## Exit codes of `rc run`\n## A job's processes\n## 4. Controller settings\n```\n## not a heading\n```\n## Queue\n## Queue\n")],
    ['exit-codes-of-rc-run', 'a-jobs-processes', '4-controller-settings', 'queue', 'queue-1'],
  );
});
