// Who a root worker's jobs run as (RC_JOB_USER): the passwd lookup, the
// folders the user can enter by their modes, the worker's refusals, the
// command it runs them through, and npm start's word when it cannot switch.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { closedOnTheWay, findJobUser, type JobUser } from '../../core/job-user';
import { prepareLocalJobs } from '../../server/local-job-user';
import { asJobUser, jobUserFor } from '../../worker/job-user';

const PASSWD = [
  'root:x:0:0:root:/root:/bin/bash',
  'postgres:x:998:996::/home/postgres:/bin/sh',
  'rc-job:x:999:995:rc jobs:/var/lib/rc-job:/usr/sbin/nologin',
  'wheelie:x:1001:0::/home/wheelie:/bin/sh',
  'broken:x:1002',
  '',
].join('\n');
const dir = mkdtempSync(join(tmpdir(), 'rc-job-user-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('the job user is found by name or uid; root, a root group and a missing user are refused with the way out', () => {
  const rcJob: JobUser = { name: 'rc-job', uid: 999, gid: 995, home: '/var/lib/rc-job' };
  assert.deepEqual(findJobUser('rc-job', PASSWD), rcJob);
  assert.deepEqual(findJobUser('999', PASSWD), rcJob);
  assert.match((findJobUser('root', PASSWD) as { why: string }).why, /is root .*unprivileged/);
  assert.match((findJobUser('0', PASSWD) as { why: string }).why, /is root/);
  assert.match((findJobUser('wheelie', PASSWD) as { why: string }).why, /gid 0/);
  assert.match((findJobUser('broken', PASSWD) as { why: string }).why, /no such user .*useradd/);
  assert.match((findJobUser('nobody-here', PASSWD) as { why: string }).why, /no such user/);
});

test('a folder is reachable when every folder on the way lets the user enter, by owner, group or others', () => {
  const user: JobUser = { name: 'rc-job', uid: 999, gid: 995, home: '/h' };
  const tree: Record<string, { uid: number; gid: number; mode: number }> = {
    '/': { uid: 0, gid: 0, mode: 0o755 },
    '/srv': { uid: 0, gid: 0, mode: 0o711 },
    '/srv/rc': { uid: 0, gid: 0, mode: 0o711 },
    '/srv/rc/workspace': { uid: 999, gid: 995, mode: 0o700 },
    '/srv/rc/state': { uid: 0, gid: 0, mode: 0o700 },
    '/srv/group': { uid: 0, gid: 995, mode: 0o750 },
    '/root': { uid: 0, gid: 0, mode: 0o700 },
    // Its own folder with no x for the owner: the others' bit does not count for the owner.
    '/srv/own': { uid: 999, gid: 0, mode: 0o601 },
  };
  const stat = (p: string) => tree[p] ?? null;
  assert.equal(closedOnTheWay(user, '/srv/rc/workspace', stat), null);
  assert.equal(closedOnTheWay(user, '/srv/rc/state/scratch/jobs', stat), '/srv/rc/state');
  assert.equal(closedOnTheWay(user, '/srv/group', stat), null);
  assert.equal(closedOnTheWay(user, '/root/rc/.rc/workspace', stat), '/root');
  assert.equal(closedOnTheWay(user, '/srv/own', stat), '/srv/own');
  // Not made yet: what is there decides.
  assert.equal(closedOnTheWay(user, '/srv/rc/scratch/jobs', stat), null);
});

test('only a root worker runs jobs as another user; setpriv drops to its uid and gid with no other groups', () => {
  const passwd = join(dir, 'passwd');
  writeFileSync(passwd, PASSWD);
  assert.equal(jobUserFor(undefined, 0, passwd), null);
  assert.equal(jobUserFor('', 1000, passwd), null);
  assert.throws(() => jobUserFor('rc-job', 1000, passwd), /RC_JOB_USER=rc-job needs a worker running as root \(this one is uid 1000\)/);
  assert.throws(() => jobUserFor('root', 0, passwd), /unprivileged/);
  const user = jobUserFor('rc-job', 0, passwd)!;
  assert.equal(user.uid, 999);
  assert.deepEqual(asJobUser(user, 'python3', ['train.py', '--lr', '3e-4']), {
    file: '/usr/bin/setpriv',
    args: ['--reuid=999', '--regid=995', '--clear-groups', '--', 'python3', 'train.py', '--lr', '3e-4'],
  });
});

test('npm start not as root: it cannot switch users, and says what a job can read and the way out', () => {
  const r = prepareLocalJobs(join(dir, '.rc'), {}, 1000);
  assert.ok('warning' in r);
  assert.match(r.warning, /the local worker's jobs run as \S+, the user this controller runs as: any job can read .*\.rc\/local\.json \(the admin token\)/);
  assert.match(r.warning, /database password and the worker's key/);
  assert.match(r.warning, /start rc as root: its jobs then run as the unprivileged user rc-job/);
});
