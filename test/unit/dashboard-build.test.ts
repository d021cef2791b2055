// When the controller builds the dashboard again: a source newer than the
// last build. The build step stands in for `next build` (it writes BUILD_ID
// as Next does); the files and their times are real.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
