// Fair share with live jobs (issue 32), on a real stack: two controllers on
// one database, one worker with one device. Two tokens in two teams, a history
// of leases fabricated in the database (the heavy team held the fleet ten
// hours yesterday, the light team one). With the device busy, the heavy
// team's job is submitted first and the light team's second: both controllers'
// queue (GET /api/queue, rc ps) put the light team's first, and when the device
// frees, it starts first.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import postgres from 'postgres';
import { Stack } from '../helpers/stack';

let a: Stack;
let b: Stack;
let sql: postgres.Sql;
const dir = mkdtempSync(join(tmpdir(), 'rc-fair-'));
before(async () => {
  a = await Stack.start({ workers: [] });
  b = await Stack.start({ workers: [], databaseUrl: a.dbUrl });
  await a.startWorker('solo', 1);
  sql = postgres(a.dbUrl, { max: 1, onnotice: () => {} });
});
after(async () => {
  await sql?.end();
  await b?.stop();
  await a?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** rc admin token create <name>: its id and secret. */
async function createToken(name: string): Promise<{ id: number; secret: string }> {
  const r = await a.cli(['admin', 'token', 'create', name], { env: { RC_TOKEN: a.adminToken } });
  assert.equal(r.code, 0, r.stderr);
  const m = /^client token (\d+) for /.exec(r.stdout);
  assert.ok(m, r.stdout);
  return { id: Number(m[1]), secret: r.stdout.trim().split('\n').pop()! };
}

/** A lease of `hours` on the device, ended a day ago, by a job of `tokenId`'s. */
async function history(tokenId: number, hours: number): Promise<void> {
  const id = `past-${tokenId}`;
  await sql`insert into jobs (id, submitter, argv, token_id, state, started_at, ended_at)
    values (${id}, 'past', '["true"]', ${tokenId}, 'succeeded', now() - interval '1 day' - make_interval(hours => ${hours}), now() - interval '1 day')`;
  await sql`insert into leases (device_id, job_id, acquired_at, released_at)
    select d.id, ${id}, now() - interval '1 day' - make_interval(hours => ${hours}), now() - interval '1 day' from devices d where d.host_name = 'solo'`;
}

type Queued = { id: string; position: number };

test('a team that used little starts before a team that used much, though it submitted second; both controllers show that order', {
  timeout: 90_000,
}, async () => {
  const heavy = await createToken('heavy-agent');
  const light = await createToken('light-agent');
  await sql`insert into teams (name) values ('heavy'), ('light')`;
  await sql`update tokens set team = 'heavy' where id = ${heavy.id}`;
  await sql`update tokens set team = 'light' where id = ${light.id}`;
  await history(heavy.id, 10);
  await history(light.id, 1);

  // The device busy until the test says so.
  const gate = join(dir, 'go');
  const blocker = a.runJob(['-d', 'solo:gpu0'], `while [ ! -e ${gate} ]; do sleep 0.05; done`);
  await blocker.id;

  const submit = async (token: string, what: string) => {
    const r = await a.cli(['run', '--detach', '--', 'sh', '-c', `echo ${what}`], { env: { RC_TOKEN: token } });
    assert.equal(r.code, 0, r.stderr);
    return r.stdout.trim().split('\n').pop()!;
  };
  const heavyJob = await submit(heavy.secret, 'heavy');
  const lightJob = await submit(light.secret, 'light');

  // Both controllers, GET /api/queue and rc ps: the light team's job first.
  for (const stack of [a, b]) {
    const q = await stack.api('GET', '/api/queue');
    assert.equal(q.status, 200);
    assert.deepEqual(
      (q.body as { jobs: Queued[] }).jobs.map((j) => [j.id, j.position]),
      [
        [lightJob, 0],
        [heavyJob, 1],
      ],
      `GET /api/queue on ${stack.controllerUrl}`,
    );
    const ps = await stack.cli(['ps', '--json']);
    assert.equal(ps.code, 0, ps.stderr);
    const queued = (JSON.parse(ps.stdout) as { jobs: (Queued & { state: string })[] }).jobs.filter((j) => j.state === 'queued');
    assert.deepEqual(
      queued.map((j) => [j.id, j.position]),
      [
        [lightJob, 0],
        [heavyJob, 1],
      ],
      `rc ps on ${stack.controllerUrl}`,
    );
    const table = await stack.cli(['ps']);
    assert.ok(table.stdout.indexOf(lightJob) < table.stdout.indexOf(heavyJob), table.stdout);
  }

  // The device frees: the light team's job starts first, then the heavy team's.
  writeFileSync(gate, '');
  assert.equal((await blocker.done).code, 0);
  for (const id of [lightJob, heavyJob]) {
    const w = await a.cli(['wait', id, '--timeout', '60s']);
    assert.equal(w.code, 0, w.stderr);
  }
  const started = await sql<{ id: string; startedAt: Date }[]>`
    select id, started_at as "startedAt" from jobs where id in (${lightJob}, ${heavyJob}) order by started_at`;
  assert.deepEqual(
    started.map((j) => j.id),
    [lightJob, heavyJob],
  );
});
