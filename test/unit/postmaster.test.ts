// Telling this data folder's postmaster apart (server/postmaster.ts): the pid
// file and /proc parsed, and the guard that keeps rc from signalling anything
// else. The whole path, with a real Postgres, is in test/e2e/pg-leftover.test.ts.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { portInUseMessage } from '../../server/embedded-pg';
import { findLeftover, isPostmasterOf, listeningInodes, parentIsLiveRc, parsePidFile, parseStat, readProc, type Proc } from '../../server/postmaster';

const roots: string[] = [];
after(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

function pgdata(): string {
  const dir = join(mkdtempSync(join(tmpdir(), 'rc-postmaster-test-')), 'pgdata');
  roots.push(dir);
  mkdirSync(dir);
  return realpathSync(dir);
}

const proc = (over: Partial<Proc>): Proc => ({
  pid: 100,
  ppid: 1,
  state: 'S',
  argv: ['/x/bin/postgres', '-D', '/d/pgdata', '-p', '5432'],
  cwd: '/d/pgdata',
  exe: '/x/bin/postgres',
  ...over,
});

test('parsePidFile: pid, data directory and port; a file that names no postmaster is null', () => {
  const full = '4242\n/d/pgdata\n1796114670\n54329\n/tmp\nlocalhost\n  2146466        15\nready   \n';
  assert.deepEqual(parsePidFile(full), { pid: 4242, dataDir: '/d/pgdata', port: 54329 });
  assert.deepEqual(parsePidFile('4242\n/d/pgdata\n'), { pid: 4242, dataDir: '/d/pgdata', port: null }, 'written in steps: a young one has no port yet');
  assert.equal(parsePidFile(''), null);
  assert.equal(parsePidFile('-4242\n/d/pgdata\n'), null, 'a single-user backend');
  assert.equal(parsePidFile('0\n'), null);
  assert.equal(parsePidFile('12abc\n/d\n'), null);
});

test('parseStat: the state and parent, whatever the command name holds', () => {
  assert.deepEqual(parseStat('77 (postgres) S 1 77 77 0 -1'), { state: 'S', ppid: 1 });
  assert.deepEqual(parseStat('78 (a) (b c) Z 900 78'), { state: 'Z', ppid: 900 });
  assert.equal(parseStat(''), null);
});

test('isPostmasterOf: the postgres program with the folder as its working directory, alive; nothing else', () => {
  assert.ok(isPostmasterOf(proc({}), '/d/pgdata'));
  assert.ok(!isPostmasterOf(proc({}), '/other/pgdata'), "another checkout's");
  assert.ok(!isPostmasterOf(proc({ argv: ['postgres: checkpointer '] }), '/d/pgdata'), 'a child of the postmaster');
  assert.ok(!isPostmasterOf(proc({ argv: ['/bin/sleep', '30'] }), '/d/pgdata'), 'a pid taken by another program');
  assert.ok(!isPostmasterOf(proc({ cwd: null }), '/d/pgdata'), 'a process we cannot inspect');
  assert.ok(!isPostmasterOf(proc({ state: 'Z' }), '/d/pgdata'), 'one that has exited');
});

test('parentIsLiveRc: a Node parent is a running controller; init, a subreaper or none means the rc is gone; a doubt counts as running', () => {
  assert.ok(parentIsLiveRc(proc({ pid: 500, argv: ['node', 'dist/server.js'], exe: '/usr/bin/node' })));
  assert.ok(parentIsLiveRc(proc({ pid: 500, argv: ['node'], exe: '/root/.nvm/versions/node/v22.1.0/bin/node' })));
  assert.ok(!parentIsLiveRc(null));
  assert.ok(!parentIsLiveRc(proc({ pid: 1, argv: ['/sbin/init'], exe: '/sbin/init' })));
  assert.ok(!parentIsLiveRc(proc({ pid: 600, argv: ['/lib/systemd/systemd', '--user'], exe: '/lib/systemd/systemd' })));
  assert.ok(!parentIsLiveRc(proc({ pid: 500, state: 'Z', exe: '/usr/bin/node' })));
  assert.ok(parentIsLiveRc(proc({ pid: 500, argv: [], exe: null })), 'unreadable: taken as running');
});

test('listeningInodes: sockets in LISTEN on the port, in either table', () => {
  const tcp = [
    '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
    '   0: 0100007F:8201 00000000:0000 0A 00000000:00000000 00:00000000 00000000   101        0 47300 1 0000000048c5f7da 100 0 0 10 0',
    '   1: 0100007F:8201 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000   101        0 47301 1 0000000048c5f7da 20 4 30 10 -1',
    '   2: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 51000 1 0000000048c5f7da 100 0 0 10 0',
  ].join('\n');
  assert.deepEqual(listeningInodes(tcp, 33281), ['47300']);
  assert.deepEqual(listeningInodes(tcp, 8080), ['51000']);
  assert.deepEqual(listeningInodes(tcp, 5432), []);
  const tcp6 =
    '  sl  local_address ...\n   0: 00000000000000000000000001000000:8201 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000   101        0 47302 1 0 100 0 0 10 0';
  assert.deepEqual(listeningInodes(tcp6, 33281), ['47302']);
});

test('portInUseMessage: names the port, the holder as far as it is known, and RC_PG_PORT', () => {
  assert.equal(
    portInUseMessage(54329, { pid: 7, program: 'postgres', pgdata: '/w/other/.rc/pgdata' }),
    "port 54329 for the embedded Postgres is in use by another Postgres (pid 7, data in /w/other/.rc/pgdata), not this checkout's; stop it, or set RC_PG_PORT to a free port",
  );
  assert.equal(
    portInUseMessage(54329, { pid: 8, program: 'nc', pgdata: null }),
    'port 54329 for the embedded Postgres is in use by nc (pid 8); stop it, or set RC_PG_PORT to a free port',
  );
  assert.equal(portInUseMessage(54329, null), 'port 54329 for the embedded Postgres is in use by another program; stop it, or set RC_PG_PORT to a free port');
});

test('findLeftover: a pid file naming no postmaster of the folder is left to Postgres, and that process is untouched', async () => {
  const dir = pgdata();
  assert.deepEqual(findLeftover(dir), { kind: 'none' }, 'no pid file');
  assert.deepEqual(findLeftover(join(dir, 'missing')), { kind: 'none' }, 'no folder');

  // A live process in the folder that is not Postgres (a pid reused after a crash).
  const sleeper = spawn('sleep', ['30'], { cwd: dir, stdio: 'ignore' });
  try {
    await new Promise((r) => sleeper.once('spawn', r));
    writeFileSync(join(dir, 'postmaster.pid'), `${sleeper.pid}\n${dir}\n1796114670\n54329\n`);
    assert.equal(readProc(sleeper.pid!)?.cwd, dir);
    assert.deepEqual(findLeftover(dir), { kind: 'none' });
    // This very process: alive, but elsewhere and not Postgres.
    writeFileSync(join(dir, 'postmaster.pid'), `${process.pid}\n${dir}\n1796114670\n54329\n`);
    assert.deepEqual(findLeftover(dir), { kind: 'none' });
    assert.equal(sleeper.exitCode, null, 'nothing was signalled');
  } finally {
    sleeper.kill('SIGKILL');
  }
  // A pid that is gone.
  const gone = spawn('true', { stdio: 'ignore' });
  await new Promise((r) => gone.once('exit', r));
  writeFileSync(join(dir, 'postmaster.pid'), `${gone.pid}\n${dir}\n1796114670\n54329\n`);
  assert.deepEqual(findLeftover(dir), { kind: 'none' });
});
