// GET /metrics: the controller's own metrics in Prometheus's text format, read
// with a client token (a host credential is refused), moving with what the
// controller does: jobs queued and started (at submit and by a pass), ended,
// output received, heartbeats stored, the pool's wait sampled. Its database
// gauges read only the partial indexes of live jobs, never the whole table.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import postgres from 'postgres';
import { LIVE_JOBS_STATEMENT } from '../../server/metrics';
import { Stack } from '../helpers/stack';

let stack: Stack;
before(async () => {
  // A 3 s host timeout: the controller asks for a heartbeat a second.
  stack = await Stack.start({ hostTimeoutS: 3, workers: [{ name: 'alpha', devices: 2 }] });
});
after(async () => stack.stop());

interface Scrape {
  types: Map<string, string>;
  /** Every sample by its name and labels as written (`rc_devices{state="free"}`). */
  values: Map<string, number>;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*\})? (-?[0-9.e+-]+|NaN|\+Inf|-Inf)$/i;

async function scrape(token: string | null = stack.clientToken): Promise<Scrape> {
  const res = await fetch(`${stack.controllerUrl}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  const types = new Map<string, string>();
  const values = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# HELP ')) continue;
    const t = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (t) {
      types.set(t[1]!, t[2]!);
      continue;
    }
    const m = SAMPLE.exec(line);
    assert.ok(m, `not a Prometheus text line: ${JSON.stringify(line)}`);
    // Go's ParseFloat, as Prometheus reads it: NaN in any case (prom-client writes Nan).
    values.set(m[1]! + (m[2] ?? ''), /nan/i.test(m[3]!) ? Number.NaN : Number(m[3]));
  }
  return { types, values };
}

const value = (s: Scrape, key: string) => s.values.get(key) ?? 0;

async function until(what: string, check: (s: Scrape) => boolean, timeoutMs = 15_000): Promise<Scrape> {
  let last: Scrape | null = null;
  await stack.waitFor(
    async () => {
      last = await scrape();
      return check(last);
    },
    what,
    timeoutMs,
  );
  return last!;
}

const submit = async (body: Record<string, unknown>) => {
  const r = await stack.api('POST', '/api/jobs', { submitter: 'tester', ...body });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return (r.body as { job: { id: string; state: string } }).job;
};

test('every family is there, typed, and parses line by line', async () => {
  const s = await scrape();
  const want: Record<string, string> = {
    rc_queue_jobs: 'gauge',
    rc_jobs: 'gauge',
    rc_jobs_ended_total: 'counter',
    rc_devices: 'gauge',
    rc_devices_idle_leased: 'gauge',
    rc_job_grant_latency_seconds: 'histogram',
    rc_heartbeat_handling_seconds: 'histogram',
    rc_heartbeat_lateness_seconds: 'histogram',
    rc_heartbeat_interval_seconds: 'gauge',
    rc_job_output_bytes_total: 'counter',
    rc_job_output_chunks_total: 'counter',
    rc_db_pool_wait_seconds: 'histogram',
    process_cpu_seconds_total: 'counter',
    process_resident_memory_bytes: 'gauge',
    nodejs_eventloop_lag_seconds: 'gauge',
    nodejs_gc_duration_seconds: 'histogram',
  };
  for (const [name, type] of Object.entries(want)) assert.equal(s.types.get(name), type, `# TYPE ${name} ${type}`);
  assert.equal(value(s, 'rc_devices{state="free"}'), 2);
  assert.equal(value(s, 'rc_devices{state="unhealthy"}'), 0);
  assert.equal(value(s, 'rc_devices_idle_leased'), 0, 'no lease, none idle');
  assert.ok(s.values.has('rc_devices{state="unhealthy"}'), 'a series for unhealthy devices even at 0');
  assert.equal(value(s, 'rc_heartbeat_interval_seconds'), 1);
  // An admin token reads it too.
  assert.equal(value(await scrape(stack.adminToken), 'rc_devices{state="free"}'), 2);
});

test('heartbeats move the handling and lateness histograms; the pool wait is sampled', async () => {
  const first = await scrape();
  const handled = value(first, 'rc_heartbeat_handling_seconds_count');
  const late = value(first, 'rc_heartbeat_lateness_seconds_count');
  const s = await until(
    'two more heartbeats and a pool sample',
    (s) =>
      value(s, 'rc_heartbeat_handling_seconds_count') >= handled + 2 &&
      value(s, 'rc_heartbeat_lateness_seconds_count') >= late + 2 &&
      value(s, 'rc_db_pool_wait_seconds_count') > 0,
  );
  assert.ok(value(s, 'rc_heartbeat_handling_seconds_sum') > 0);
  assert.equal(value(s, 'rc_heartbeat_handling_seconds_bucket{le="+Inf"}'), value(s, 'rc_heartbeat_handling_seconds_count'));
  assert.ok(value(s, 'rc_db_pool_wait_seconds_sum') >= 0);
});

test('jobs move the queue, the job and device gauges, grant latency (submit and pass), output and ended counters', async () => {
  const before = await scrape();
  const grantedAtSubmit = value(before, 'rc_job_grant_latency_seconds_count{path="submit"}');
  const grantedByPass = value(before, 'rc_job_grant_latency_seconds_count{path="pass"}');
  const bytes = value(before, 'rc_job_output_bytes_total');
  const chunks = value(before, 'rc_job_output_chunks_total');
  const killed = value(before, 'rc_jobs_ended_total{state="killed"}');
  assert.equal(value(before, 'rc_jobs{state="running"}'), 0);
  assert.equal(value(before, 'rc_jobs{state="queued"}'), 0);

  // Started by its submit: the fleet is idle.
  const line = 'metrics-output-0123456789\n';
  const first = await submit({ device: 'alpha:gpu0', argv: ['sh', '-c', `printf '${line.trim()}\\n'; sleep 60`] });
  assert.equal(first.state, 'running');
  let s = await until('the first job to print', (s) => value(s, 'rc_job_output_bytes_total') >= bytes + line.length);
  assert.ok(value(s, 'rc_job_output_chunks_total') >= chunks + 1);
  assert.equal(value(s, 'rc_job_grant_latency_seconds_count{path="submit"}'), grantedAtSubmit + 1);
  assert.equal(value(s, 'rc_jobs{state="running"}'), 1);
  assert.equal(value(s, 'rc_devices{state="busy"}'), 1);
  assert.equal(value(s, 'rc_devices{state="free"}'), 1);

  // Queued behind it, at priority 5.
  const second = await submit({ device: 'alpha:gpu0', priority: 5, argv: ['sh', '-c', 'sleep 60'] });
  assert.equal(second.state, 'queued');
  s = await scrape();
  assert.equal(value(s, 'rc_queue_jobs{priority="5"}'), 1);
  assert.equal(value(s, 'rc_jobs{state="queued"}'), 1);

  // The kill frees the device; a pass gives it to the queued job.
  const kill = await stack.api('POST', `/api/jobs/${first.id}/kill`, { submitter: 'tester' });
  assert.equal(kill.status, 200, JSON.stringify(kill.body));
  s = await until('the queued job to be started by a pass', (s) => value(s, 'rc_job_grant_latency_seconds_count{path="pass"}') === grantedByPass + 1);
  assert.ok(value(s, 'rc_job_grant_latency_seconds_sum{path="pass"}') > 0, 'it waited in the queue');
  assert.equal(value(s, 'rc_queue_jobs{priority="5"}'), 0, 'an empty queue has no series left over');
  assert.equal(value(s, 'rc_jobs{state="queued"}'), 0);
  s = await until('the first job to end killed', (s) => value(s, 'rc_jobs_ended_total{state="killed"}') === killed + 1);
  assert.equal(value(s, 'rc_jobs{state="running"}'), 1);

  const end = await stack.api('POST', `/api/jobs/${second.id}/kill`, { submitter: 'tester' });
  assert.equal(end.status, 200, JSON.stringify(end.body));
  await until('every job to be over', (s) => value(s, 'rc_jobs{state="running"}') === 0 && value(s, 'rc_devices{state="free"}') === 2);
});

test('a scrape reads the partial indexes of live jobs, not the jobs table, however many jobs ended', async () => {
  const sql = postgres(stack.dbUrl, { max: 1, onnotice: () => {} });
  try {
    await sql`
      insert into jobs (id, submitter, argv, state, ended_at)
      select 'jx' || g, 'tester', '[]'::jsonb, 'succeeded', now() from generate_series(1, 20000) g`;
    await sql`analyze jobs`;
    const plan = async (query: string) => (await sql.unsafe<{ 'QUERY PLAN': string }[]>(`explain ${query}`)).map((r) => r['QUERY PLAN']).join('\n');
    // The scrape's statement (server/metrics.ts readJobs).
    const text = await plan(LIVE_JOBS_STATEMENT);
    assert.doesNotMatch(text, /Seq Scan on jobs/, text);
    // Either partial index of queued jobs in line (priority, seq; or the queue order, requeued first) will do: not the table.
    assert.match(text, /jobs_queued_idx|jobs_queue_order_idx/, text);
    assert.match(text, /jobs_waiting_idx/, text);
    assert.match(text, /jobs_running_host_idx/, text);
  } finally {
    await sql.end();
  }
  assert.equal(value(await scrape(), 'rc_jobs{state="queued"}'), 0);
  // A queued job that waits on another (jobs.waits) is queued too.
  const db = postgres(stack.dbUrl, { max: 1, onnotice: () => {} });
  try {
    await db`insert into jobs (id, submitter, argv, state, waits, priority) values ('jwaiting', 'tester', '[]'::jsonb, 'queued', 'after', 3)`;
    const text = await scrape();
    assert.equal(value(text, 'rc_jobs{state="queued"}'), 1);
    assert.equal(value(text, 'rc_queue_jobs{priority="3"}'), 1);
  } finally {
    await db`delete from jobs where id = 'jwaiting'`;
    await db.end();
  }
});

test('credentials: none or a bad one 401, a host credential 403, other methods 405; no stack trace in any answer', async () => {
  const reg = await stack.api('POST', '/api/admin/hosts', { name: 'metrics-host' }, stack.adminToken);
  assert.equal(reg.status, 201, JSON.stringify(reg.body));
  const host = (reg.body as { credential: string }).credential;
  const cases: [string, string | null, number, string][] = [
    ['GET', null, 401, 'unauthorized'],
    ['GET', 'rc_not_a_token', 401, 'unauthorized'],
    ['GET', host, 403, 'forbidden'],
    ['POST', stack.clientToken, 405, 'method_not_allowed'],
    ['DELETE', stack.adminToken, 405, 'method_not_allowed'],
  ];
  for (const [method, token, status, code] of cases) {
    const res = await fetch(`${stack.controllerUrl}/metrics`, { method, headers: token ? { authorization: `Bearer ${token}` } : {} });
    const text = await res.text();
    assert.equal(res.status, status, `${method} with ${token ?? 'no token'}: ${text}`);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    const body = JSON.parse(text) as { error: { code: string; message: string } };
    assert.equal(body.error.code, code);
    assert.doesNotMatch(text, /\bat .+:\d+:\d+|\.ts:\d+|node:internal/, 'no stack trace');
    if (status === 405) assert.equal(res.headers.get('allow'), 'GET');
  }
  // A query string changes nothing; a path next to it is not the route.
  const s = await fetch(`${stack.controllerUrl}/metrics?x=1`, { headers: { authorization: `Bearer ${stack.clientToken}` } });
  assert.equal(s.status, 200);
  await s.text();
  const other = await fetch(`${stack.controllerUrl}/metrics/x`, { headers: { authorization: `Bearer ${stack.clientToken}` } });
  assert.notEqual(other.status, 200);
  await other.text();
});
