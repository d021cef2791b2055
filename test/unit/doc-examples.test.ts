// Every --select and --gpu example a person may copy (README.md, docs/*.md,
// the CLI's help, the dashboard's fleet filter) works on the demo fleet
// (npm run demo, bench/simulator/demo-fleet.ts): each selector matches a
// device, each --gpu choice has its count of devices on one host. Pure: the
// demo's labels as the simulator reports them, through core's matcher.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { choiceTerms, parseGpuChoices } from '../../core/gpu-choices';
import { type Labels, matchTerms, parseSelector } from '../../core/selector';
import { DEMO_HOSTS } from '../../bench/simulator/demo-fleet';
import { simInventory } from '../../bench/simulator/inventory';
import { uniformHost } from '../../bench/simulator/spec';
import { FLEET_FILTER_EXAMPLE } from '../../components/fleet/totals';

const ROOT = join(import.meta.dirname, '..', '..');

/** Examples that show a refusal or a mistake on purpose: the flag, the text they are written with, and where and why. */
const MEANT_TO_FAIL: readonly (readonly [Example['kind'], string, string])[] = [
  ['select', 'vram>=200G', 'agents.md and api.md: what a selector that matches nothing gets'],
  ['select', 'vram>>40G', "agents.md: a selector's syntax error"],
  ['gpu', 'B200', 'api.md: the refusal of a choice no device could ever satisfy'],
];
const meantToFail = (e: Example) => MEANT_TO_FAIL.some(([kind, text]) => kind === e.kind && text === e.text);

/** The demo fleet's devices: each one's labels merged with its host's, as selectors see them. */
function demoDevices(): { name: string; host: string; labels: Labels }[] {
  return DEMO_HOSTS.flatMap((h) => {
    const inv = simInventory(uniformHost(h.name, h.model, h.count, { labels: h.labels, quarantine: h.quarantine }), new Date(0));
    const host = Object.fromEntries(inv.hostLabels.map((l) => [l.key, l.value]));
    return inv.devices.map((d) => ({
      name: `${h.name}:gpu${d.index}`,
      host: h.name,
      labels: { ...host, ...Object.fromEntries(d.labels.map((l) => [l.key, l.value])) },
    }));
  });
}

interface Example {
  where: string;
  kind: 'select' | 'gpu';
  text: string;
}

// A flag's value: quoted, or bare up to a space, a backtick, a quote or a pipe (a Markdown table's).
const VALUE = String.raw`(?:'([^']*)'|"([^"]*)"|([^\s\`'"|)]+))`;
const PATTERNS: readonly [Example['kind'], RegExp][] = [
  ['select', new RegExp(String.raw`(?:--select|(?<![\w-])-s)[ =]${VALUE}`, 'g')],
  ['gpu', new RegExp(`--gpu[ =]${VALUE}`, 'g')],
  // --select's own help: "labels the device must have, e.g. 'vram>=40G,vendor=nvidia'".
  ['select', new RegExp(String.raw`must have, e\.g\. ${VALUE}`, 'g')],
  // The API's examples: { "selector": "vram>=40G" }.
  ['select', new RegExp(`"selector": ${VALUE}`, 'g')],
];
// What an example looks like, so that prose after a flag's name (`--select must hold`) is not taken for one:
// a selector has an operator, a --gpu value is names (with a digit: A100, 4090, L4) and counts.
const LOOKS_LIKE: Readonly<Record<Example['kind'], RegExp>> = {
  select: /[=<>]/,
  gpu: /^[A-Za-z0-9 ]*\d[A-Za-z0-9 -]*(?::\d+)?(?:,[A-Za-z0-9 ]*\d[A-Za-z0-9 -]*(?::\d+)?)*$/,
};

function examplesIn(where: string, text: string): Example[] {
  const out: Example[] = [];
  for (const [kind, re] of PATTERNS) {
    for (const m of text.matchAll(re)) {
      const value = m[1] ?? m[2] ?? m[3] ?? '';
      if (LOOKS_LIKE[kind].test(value) && !value.startsWith('<'))
        out.push({ where: `${where}:${text.slice(0, m.index).split('\n').length}`, kind, text: value });
    }
  }
  return out;
}

function sourceFiles(dir: string, ext: RegExp): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => ext.test(f))
    .map((f) => join(dir, f));
}

function allExamples(): Example[] {
  const files = ['README.md', ...sourceFiles('docs', /\.md$/), ...sourceFiles('cli', /\.ts$/)];
  return [
    ...files.flatMap((f) => examplesIn(f, readFileSync(join(ROOT, f), 'utf8'))),
    { where: 'components/fleet/totals.ts FLEET_FILTER_EXAMPLE', kind: 'select', text: FLEET_FILTER_EXAMPLE },
  ];
}

/** Why an example does not work on these devices, or null when it does. */
function problem(e: Example, devices: readonly { host: string; labels: Labels }[]): string | null {
  if (e.kind === 'select') {
    const p = parseSelector(e.text);
    if (!p.ok) return p.error.message;
    return devices.some((d) => matchTerms(p.terms, d.labels)) ? null : 'matches no device';
  }
  const p = parseGpuChoices(e.text);
  if (!p.ok) return p.message;
  for (const c of p.choices) {
    const terms = choiceTerms([], c);
    const perHost = new Map<string, number>();
    for (const d of devices) if (matchTerms(terms, d.labels)) perHost.set(d.host, (perHost.get(d.host) ?? 0) + 1);
    if (Math.max(0, ...perHost.values()) < c.count) return `no host has ${c.count} ${c.model}`;
  }
  return null;
}

test('the docs, the help and the fleet filter have examples, and each works on the demo fleet', () => {
  const devices = demoDevices();
  const examples = allExamples();
  // The extraction finds the examples it is meant to (were it to find none, this test would prove nothing).
  const texts = new Set(examples.map((e) => e.text));
  for (const known of ['vram>=40G', 'A100:2,H100', 'H100,4090', 'vendor=nvidia,gpu_model=H100', 'vram>=40G,vendor=nvidia', FLEET_FILTER_EXAMPLE]) {
    assert.ok(texts.has(known), `the example ${known} was not found`);
  }
  const failing = examples
    .filter((e) => !meantToFail(e))
    .flatMap((e) => {
      const why = problem(e, devices);
      return why ? [`${e.where}: ${e.kind === 'gpu' ? '--gpu' : '--select'} ${e.text}: ${why}`] : [];
    });
  assert.deepEqual(failing, []);
  // And those meant to fail still do: else they no longer show what they say.
  for (const [kind, text, why] of MEANT_TO_FAIL) {
    assert.ok(examples.some((e) => e.kind === kind && e.text === text) && problem({ where: '', kind, text }, devices), `${text} (${why})`);
  }
});

test('the demo fleet has the names people say: an A100 family, 80 GB cards by their nominal size', () => {
  const devices = demoDevices();
  const names = (selector: string) => {
    const p = parseSelector(selector);
    assert.ok(p.ok, selector);
    return devices.filter((d) => matchTerms(p.terms, d.labels)).map((d) => d.name);
  };
  assert.equal(names('gpu_family=A100').length, 4);
  assert.deepEqual(names('gpu_model=A100'), [], 'gpu_model is the exact model: A100-80GB');
  // The H100s report 79.6 GiB: nominally 80 GB, as the A100 80GBs.
  assert.equal(names('vram>=80G').length, 12);
  assert.equal(names('vram_total_bytes>=80G').length, 4);
});
