// Teams, membership and limits (issue 32) on a real controller, worker and
// Postgres: two teams and three tokens set up with the CLI, each limit's
// refusal at submit (over_limit, exit 217, its sentence) for jobs, holds and
// terminals alike, the --queued race, the GPU-hours budget's rolling window
// over fabricated leases, whoami, usage by team, the audit rows, and every
// new admin route against the wrong credential and bad input.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import postgres from 'postgres';
import { EXIT } from '../../core/exit-codes';
import type { LimitView, TeamsUsage, TeamView, UsageReport, Whoami } from '../../protocol/wire';
import { type CliResult, Stack } from '../helpers/stack';

let stack: Stack;
let sql: postgres.Sql;
const tokens: Record<string, { id: number; secret: string }> = {};
before(async () => {
  stack = await Stack.start({ workers: [{ name: 'alpha', devices: 3 }] });
  sql = postgres(stack.dbUrl, { max: 2 });
});
after(async () => {
  await sql.end();
  await stack.stop();
});

const admin = (args: string[]) => stack.cli(['admin', ...args], { env: { RC_TOKEN: stack.adminToken } });
const as = (who: string, args: string[], submitter = who === 'agent-a' ? 'claude/a' : who) =>
  stack.cli(args, { env: { RC_TOKEN: tokens[who]!.secret, RC_SUBMITTER: submitter } });
const ok = (r: CliResult) => assert.equal(r.code, 0, r.stderr);
function refused(r: CliResult, code: number, message: RegExp) {
  assert.equal(r.code, code, `exit ${r.code}: ${r.stdout}${r.stderr}`);
  assert.match(r.stderr, message);
}
const setLimit = async (scope: string, flags: string[]) => ok(await admin(['limit', 'set', scope, ...flags]));
const queuedOf = async (tokenId: number) =>
  (await sql<{ n: number }[]>`select count(*)::int as n from jobs where token_id = ${tokenId} and state = 'queued'`)[0]!.n;
/** Cancels every job still queued or running (between tests). */
async function clearJobs() {
  const r = (await stack.api('GET', '/api/jobs?state=queued,running', undefined, stack.adminToken)).body as { jobs: { id: string; submitter: string }[] };
  for (const j of r.jobs) await stack.api('POST', `/api/jobs/${j.id}/kill`, { submitter: j.submitter }, stack.adminToken);
  await stack.waitFor(async () => (await stack.devices()).every((d) => d.state === 'free'), 'every device to be free');
}

test('an operator sets up two teams and three tokens; names, duplicates and unknowns are refused with their codes', async () => {
  ok(await admin(['team', 'create', 'vision', '--share', '2']));
  ok(await admin(['team', 'create', 'nlp']));
  refused(await admin(['team', 'create', 'vision']), EXIT.error, /rc: conflict: a team named vision exists already/);
  refused(await admin(['team', 'create', 'bad name']), EXIT.usage, /rc: bad_request: name: a team name is 1-63 letters/);
  refused(await admin(['team', 'create', 'x', '--share', '0']), EXIT.usage, /share must be more than 0/);
  refused(await admin(['team', 'set', 'nope', '--share', '2']), EXIT.not_found, /rc: not_found: no team is named nope/);
  ok(await admin(['team', 'set', 'nlp', '--share', '1.5']));

  for (const [name, flags] of [
    ['agent-a', ['--team', 'vision', '--submitter', 'claude/']],
    ['bob', ['--team', 'nlp']],
    ['carol', []],
  ] as const) {
    const r = await admin(['token', 'create', name, ...flags]);
    ok(r);
    const m = /^client token (\d+) for /.exec(r.stdout)!;
    tokens[name] = { id: Number(m[1]), secret: r.stdout.trim().split('\n').pop()! };
  }
  refused(await admin(['token', 'create', 'dave', '--team', 'nope']), EXIT.not_found, /no team is named nope/);
  // carol starts in default and is moved; by name (it names one live token) or id.
  const moved = await admin(['token', 'set', 'carol', '--team', 'nlp']);
  ok(moved);
  assert.match(moved.stdout, /moved from team default to nlp/);
  refused(await admin(['token', 'set', 'nobody', '--team', 'nlp']), EXIT.not_found, /no live client or admin token is named "nobody"/);
  refused(await admin(['token', 'set', 'carol', '--team', 'nope']), EXIT.not_found, /no team is named nope/);

  const list = await admin(['tokens']);
  ok(list);
  assert.match(list.stdout, /agent-a\s+client\s+vision\s+claude\/…/);
  assert.match(list.stdout, /carol\s+client\s+nlp\s+anyone/);

  const teams = JSON.parse((await admin(['team', 'list', '--json'])).stdout) as { teams: TeamView[] };
  const byName = Object.fromEntries(teams.teams.map((t) => [t.name, t]));
  assert.deepEqual(
    { vision: [byName.vision!.share, byName.vision!.members], nlp: [byName.nlp!.share, byName.nlp!.members] },
    { vision: [2, 1], nlp: [1.5, 2] },
  );
  assert.ok(byName.default, 'the default team is listed');

  // Token names need not be unique: a limit's token:<name> must name exactly one live token.
  const twins = [await admin(['token', 'create', 'twin']), await admin(['token', 'create', 'twin'])].map((r) => /token (\d+)/.exec(r.stdout)![1]);
  refused(
    await admin(['limit', 'set', 'token:twin', '--gpus', '1']),
    EXIT.ambiguous_name,
    new RegExp(`2 live tokens are named twin \\(ids ${twins.join(', ')}\\): give the id instead`),
  );
  ok(await admin(['limit', 'set', `token:${twins[0]}`, '--gpus', '1']));
});

test('limits: set, shown, cleared with none; a bad value names its flag (exit 2); unknown scopes are not_found', async () => {
  for (const [flags, message] of [
    [['--gpus', '-1'], /rc: bad_request: --gpus: .*not "-1"/],
    [['--gpu-hours', '5/month'], /rc: bad_request: --gpu-hours: .*not "5\/month"/],
    [['--max-runtime', 'abc'], /rc: bad_request: --max-runtime: a duration/],
    [['--queued', '1.5'], /rc: bad_request: --queued: /],
    [['--max-priority', '-11'], /rc: bad_request: --max-priority: /],
    [[], /rc: bad_request: give at least one limit/],
  ] as const)
    refused(await admin(['limit', 'set', 'team:vision', ...flags]), EXIT.usage, message);
  refused(await admin(['limit', 'set', 'team:nope', '--gpus', '1']), EXIT.not_found, /no team is named nope/);
  refused(await admin(['limit', 'set', 'token:nobody', '--gpus', '1']), EXIT.not_found, /no live client or admin token/);
  refused(await admin(['limit', 'set', 'vision', '--gpus', '1']), EXIT.usage, /scope: "vision" is not team:<name> or token:<name or id>/);

  await setLimit('team:vision', ['--gpus', '2', '--gpu-hours', '200/week', '--max-priority', '2']);
  await setLimit('team:vision', ['--gpus', 'none', '--max-hold-ttl', '30m']);
  const shown = JSON.parse((await admin(['limit', 'show', 'team:vision', '--json'])).stdout) as { limits: LimitView[] };
  assert.deepEqual(shown.limits, [
    { scope: 'team:vision', gpus: null, gpuHours: 200, period: 'week', queued: null, maxPriority: 2, maxHoldTtlS: 1800, maxRuntimeS: null },
  ]);
  const table = await admin(['limit', 'show']);
  ok(table);
  assert.match(table.stdout, /team:vision\s+-\s+200\/week\s+-\s+2\s+30m\s+-/);
});

test('ceilings refuse at submit with over_limit (exit 217) for jobs, holds and terminals; a job with no --max-runtime gets the ceiling', async () => {
  // vision: --max-priority 2, --max-hold-ttl 30m (above); agent-a's own: --max-runtime 1h.
  await setLimit('token:agent-a', ['--max-runtime', '1h']);
  const priority = /rc: over_limit: --priority 5 is over the ceiling: this token may ask for --priority up to 2 \(limit of team vision\)/;
  refused(await as('agent-a', ['run', '--priority', '5', '--', 'true']), EXIT.over_limit, priority);
  refused(await as('agent-a', ['hold', '--priority', '5', '--ttl', '10m']), EXIT.over_limit, priority);
  refused(await as('agent-a', ['run', '--tty', '--priority', '5', '--', 'true']), EXIT.over_limit, priority);
  refused(
    await as('agent-a', ['run', '--max-runtime', '2h', '--', 'true']),
    EXIT.over_limit,
    /rc: over_limit: --max-runtime 2h is over the ceiling: a job may run at most 1h \(limit of token agent-a\)/,
  );
  refused(await as('agent-a', ['run', '--tty', '--max-runtime', '2h', '--', 'true']), EXIT.over_limit, /--max-runtime 2h is over the ceiling/);
  refused(
    await as('agent-a', ['hold', '--ttl', '1h']),
    EXIT.over_limit,
    /rc: over_limit: --ttl 1h is over the ceiling: a hold may last at most 30m \(limit of team vision\)/,
  );
  // Another team's token is not bound by vision's limits.
  ok(await as('bob', ['run', '--priority', '5', '--', 'true']));
  // Within the ceilings it runs; with no --max-runtime it gets the ceiling, and is told.
  const run = await as('agent-a', ['run', '--priority', '2', '--', 'sh', '-c', 'echo "$RC_JOB_ID"']);
  ok(run);
  assert.match(run.stderr, /the limit of token agent-a of 1h applies/);
  const [job] = await sql<{ maxRuntimeS: number }[]>`select max_runtime_s as "maxRuntimeS" from jobs where id = ${run.stdout.trim()}`;
  assert.equal(job!.maxRuntimeS, 3600);
  // An extend is bounded as a new hold is.
  const hold = await stack.api('POST', '/api/jobs', { kind: 'hold', ttlS: 600, submitter: 'claude/a', device: 'alpha:gpu2' }, tokens['agent-a']!.secret);
  assert.equal(hold.status, 201, JSON.stringify(hold.body));
  const holdId = (hold.body as { job: { id: string } }).job.id;
  refused(await as('agent-a', ['hold', 'extend', holdId, '--ttl', '2h']), EXIT.over_limit, /--ttl 2h is over the ceiling/);
  ok(await as('agent-a', ['release', holdId]));
});

test('--queued: a job that would wait past it is refused; two submits at the limit never both pass', async () => {
  await clearJobs();
  await setLimit('team:nlp', ['--queued', '2']);
  // gpu0 busy with bob's job: everything else for gpu0 waits.
  const busy = stack.cli(['run', '-d', 'alpha:gpu0', '--', 'sleep', '60'], { env: { RC_TOKEN: tokens.bob!.secret, RC_SUBMITTER: 'bob' }, timeoutMs: 90_000 });
  await stack.waitFor(async () => (await stack.devices()).some((d) => d.name === 'alpha:gpu0' && d.state !== 'free'), 'gpu0 to be taken');
  const submit = (who: string) => stack.api('POST', '/api/jobs', { kind: 'run', argv: ['true'], submitter: who, device: 'alpha:gpu0' }, tokens[who]!.secret);
  // bob and carol (both nlp) at once, five of them: exactly two wait, the team's limit.
  const answers = await Promise.all(['bob', 'carol', 'bob', 'carol', 'bob'].map(submit));
  const statuses = answers.map((a) => a.status).sort();
  assert.deepEqual(statuses, [201, 201, 409, 409, 409], JSON.stringify(answers.map((a) => a.body)));
  for (const a of answers.filter((x) => x.status === 409)) assert.deepEqual((a.body as { error: { code: string } }).error.code, 'over_limit');
  assert.equal((await queuedOf(tokens.bob!.id)) + (await queuedOf(tokens.carol!.id)), 2);
  const cli = await as('carol', ['run', '-d', 'alpha:gpu0', '--detach', '--', 'true']);
  refused(cli, EXIT.over_limit, /rc: over_limit: team nlp has 2 jobs waiting, its limit \(--queued 2\)/);
  // While anything waits, a new job is queued first (the scheduling pass starts it), so it counts as waiting too.
  refused(await as('carol', ['run', '-d', 'alpha:gpu1', '--', 'true']), EXIT.over_limit, /team nlp has 2 jobs waiting/);
  // Another team is not bound by nlp's limit.
  ok(await as('agent-a', ['run', '-d', 'alpha:gpu0', '--detach', '--', 'true']));
  await clearJobs();
  await busy;
  await setLimit('team:nlp', ['--queued', 'none']);
});

test('--gpu-hours: a used-up rolling budget refuses, saying when use leaves the window; old use has left it', async () => {
  await clearJobs();
  const [device] = await sql<{ id: number }[]>`select id from devices where host_name = 'alpha' order by index limit 1`;
  // bob's use, fabricated: 3 device-hours 30 to 27 hours ago (outside a day's window), 2 from 10 to 8 hours ago.
  const lease = async (id: string, fromH: number, toH: number) => {
    await sql`insert into jobs (id, submitter, argv, state, kind, token_id, started_at, ended_at)
      values (${id}, 'bob', '["true"]'::jsonb, 'succeeded', 'run', ${tokens.bob!.id}, now() - make_interval(hours => ${fromH}), now() - make_interval(hours => ${toH}))`;
    await sql`insert into leases (device_id, job_id, acquired_at, released_at, idle_s, idle_seen_at)
      values (${device!.id}, ${id}, now() - make_interval(hours => ${fromH}), now() - make_interval(hours => ${toH}), 1800, now())`;
  };
  await lease('jfabold', 30, 27);
  await lease('jfabnew', 10, 8);
  // 2 of 3 per day: it runs.
  await setLimit('token:bob', ['--gpu-hours', '3/day']);
  ok(await as('bob', ['run', '--', 'true']));
  // 2 of 2: used up. It falls below as soon as the newer lease starts leaving the window: 10 h ago + 24 h = 14 h from now.
  await setLimit('token:bob', ['--gpu-hours', '2/day']);
  const r = await as('bob', ['run', '--', 'true']);
  refused(r, EXIT.over_limit, /rc: over_limit: token bob used 2\.0 of its 2 GPU-hours today \(the last 24 hours\); use leaves the window from (\S+ \S+) UTC/);
  const when = Date.parse(`${/window from (\S+ \S+) UTC/.exec(r.stderr)![1]!.replace(' ', 'T')}:00Z`);
  assert.ok(Math.abs(when - (Date.now() + 14 * 3600_000)) < 3 * 60_000, `refills about 14 h from now, not ${new Date(when).toISOString()}`);
  refused(await as('bob', ['hold', '--ttl', '10m']), EXIT.over_limit, /token bob used 2\.0 of its 2 GPU-hours/);
  // The team's budget counts carol's use too; by the week, the old lease is inside the window.
  await setLimit('token:bob', ['--gpu-hours', 'none']);
  await setLimit('team:nlp', ['--gpu-hours', '5/week']);
  refused(await as('carol', ['run', '--', 'true']), EXIT.over_limit, /team nlp used 5\.0 of its 5 GPU-hours this week/);
  await setLimit('team:nlp', ['--gpu-hours', '6/week']);
  ok(await as('carol', ['run', '--', 'true']));

  // whoami: the team, the limits, what is left; idle hours apart (1800 s idle of each 1h... lease).
  const who = JSON.parse((await as('bob', ['whoami', '--json'])).stdout) as Whoami;
  assert.equal(who.team, 'nlp');
  const nlp = who.limits.find((l) => l.limits.scope === 'team:nlp')!;
  assert.match(nlp.text, /^gpus 0 in use; 5\.0 of 6 GPU-hours this week, 1\.0 of them idle$/);
  const plain = await as('bob', ['whoami']);
  ok(plain);
  assert.match(plain.stdout, /in team nlp\nteam nlp: gpus 0 in use; 5\.0 of 6 GPU-hours this week/);
  // Usage by team: charged to the token's team.
  const usage = (await stack.api('GET', '/api/usage?by=team&since=7d', undefined, tokens.bob!.secret)).body as UsageReport;
  const row = usage.rows.find((x) => x.key === 'nlp')!;
  assert.ok(Math.abs(row.leasedS - 5 * 3600) < 60, `nlp leased ${row.leasedS}`);
  assert.ok(Math.abs(row.idleS - 3600) < 60, `nlp idle ${row.idleS}`);
  const cli = await as('bob', ['usage', '--by', 'team']);
  ok(cli);
  assert.match(cli.stdout, /^TEAM\s+LEASED/);
  assert.match(cli.stdout, /\nnlp\s+5\.\dh/);
  await setLimit('team:nlp', ['--gpu-hours', 'none']);
});

test('GET /api/usage/teams: members, limits, budget, fair share and use per UTC day split at midnight; bad days and wrong credentials refused', async () => {
  await setLimit('team:nlp', ['--gpu-hours', '6/week', '--gpus', '2']);
  const get = async (query: string, token: string | null = tokens.bob!.secret) => stack.api('GET', `/api/usage/teams${query}`, undefined, token);
  const r = await get('?days=3');
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const report = r.body as TeamsUsage;
  assert.equal(report.days, 3);
  assert.equal(report.halfLifeS, 7 * 86400);
  assert.deepEqual(
    report.teams.map((t) => t.name),
    ['default', 'nlp', 'vision'],
  );
  const nlp = report.teams.find((t) => t.name === 'nlp')!;
  assert.deepEqual(
    nlp.members.map((m) => [m.name, m.kind, m.submitter]),
    [
      ['bob', 'client', null],
      ['carol', 'client', null],
    ],
  );
  assert.equal(nlp.share, 1.5);
  assert.deepEqual([nlp.limits.gpus, nlp.limits.gpuHours, nlp.limits.period, nlp.limits.queued], [2, 6, 'week', null]);
  assert.equal(nlp.gpusInUse, 0);
  assert.equal(nlp.queued, 0);
  // bob's fabricated 3 h and 2 h (each 1800 s idle), and the two teams' few seconds of real jobs.
  assert.ok(Math.abs(nlp.budget!.usedS - 5 * 3600) < 60, `budget used ${nlp.budget!.usedS}`);
  assert.ok(Math.abs(nlp.budget!.idleS - 3600) < 60, `budget idle ${nlp.budget!.idleS}`);
  // Per UTC day: 3 days and today, each lease split at midnight, its idle seconds in proportion.
  const today = new Date().toISOString().slice(0, 10);
  assert.equal(nlp.daily.length, 4);
  assert.equal(nlp.daily.at(-1)!.day, today);
  const want = new Map<string, number>();
  const wantIdle = new Map<string, number>();
  for (const [fromH, toH] of [
    [30, 27],
    [10, 8],
  ] as const) {
    for (let t = Date.now() - fromH * 3600_000, end = Date.now() - toH * 3600_000; t < end; ) {
      const midnight = Date.UTC(new Date(t).getUTCFullYear(), new Date(t).getUTCMonth(), new Date(t).getUTCDate() + 1);
      const to = Math.min(end, midnight);
      const day = new Date(t).toISOString().slice(0, 10);
      want.set(day, (want.get(day) ?? 0) + (to - t) / 1000);
      // Each lease's 1800 idle seconds fall on its days in proportion.
      wantIdle.set(day, (wantIdle.get(day) ?? 0) + (1800 * (to - t)) / ((fromH - toH) * 3600_000));
      t = to;
    }
  }
  for (const d of nlp.daily) {
    const held = d.busyS + d.idleS;
    assert.ok(Math.abs(held - (want.get(d.day) ?? 0)) < 60, `${d.day}: ${held} s held, expected ${want.get(d.day) ?? 0}`);
    assert.ok(Math.abs(d.idleS - (wantIdle.get(d.day) ?? 0)) < 60, `${d.day}: ${d.idleS} s idle, expected ${wantIdle.get(d.day) ?? 0}`);
  }
  // Fair share: nlp has use, so it is active; its standing is its use part over its share part.
  assert.equal(nlp.fairShare.active, true);
  assert.ok(nlp.fairShare.use > 4 * 3600, `decayed use ${nlp.fairShare.use}`);
  assert.ok(Math.abs(nlp.fairShare.standing - nlp.fairShare.usePart / nlp.fairShare.sharePart) < 1e-9);
  const vision = report.teams.find((t) => t.name === 'vision')!;
  assert.deepEqual(
    vision.members.map((m) => [m.name, m.submitter]),
    [['agent-a', 'claude/']],
  );
  assert.equal(vision.budget === null, vision.limits.gpuHours === null, 'budget figures with a budget only');
  const dflt = report.teams.find((t) => t.name === 'default')!;
  assert.equal(dflt.budget, null, 'no budget: no budget figures');
  assert.ok(dflt.members.length >= 2, 'the local tokens are in default');
  // An admin reads it too; the default is 14 days.
  const all = (await get('', stack.adminToken)).body as TeamsUsage;
  assert.equal(all.days, 14);
  assert.equal(all.teams[0]!.daily.length, 15);

  for (const [query, message] of [
    ['?days=0', /days: a whole number of days from 1 to 90/],
    ['?days=91', /days: a whole number of days from 1 to 90/],
    ['?days=1.5', /days: a whole number/],
    ['?days=-1', /days: a whole number/],
    ['?days=x', /days: a whole number/],
    ['?days=', /days: a whole number/],
    ['?since=7d', /since: GET \/api\/usage\/teams takes only days/],
  ] as const) {
    const bad = await get(query);
    assert.equal(bad.status, 400, `${query}: ${JSON.stringify(bad.body)}`);
    assert.match((bad.body as { error: { code: string; message: string } }).error.message, message);
  }
  assert.equal((await get('', stack.hostCredential('alpha'))).status, 403, 'a host credential');
  assert.equal((await get('', null)).status, 401, 'no token');
  await setLimit('team:nlp', ['--gpu-hours', 'none', '--gpus', 'none']);
});

test('a job asking more GPUs than its team may ever hold is refused at once', async () => {
  await setLimit('team:vision', ['--gpus', '1']);
  refused(await as('agent-a', ['run', '--gpus', '2', '--', 'true']), EXIT.over_limit, /asks for 2 GPUs and team vision may hold at most 1 at once/);
  await setLimit('team:vision', ['--gpus', 'none']);
});

test('no limits: whoami says none and nothing is refused', async () => {
  const who = JSON.parse((await stack.cli(['whoami', '--json'])).stdout) as Whoami;
  assert.equal(who.team, 'default');
  assert.deepEqual(who.limits, []);
  ok(await stack.cli(['run', '--priority', '10', '--max-runtime', '7d', '--', 'true']));
});

test('every change of a team, a membership or a limit is audited', async () => {
  const rows = await sql<{ action: string; target: string; detail: Record<string, unknown> }[]>`
    select action, target, detail from audit where action in ('team.create', 'team.set', 'token.team', 'limit.set', 'token.create') order by id`;
  const actions = rows.map((r) => `${r.action} ${r.target}`);
  for (const a of [
    'team.create vision',
    'team.create nlp',
    'team.set nlp',
    'token.create agent-a',
    'token.team carol',
    'limit.set team:vision',
    'limit.set token:agent-a',
  ])
    assert.ok(actions.includes(a), `${a} in ${actions.join(', ')}`);
  const move = rows.find((r) => r.action === 'token.team')!;
  assert.deepEqual({ team: move.detail.team, was: move.detail.was }, { team: 'nlp', was: 'default' });
  assert.equal(rows.find((r) => r.action === 'token.create' && r.target === 'agent-a')!.detail.team, 'vision');
});

test('the admin routes: a client token, a host credential and no token are refused; bad bodies are 400s, never 500s', async () => {
  const routes: [string, string, unknown][] = [
    ['GET', '/api/admin/teams', undefined],
    ['POST', '/api/admin/teams', { name: 'x1' }],
    ['PUT', '/api/admin/teams/nlp', { share: 2 }],
    ['PUT', `/api/admin/tokens/${tokens.carol!.id}`, { team: 'vision' }],
    ['GET', '/api/admin/limits', undefined],
    ['PUT', '/api/admin/limits/team:nlp', { gpus: 1 }],
  ];
  const host = stack.hostCredential('alpha');
  for (const [method, path, body] of routes) {
    assert.equal((await stack.api(method, path, body, tokens['agent-a']!.secret)).status, 403, `${method} ${path} with a client token`);
    assert.equal((await stack.api(method, path, body, host)).status, 403, `${method} ${path} with a host credential`);
    assert.equal((await stack.api(method, path, body, null)).status, 401, `${method} ${path} with no token`);
  }
  const bad: [string, string, unknown, number][] = [
    ['POST', '/api/admin/teams', {}, 400],
    ['POST', '/api/admin/teams', { name: 'ok', share: -1 }, 400],
    ['POST', '/api/admin/teams', { name: 'ok', share: 'x' }, 400],
    ['POST', '/api/admin/teams', { name: 'a/b' }, 400],
    ['POST', '/api/admin/teams', { name: 'ok', extra: 1 }, 400],
    ['POST', '/api/admin/teams', 'not json', 400],
    ['PUT', '/api/admin/teams/nlp', { share: null }, 400],
    ['PUT', '/api/admin/teams/nope', { share: 1 }, 404],
    ['PUT', '/api/admin/teams/%ff', { share: 1 }, 400],
    ['PUT', `/api/admin/tokens/${tokens.carol!.id}`, { team: 5 }, 400],
    ['PUT', `/api/admin/tokens/${tokens.carol!.id}`, {}, 400],
    ['PUT', '/api/admin/tokens/99999999999999999999', { team: 'nlp' }, 404],
    ['PUT', '/api/admin/tokens/x', { team: 'nlp' }, 404],
    ['GET', '/api/admin/limits?scope=bogus', undefined, 400],
    ['GET', '/api/admin/limits?scope=team:nope', undefined, 404],
    ['GET', '/api/admin/limits?other=1', undefined, 400],
    ['PUT', '/api/admin/limits/team:nlp', { gpus: -1 }, 400],
    ['PUT', '/api/admin/limits/team:nlp', { gpus: 1e300 }, 400],
    ['PUT', '/api/admin/limits/team:nlp', { gpuHours: '1/fortnight' }, 400],
    ['PUT', '/api/admin/limits/team:nlp', { gpus: [1] }, 400],
    ['PUT', '/api/admin/limits/team:nlp', { nope: 1 }, 400],
    ['PUT', '/api/admin/limits/team:nlp', {}, 400],
    ['PUT', '/api/admin/limits/nlp', { gpus: 1 }, 400],
    ['PUT', `/api/admin/limits/token:${'x'.repeat(300)}`, { gpus: 1 }, 400],
  ];
  for (const [method, path, body, status] of bad) {
    const r = await stack.api(method, path, body, stack.adminToken);
    assert.equal(r.status, status, `${method} ${path} ${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
    assert.ok((r.body as { error?: { message?: string } }).error?.message, 'an error with a message');
  }
});

test("docs/operators.md's lab of three teams and two agents sets up from nothing as written", { timeout: 120_000 }, async () => {
  const page = readFileSync(new URL('../../docs/operators.md', import.meta.url), 'utf8');
  const block = /### Teams and limits[\s\S]*?```sh\n([\s\S]*?)```/.exec(page)![1]!;
  const commands = block
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => l.startsWith('rc '));
  assert.ok(commands.length >= 10, commands.join('\n'));
  const fresh = await Stack.start({ workers: [] });
  try {
    for (const line of commands) {
      // The lines are shell words without quotes but for the binding ('claude/').
      const args = line
        .slice(3)
        .split(/\s+/)
        .map((w) => w.replace(/^'(.*)'$/, '$1'));
      const r = await fresh.cli(args, { env: { RC_TOKEN: fresh.adminToken } });
      assert.equal(r.code, 0, `${line}: ${r.stderr}`);
    }
    const teams = (await fresh.api('GET', '/api/admin/teams', undefined, fresh.adminToken)).body as { teams: TeamView[] };
    assert.deepEqual(
      teams.teams.map((t) => [t.name, t.members]),
      [
        ['default', 2],
        ['infra', 1],
        ['nlp', 1],
        ['vision', 1],
      ],
    );
  } finally {
    await fresh.stop();
  }
});
