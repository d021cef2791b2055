// deploy/grafana/rc.json queries only what rc serves: every metric name in
// every panel's PromQL is one the controller's registry has (server/metrics.ts),
// or Prometheus's own `up`. A renamed or removed metric fails here rather than
// leaving an empty panel.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Sql } from '../../server/db';
import { Metrics } from '../../server/metrics';

const dashboard = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'deploy', 'grafana', 'rc.json'), 'utf8')) as {
  panels: { title: string; targets: { expr: string }[] }[];
};

/** Prometheus's own series, present for every target it scrapes. */
const PROMETHEUS_OWN = ['up'];
const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset', 'inf', 'nan']);

/** The metric names a PromQL expression reads: identifiers that are not functions, keywords, labels, strings or durations. */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""') // strings (label values)
    .replace(/\{[^}]*\}/g, ' ') // label matchers
    .replace(/\[[^\]]*\]/g, ' ') // ranges and subqueries' durations
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' '); // label lists
  const names = [...bare.matchAll(/(?<![\w$.])([A-Za-z_:][\w:]*)(?![\w:]|\s*\()/g)].map((m) => m[1]!);
  return names.filter((n) => !KEYWORDS.has(n.toLowerCase()));
}

test('the expression parser finds metric names and nothing else', () => {
  assert.deepEqual(metricNames('histogram_quantile(0.99, sum by (le, instance) (rate(rc_x_bucket{job=~"$job",path="pass"}[$__rate_interval])))'), [
    'rc_x_bucket',
  ]);
  assert.deepEqual(metricNames('max(a{state="free"}) / clamp_min(max(b) + max without (instance) (c), 1) and on (job) up'), ['a', 'b', 'c', 'up']);
  assert.deepEqual(metricNames('rc_queue_depth offset 5m'), ['rc_queue_depth']);
});

test("every panel's queries name only metrics rc exports", () => {
  const exported = new Set([...new Metrics({ sql: null as unknown as Sql, devicesByState: () => ({}), heartbeatMs: 5000 }).seriesNames(), ...PROMETHEUS_OWN]);
  // The list is the controller's own registry: rc's families and prom-client's defaults.
  for (const name of ['rc_queue_jobs', 'rc_job_grant_latency_seconds_bucket', 'rc_jobs_ended_total', 'process_resident_memory_bytes'])
    assert.ok(exported.has(name), name);
  assert.ok(dashboard.panels.length >= 7);
  const unknown: string[] = [];
  for (const panel of dashboard.panels) {
    assert.ok(panel.targets.length > 0, `${panel.title}: no query`);
    const names = panel.targets.flatMap((t) => metricNames(t.expr));
    assert.ok(names.length > 0, `${panel.title}: no metric in its queries`);
    for (const n of names) if (!exported.has(n)) unknown.push(`${panel.title}: ${n}`);
  }
  assert.deepEqual(unknown, []);
});

test('the dashboard has a panel for each thing the issue asks to look at', () => {
  const all = dashboard.panels.map((p) => p.targets.map((t) => t.expr).join(' ')).join('\n');
  for (const metric of [
    'rc_queue_jobs',
    'rc_job_grant_latency_seconds_bucket',
    'rc_job_grant_latency_seconds_count',
    'rc_jobs_ended_total',
    'rc_devices',
    'rc_heartbeat_lateness_seconds_bucket',
    'process_resident_memory_bytes',
  ])
    assert.ok(metricNames(all).includes(metric), `no panel reads ${metric}`);
});
