// The lines npm start and npm run demo print for rc on the PATH (core/rc-hint.ts)
// work as printed in a real sh, whatever the checkout's folder is called.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { rcCommand, rcOnPathLine } from '../../core/rc-hint';

const sh = (script: string) => spawnSync('sh', ['-c', script], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin' } as unknown as NodeJS.ProcessEnv });

test('the PATH line puts <checkout>/node_modules/.bin first, for a folder with spaces, quotes, $ and backslashes too', () => {
  for (const root of ['/work/rc', '/home/a b/rc', '/tmp/it\'s "rc" $HOME `x` \\n']) {
    const r = sh(`${rcOnPathLine(root)}; printf %s "$PATH"`);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, `${root}/node_modules/.bin:/usr/bin:/bin`);
  }
  assert.equal(rcOnPathLine('/work/rc'), 'export PATH="/work/rc/node_modules/.bin:$PATH"');
});

test("rc is one word for the checkout's own data folder; another folder is named, quoted where it must be", () => {
  assert.equal(rcCommand('/work/rc/.rc', '/work/rc/.rc'), 'rc');
  assert.equal(rcCommand('/work/rc/.rc-demo', '/work/rc/.rc'), 'RC_DATA_DIR=/work/rc/.rc-demo rc');
  const odd = '/tmp/my "demo" $x';
  const r = sh(`${rcCommand(odd, '/work/rc/.rc').replace(/ rc$/, '')} sh -c 'printf %s "$RC_DATA_DIR"'`);
  assert.equal(r.stdout, odd);
});
