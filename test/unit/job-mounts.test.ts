// The jobs' folders on a real file system (temp dirs): what is wiped, what is
// kept, the read-only copy of the secrets, and the checks of the config.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { loadWorkerConfig, mountDirs } from '../../worker/config';
import { checkMountDirs, JobMounts } from '../../worker/job-mounts';

const base = mkdtempSync(join(tmpdir(), 'rc-job-mounts-'));
after(() => rmSync(base, { recursive: true, force: true }));
let n = 0;
const fresh = () => {
  const d = join(base, `t${++n}`);
  mkdirSync(d);
  return d;
};

test('a host job gets an empty scratch and a read-only copy of the secrets; both go with wipeJob', async () => {
  const d = fresh();
  const secrets = join(d, 'secrets');
  mkdirSync(join(secrets, 'sub'), { recursive: true });
  writeFileSync(join(secrets, 'key'), 'k');
  writeFileSync(join(d, 'outside'), 'linked');
  symlinkSync(join(d, 'outside'), join(secrets, 'sub', 'link'));
  const m = new JobMounts({ scratch: join(d, 'scratch'), shared: null, secrets });
  const p = m.forHostJob('j1', '/ws');
  assert.deepEqual({ ...p, scratch: undefined, secrets: undefined }, { workspace: '/ws', shared: null, scratch: undefined, secrets: undefined });
  assert.deepEqual(readdirSync(p.scratch), []);
  assert.equal(statSync(p.scratch).mode & 0o777, 0o700);
  assert.equal(statSync(p.secrets!).mode & 0o777, 0o555);
  assert.equal(statSync(join(p.secrets!, 'key')).mode & 0o777, 0o444);
  // A link is followed: the job gets the file, not a path back to the operator's.
  assert.equal(readFileSync(join(p.secrets!, 'sub', 'link'), 'utf8'), 'linked');
  assert.equal(statSync(join(p.secrets!, 'sub', 'link')).mode & 0o777, 0o444);
  writeFileSync(join(p.scratch, 'f'), 'x');
  assert.deepEqual(await m.wipeJob('j1'), []);
  assert.equal(existsSync(p.scratch), false);
  assert.equal(existsSync(p.secrets!), false);
  assert.equal(readFileSync(join(secrets, 'key'), 'utf8'), 'k');
});

test('a job id never names a folder outside the scratch root', () => {
  const m = new JobMounts({ scratch: '/s', shared: null, secrets: null });
  assert.equal(m.jobScratch('../../etc'), '/s/jobs/..-..-etc');
  assert.equal(m.jobScratch('..'), '/s/jobs/-..');
  assert.equal(m.jobScratch('a/b'), '/s/jobs/a-b');
});

test('emptyDevice keeps the folder (a container has it mounted) and removes read-only trees; wipeLeftovers clears jobs, copies and device scratches only', async () => {
  const d = fresh();
  const m = new JobMounts({ scratch: join(d, 'scratch'), shared: null, secrets: null });
  const dev = m.deviceScratch(3);
  mkdirSync(join(dev, 'ro', 'deep'), { recursive: true });
  writeFileSync(join(dev, '.hidden'), 'x');
  writeFileSync(join(dev, 'ro', 'deep', 'f'), 'x');
  const { chmodSync } = await import('node:fs');
  chmodSync(join(dev, 'ro', 'deep'), 0o555);
  chmodSync(join(dev, 'ro'), 0o555);
  m.make(m.jobScratch('old'));
  writeFileSync(join(m.jobScratch('old'), 'f'), 'x');
  mkdirSync(join(d, 'scratch', 'not-ours'));
  writeFileSync(join(d, 'scratch', 'not-ours', 'keep'), 'x');
  assert.deepEqual(await m.wipeLeftovers(), []);
  assert.deepEqual(readdirSync(dev), []);
  assert.deepEqual(readdirSync(join(d, 'scratch', 'jobs')), []);
  assert.ok(existsSync(join(d, 'scratch', 'not-ours', 'keep')), 'a folder rc did not make was touched');
  assert.equal(await m.emptyDevice(9), null, 'a device scratch not made yet is empty');
});

const env = (extra: Record<string, string>) =>
  ({ RC_CONTROLLER: 'http://c:1', RC_HOST_TOKEN: 'x'.repeat(12), RC_STATE_DIR: '/var/lib/rc', ...extra }) as unknown as NodeJS.ProcessEnv;

test('config: RC_SCRATCH_DIR defaults under RC_STATE_DIR; shared and secrets unset mean none; paths are absolute and normalised', () => {
  assert.deepEqual(mountDirs(loadWorkerConfig(env({}))), { scratch: '/var/lib/rc/scratch', shared: null, secrets: null });
  assert.deepEqual(mountDirs(loadWorkerConfig(env({ RC_SCRATCH_DIR: '/s/', RC_SHARED_DIR: '/mnt//nfs/', RC_SECRETS_DIR: '' }))), {
    scratch: '/s',
    shared: '/mnt/nfs',
    secrets: null,
  });
  for (const k of ['RC_SCRATCH_DIR', 'RC_SHARED_DIR', 'RC_SECRETS_DIR'])
    assert.throws(() => loadWorkerConfig(env({ [k]: 'rel/dir' })), new RegExp(`${k} must be an absolute path`));
});

test('checkMountDirs: usable folders pass; each problem is a sentence naming its variable', () => {
  const d = fresh();
  mkdirSync(join(d, 'shared'));
  mkdirSync(join(d, 'secrets'));
  const good = { scratch: join(d, 'scratch'), shared: join(d, 'shared'), secrets: join(d, 'secrets') };
  assert.deepEqual(checkMountDirs(good, join(d, 'ws')), []);
  assert.ok(existsSync(good.scratch), 'the scratch folder is made');
  // doctor only looks.
  assert.deepEqual(checkMountDirs({ ...good, scratch: join(d, 'later') }, join(d, 'ws'), false), []);
  assert.equal(existsSync(join(d, 'later')), false);
  assert.match(checkMountDirs({ ...good, shared: join(d, 'nope') }, join(d, 'ws')).join(), /^RC_SHARED_DIR \(.*\) cannot be used: no such folder/);
  assert.equal(existsSync(join(d, 'nope')), false, 'a missing shared folder must not be made');
  assert.match(checkMountDirs({ ...good, scratch: join(d, 'shared', 'x') }, join(d, 'ws')).join(), /RC_SCRATCH_DIR .* and RC_SHARED_DIR .* overlap/);
  assert.match(checkMountDirs(good, good.secrets).join(), /RC_WORKSPACE .* and RC_SECRETS_DIR .* overlap/);
  writeFileSync(join(d, 'secrets', 'big'), Buffer.alloc(0));
  for (let i = 0; i < 1001; i++) writeFileSync(join(d, 'secrets', `f${i}`), '');
  assert.match(checkMountDirs(good, join(d, 'ws')).join(), /RC_SECRETS_DIR \(.*\) holds more than 1000 files/);
});
