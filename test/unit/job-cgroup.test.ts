// Finding the worker's cgroup (v2) from /proc/self/mountinfo and /proc/self/cgroup, on the layouts hosts have.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cgroup2Mount, cgroupMoveNote, folderName, ownCgroupPath, workerCgroupDir } from '../../worker/job-cgroup';

const HYBRID = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`;
const PURE_V2 = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
29 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`;
const V1_ONLY = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
`;

test('the cgroup2 mount is found by its file system type, wherever it is mounted', () => {
  assert.deepEqual(cgroup2Mount(HYBRID), { mountPoint: '/sys/fs/cgroup/unified', root: '/', options: ['rw'] });
  assert.deepEqual(cgroup2Mount(PURE_V2), { mountPoint: '/sys/fs/cgroup', root: '/', options: ['rw', 'nsdelegate', 'memory_recursiveprot'] });
  assert.equal(cgroup2Mount(V1_ONLY), null);
  // Spaces in a mount point are escaped as octal.
  assert.deepEqual(cgroup2Mount('41 31 0:38 / /mnt/cg\\040two rw - cgroup2 cgroup2 rw\n'), { mountPoint: '/mnt/cg two', root: '/', options: ['rw'] });
});

test("the worker's own cgroup is the 0:: line; v1 lines do not count", () => {
  assert.equal(ownCgroupPath('9:name=systemd:/\n4:memory:/process_api/113c\n0::/\n'), '/');
  assert.equal(ownCgroupPath('0::/system.slice/rc-worker.service\n'), '/system.slice/rc-worker.service');
  assert.equal(ownCgroupPath('4:memory:/x\n1:cpu:/\n'), null);
});

test("the worker's cgroup folder: mount point plus path; a bind-mounted subtree and the reasons it cannot be used", () => {
  assert.deepEqual(workerCgroupDir(HYBRID, '0::/\n'), { dir: '/sys/fs/cgroup/unified' });
  assert.deepEqual(workerCgroupDir(PURE_V2, '0::/system.slice/rc-worker.service\n'), { dir: '/sys/fs/cgroup/system.slice/rc-worker.service' });
  // A container that sees its own subtree mounted at /sys/fs/cgroup.
  const bound = '29 24 0:26 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n';
  assert.deepEqual(workerCgroupDir(bound, '0::/docker/abc/worker\n'), { dir: '/sys/fs/cgroup/worker' });
  assert.match((workerCgroupDir(bound, '0::/elsewhere\n') as { why: string }).why, /not under the cgroup2 mount/);
  assert.match((workerCgroupDir(V1_ONLY, '0::/\n') as { why: string }).why, /no cgroup v2 file system is mounted/);
  assert.match((workerCgroupDir(HYBRID, '4:memory:/x\n') as { why: string }).why, /no 0:: line/);
});

test('the folder is named by the host and its state folder: same state, same folder; another state, another one', () => {
  assert.equal(folderName('alpha', '/var/lib/rc/state'), folderName('alpha', '/var/lib/rc/state/'));
  assert.notEqual(folderName('alpha', '/tmp/a/state-alpha'), folderName('alpha', '/tmp/b/state-alpha'));
  assert.match(folderName('gpu box', '/s'), /^rc-gpu-box-[0-9a-f]{8}$/);
});

test('the doctor says whether a job enters its cgroup at once (favordynmods) or waits, and how to change it', () => {
  assert.equal(
    cgroupMoveNote(PURE_V2),
    'cgroup v2 at /sys/fs/cgroup; each job start waits ~10 ms to enter its cgroup: mount -o remount,favordynmods /sys/fs/cgroup (Linux 6.0+) removes the wait',
  );
  assert.equal(
    cgroupMoveNote(PURE_V2.replace('nsdelegate', 'nsdelegate,favordynmods')),
    'cgroup v2 at /sys/fs/cgroup with favordynmods: a job enters its cgroup at once',
  );
  assert.match(cgroupMoveNote(V1_ONLY), /^no cgroup v2/);
});
