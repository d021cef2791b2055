import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { landingPath, parseRemote, workspaceRelative } from '../../core/cp';

test('device arguments are host:gpuN:path; anything else is local', () => {
  assert.deepEqual(parseRemote('gpubox-a:gpu0:/workspace/x'), { device: 'gpubox-a:gpu0', path: '/workspace/x' });
  assert.deepEqual(parseRemote('box.lab:gpu12:'), { device: 'box.lab:gpu12', path: '' });
  for (const local of ['./train.py', '/tmp/x', 'train.py', 'box:/x', 'box:cpu0:/x', '-:gpu0:/x']) assert.equal(parseRemote(local), null, local);
});

test('device paths are taken relative to the workspace, and nothing leaves it', () => {
  assert.deepEqual(workspaceRelative('/workspace/a/b.txt'), { ok: true, rel: 'a/b.txt' });
  assert.deepEqual(workspaceRelative('a/./b.txt'), { ok: true, rel: 'a/b.txt' });
  assert.deepEqual(workspaceRelative('/workspace/a/../b'), { ok: true, rel: 'b' });
  assert.deepEqual(workspaceRelative('/workspace/'), { ok: true, rel: '' });
  for (const bad of ['/etc/passwd', '/workspace/../etc', '../x', 'a/../../x', '/workspacex/y', 'a\0b']) {
    assert.equal(workspaceRelative(bad).ok, false, bad);
  }
});

test('property: whatever the path, an accepted one stays under the workspace', () => {
  fc.assert(
    fc.property(fc.array(fc.constantFrom('..', '.', 'a', 'b', '', 'workspace', '/'), { maxLength: 8 }), fc.boolean(), (parts, abs) => {
      const path = (abs ? '/' : '') + parts.join('/');
      const r = workspaceRelative(path);
      if (r.ok) assert.ok(!r.rel.split('/').includes('..') && !r.rel.startsWith('/'), `${path} -> ${r.rel}`);
    }),
  );
});

test('a destination that names a folder gets the source name', () => {
  assert.equal(landingPath('/workspace/', 'train.py'), '/workspace/train.py');
  assert.equal(landingPath('/workspace', 'train.py'), '/workspace/train.py');
  assert.equal(landingPath('/workspace/run.py', 'train.py'), '/workspace/run.py');
  assert.equal(landingPath('./', 'out.json'), './out.json');
  assert.equal(landingPath('.', 'out.json'), './out.json');
});
