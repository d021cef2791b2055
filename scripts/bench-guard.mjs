// npm run bench's guard (issue 31): the job path's figures against the last
// recorded run on the same machine (bench/results/job-path.json, one entry per
// machine: its CPU model, core count and memory). A figure more than 30 %
// behind fails the run (exit 1), so a regression is seen the day it lands; a
// run that passes becomes the new record (commit the file with the change).
// `--record` records even a failing run (a slower machine state accepted on purpose).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';

export const TOLERANCE = 0.3;

/** The machine, as far as a record can tell one from another. */
export function machineKey() {
  const c = cpus();
  return `${c[0]?.model.trim() ?? 'unknown cpu'} × ${c.length}, ${Math.round(totalmem() / 2 ** 30)} GiB`;
}

/**
 * `figures`: name → { value, better: 'lower' | 'higher', unit }. Pure: which
 * figures fell behind `last` by more than the tolerance, and the table to print.
 */
export function compare(figures, last, tolerance = TOLERANCE) {
  const rows = [];
  const behind = [];
  for (const [name, f] of Object.entries(figures)) {
    const before = last?.[name]?.value;
    if (typeof before !== 'number' || before <= 0) {
      rows.push(`${name.padEnd(46)} ${fmt(f.value, f.unit).padStart(12)}   (no record)`);
      continue;
    }
    // How much worse, as a share of the record: a time that grew, a rate that fell.
    const worse = f.better === 'lower' ? f.value / before - 1 : 1 - f.value / before;
    const verdict =
      worse > tolerance
        ? `BEHIND by ${(worse * 100).toFixed(0)} %`
        : worse > 0
          ? `${(worse * 100).toFixed(0)} % worse`
          : `${(-worse * 100).toFixed(0)} % better`;
    if (worse > tolerance) behind.push(name);
    rows.push(`${name.padEnd(46)} ${fmt(f.value, f.unit).padStart(12)}   record ${fmt(before, f.unit).padStart(12)}   ${verdict}`);
  }
  return { rows, behind };
}

function fmt(v, unit) {
  return `${v.toFixed(1)} ${unit}`;
}

/** Compares, prints, records; resolves to the exit code (1 when a figure fell behind, unless `record`). */
export function guard(root, figures, { record = false, file = join(root, 'bench/results/job-path.json') } = {}) {
  const all = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {};
  const key = machineKey();
  const last = all[key]?.figures;
  const { rows, behind } = compare(figures, last);
  console.log(`\nthe job path against the last recorded run on this machine (${key}${all[key] ? `, ${all[key].at}` : ''}):`);
  for (const r of rows) console.log(`  ${r}`);
  if (behind.length && !record) {
    console.log(
      `\nnpm run bench: FAILED: ${behind.join('; ')} fell more than ${TOLERANCE * 100} % behind the record. Run it again on a quiet machine (these are medians); if it stays behind, find the change that did it, or accept the new figures with npm run bench -- --record.`,
    );
    return 1;
  }
  all[key] = { at: new Date().toISOString(), figures };
  writeFileSync(file, `${JSON.stringify(all, null, 2)}\n`);
  console.log(`recorded in ${file} (commit it with the change)`);
  return 0;
}
