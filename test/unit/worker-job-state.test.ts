// The worker's state file (RC_STATE_DIR/jobs.json): what a next run finds, written whole; and one worker per state folder.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { JobState } from '../../worker/job-state';

const root = mkdtempSync(join(tmpdir(), 'rc-job-state-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const dir = () => join(root, `s${++n}`, 'nested');

test('a next run finds the jobs that were running, not those that ended; the folder is private and no temporary file stays', async () => {
  const d = dir();
  const logs: string[] = [];
  const a = new JobState(d, (m) => logs.push(m));
  assert.deepEqual(a.open(), { jobs: [], leftover: [] });
  a.started({ jobId: 'j1', devices: [0], cgroup: '/sys/fs/cgroup/rc-x-1/j1' });
  a.started({ jobId: 'j2', devices: [1, 2], cgroup: null });
  a.ended('j1');
  await a.flushed();
  assert.equal(statSync(d).mode & 0o777, 0o700);
  assert.deepEqual(readdirSync(d).sort(), ['jobs.json', 'worker.pid']);
  // The worker was SIGKILLed here: the next one (released or not, its pid file names a dead process or this one).
  const b = new JobState(d, (m) => logs.push(m));
  assert.deepEqual(b.open(), { jobs: [{ jobId: 'j2', devices: [1, 2], cgroup: null }], leftover: [] });
  assert.deepEqual(logs, []);
});

test("processes that could not be killed stay known until they are gone; only the previous run's are reported again", async () => {
  const d = dir();
  const a = new JobState(d, () => {});
  a.open();
  const sleeper = spawn('sleep', ['30'], { stdio: 'ignore' });
  await new Promise((r) => sleeper.once('spawn', r));
  try {
    a.reset([{ jobId: 'old', devices: [3], pids: [sleeper.pid!, 999_999_999] }]);
    a.started({ jobId: 'j3', devices: [0], cgroup: null });
    a.ended('j3', [sleeper.pid!]);
    await a.flushed();
    // Reported in hello: the previous run's, with only the pids still there; j3 went in its end report.
    assert.deepEqual(a.unkillable(), [{ jobId: 'old', devices: [3], pids: [sleeper.pid!] }]);
    const next = new JobState(d, () => {}).open();
    assert.deepEqual(
      next.leftover.map((l) => [l.jobId, l.pids]),
      [
        ['old', [sleeper.pid!]],
        ['j3', [sleeper.pid!]],
      ],
    );
  } finally {
    sleeper.kill('SIGKILL');
    await new Promise((r) => sleeper.once('exit', r));
  }
  assert.deepEqual(a.unkillable(), []);
  assert.deepEqual(new JobState(d, () => {}).open().leftover, []);
});

test('a damaged state file is said and ignored: the job cgroups left in the folder are still found', () => {
  const d = dir();
  new JobState(d, () => {}).open();
  writeFileSync(join(d, 'jobs.json'), '{"version":1,"jobs":[{"jobId":');
  const logs: string[] = [];
  assert.deepEqual(new JobState(d, (m) => logs.push(m)).open(), { jobs: [], leftover: [] });
  assert.match(logs.join('\n'), /cannot read .*jobs\.json .*only the job cgroups left in the worker's folder are cleaned up/);
  // Valid JSON of the wrong shape says which field is wrong.
  writeFileSync(join(d, 'jobs.json'), '{"version":1,"jobs":[{"jobId":5,"devices":[],"cgroup":null}],"leftover":[]}');
  logs.length = 0;
  assert.deepEqual(new JobState(d, (m) => logs.push(m)).open(), { jobs: [], leftover: [] });
  assert.match(logs.join('\n'), /cannot read .*jobs\.json \(jobs\.0\.jobId: .+\); only the job cgroups/);
});

test("a second worker on a state folder in use refuses to start; a dead holder's folder is taken over", () => {
  const d = dir();
  new JobState(d, () => {}).open();
  // Another live process holds it: our parent, with its real start time.
  const stat = readFileSync(`/proc/${process.ppid}/stat`, 'utf8');
  const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  writeFileSync(join(d, 'worker.pid'), `${process.ppid} ${start}\n`);
  assert.throws(() => new JobState(d, () => {}).open(), new RegExp(`another worker \\(pid ${process.ppid}\\) runs on the state folder ${d}`));
  // The same pid with another start time is a process that came after the holder died.
  writeFileSync(join(d, 'worker.pid'), `${process.ppid} 1\n`);
  assert.doesNotThrow(() => new JobState(d, () => {}).open());
  const released = new JobState(d, () => {});
  released.open();
  released.release();
  assert.deepEqual(readdirSync(d), []);
});

test('a job with a cgroup is written soon, off the event loop, writes falling together; one without a cgroup at once', async () => {
  const d = dir();
  const a = new JobState(d, () => {});
  a.open();
  const read = () => JSON.parse(readFileSync(join(d, 'jobs.json'), 'utf8'));
  a.started({ jobId: 'bare', devices: [0], cgroup: null });
  assert.deepEqual(
    read().jobs.map((j: { jobId: string }) => j.jobId),
    ['bare'],
    'written before it runs anything',
  );
  for (let i = 0; i < 50; i++) a.started({ jobId: `c${i}`, devices: [1], cgroup: `/sys/fs/cgroup/rc-x/c${i}` });
  for (let i = 0; i < 49; i++) a.ended(`c${i}`);
  await a.flushed();
  assert.deepEqual(
    read().jobs.map((j: { jobId: string }) => j.jobId),
    ['bare', 'c49'],
  );
  assert.deepEqual(readdirSync(d).sort(), ['jobs.json', 'worker.pid'], 'no temporary file stays');
});
