// The submitter rc names itself when RC_SUBMITTER is not set: user@host/s<session>,
// the user being the uid's name, also where $USER and $LOGNAME are unset (a
// service, cron, an agent's sandbox). The standalone rc (Bun) once said
// `unknown@…` there, and a token bound to the user's prefix refused it.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { hostname, userInfo } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Stack } from '../helpers/stack';

const STANDALONE = join(import.meta.dirname, '..', '..', 'dist', 'cli', `rc-${process.platform}-${process.arch}`);
let stack: Stack;
let bound = '';
const prefix = `${userInfo().username}@${hostname()}/`;

before(async () => {
  stack = await Stack.start({ workers: [{ name: 'alpha', devices: 1 }] });
  const r = await stack.cli(['admin', 'token', 'create', '--name', 'bound-to-me', '--submitter', prefix], { env: { RC_TOKEN: stack.adminToken } });
  assert.equal(r.code, 0, r.stderr);
  bound = r.stdout.trim().split('\n').pop()!;
});
after(async () => stack.stop());

for (const [what, rc] of [
  ['the standalone rc', STANDALONE],
  ['the Node rc', undefined],
] as const) {
  test(`${what} with USER and LOGNAME unset names the uid's user, and a token bound to that user's prefix accepts the job`, {
    skip: rc !== undefined && !existsSync(rc) && `no ${rc}`,
  }, async () => {
    // The helper passes only PATH and HOME (no USER, no LOGNAME); an empty RC_SUBMITTER is as unset.
    const r = await stack.cli(['run', '--', 'true'], { env: { RC_TOKEN: bound, RC_SUBMITTER: '' }, ...(rc ? { rc } : {}) });
    assert.equal(r.code, 0, r.stderr);
    const jobs = (await stack.api('GET', '/api/jobs?limit=1')).body as { jobs: { submitter: string }[] };
    assert.ok(jobs.jobs[0]!.submitter.startsWith(prefix), jobs.jobs[0]!.submitter);
    assert.match(jobs.jobs[0]!.submitter, /\/s\d+$/);
  });
}

test('the uid name is read from /etc/passwd lines, a uid without one has none', async () => {
  const { passwdName } = await import('../../cli/config');
  const passwd = 'root:x:0:0:root:/root:/bin/bash\n# a comment\nalice:x:1000:1000::/home/alice:/bin/sh\nbroken:x\n';
  assert.equal(passwdName(passwd, 0), 'root');
  assert.equal(passwdName(passwd, 1000), 'alice');
  assert.equal(passwdName(passwd, 1001), null);
  assert.equal(passwdName('', 0), null);
});
