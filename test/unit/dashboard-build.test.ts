// When the controller builds the dashboard again: a source newer than the
// last build. The build step stands in for `next build` (it writes BUILD_ID
// as Next does); the files and their times are real.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { buildIfChanged, needsBuild } from '../../server/dashboard';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a page changed while the build ran builds again next time; an unchanged one does not', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'rc-dash-build-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'app'));
  writeFileSync(join(root, 'app', 'page.tsx'), 'v1');
  let builds = 0;
  const build = (during?: () => void) => async () => {
    builds++;
    await pause(30);
    during?.();
    await pause(30);
    mkdirSync(join(root, '.next'), { recursive: true });
    writeFileSync(join(root, '.next', 'BUILD_ID'), `build ${builds}`);
  };
  assert.equal(await buildIfChanged(root, build()), true, 'no build yet');
  assert.equal(needsBuild(root), false);
  assert.equal(await buildIfChanged(root, build()), false, 'nothing changed');
  await pause(30);
  writeFileSync(join(root, 'app', 'page.tsx'), 'v2');
  // The build reads v2; v3 is saved while it runs, after it read the sources.
  assert.equal(
    await buildIfChanged(
      root,
      build(() => writeFileSync(join(root, 'app', 'page.tsx'), 'v3')),
    ),
    true,
  );
  assert.equal(needsBuild(root), true, 'v3 is newer than the build that started before it');
  assert.equal(builds, 2);
});

test('two controllers starting together build once: the second waits for the first and finds the build done', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'rc-dash-build-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'app'));
  writeFileSync(join(root, 'app', 'page.tsx'), 'v1');
  let builds = 0;
  let running = 0;
  let most = 0;
  const build = async () => {
    builds++;
    most = Math.max(most, ++running);
    await pause(300);
    mkdirSync(join(root, '.next'), { recursive: true });
    writeFileSync(join(root, '.next', 'BUILD_ID'), `build ${builds}`);
    running--;
  };
  const built = await Promise.all([buildIfChanged(root, build), buildIfChanged(root, build)]);
  assert.deepEqual(built.sort(), [false, true]);
  assert.equal(builds, 1);
  assert.equal(most, 1, 'never two builds at once');
  assert.equal(existsSync(join(root, '.next-build.lock')), false, 'the lock is let go');
});

test('a lock left by a controller that died mid-build is taken over', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'rc-dash-build-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'app'));
  writeFileSync(join(root, 'app', 'page.tsx'), 'v1');
  // A pid that ran and is gone: a child that has exited.
  const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
  writeFileSync(join(root, '.next-build.lock'), dead);
  const built = await buildIfChanged(root, async () => {
    mkdirSync(join(root, '.next'), { recursive: true });
    writeFileSync(join(root, '.next', 'BUILD_ID'), 'b');
  });
  assert.equal(built, true);
  assert.equal(existsSync(join(root, '.next-build.lock')), false);
});
