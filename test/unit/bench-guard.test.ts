// npm run bench's guard: a job-path figure more than 30 % behind the record fails the run,
// in either direction of "better", and a figure without a record passes.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { compare, guard, machineKey } from '../../scripts/bench-guard.mjs';

const fig = (value: number, better: 'lower' | 'higher', unit = 'ms') => ({ value, better, unit });

test('a time 31 % longer or a rate 31 % lower is behind; 29 % is not; better is never behind', () => {
  const last = { t: fig(10, 'lower'), r: fig(100, 'higher', 'jobs/s') };
  assert.deepEqual(compare({ t: fig(13.1, 'lower'), r: fig(69, 'higher', 'jobs/s') }, last).behind, ['t', 'r']);
  assert.deepEqual(compare({ t: fig(12.9, 'lower'), r: fig(71, 'higher', 'jobs/s') }, last).behind, []);
  assert.deepEqual(compare({ t: fig(1, 'lower'), r: fig(900, 'higher', 'jobs/s') }, last).behind, []);
});

test('a figure with no record passes and says so', () => {
  const { behind, rows } = compare({ t: fig(10, 'lower') }, undefined);
  assert.deepEqual(behind, []);
  assert.match(rows[0] ?? '', /no record/);
});

test('a passing run is recorded for this machine; a failing one is not, unless --record', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rc-guard-'));
  const file = join(dir, 'job-path.json');
  const log = console.log;
  console.log = () => {};
  try {
    assert.equal(guard(dir, { t: fig(10, 'lower') }, { file }), 0);
    assert.equal(JSON.parse(readFileSync(file, 'utf8'))[machineKey()].figures.t.value, 10);
    assert.equal(guard(dir, { t: fig(20, 'lower') }, { file }), 1);
    assert.equal(JSON.parse(readFileSync(file, 'utf8'))[machineKey()].figures.t.value, 10, 'the record stays');
    assert.equal(guard(dir, { t: fig(20, 'lower') }, { file, record: true }), 0);
    assert.equal(JSON.parse(readFileSync(file, 'utf8'))[machineKey()].figures.t.value, 20);
  } finally {
    console.log = log;
    rmSync(dir, { recursive: true, force: true });
  }
});
