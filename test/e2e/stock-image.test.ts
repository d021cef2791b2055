// The stock job image (docker/worker-image/build.sh, which .ci/run runs once):
// a real job in it through the whole stack, the toolchain the manual promises
// (python3 -m venv, gcc, git), and rc describe saying what the image is and
// holds. Skipped, with the reason, only when the image is not there.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { STOCK_IMAGE, stockImageSkip } from '../helpers/docker';
import { Stack } from '../helpers/stack';

const IMAGE = STOCK_IMAGE;
const docker = (...args: string[]) => spawnSync('docker', args, { encoding: 'utf8' });
const skip = stockImageSkip("the stock image's test");

let stack: Stack;
const host = `si${process.pid}`;
before(async () => {
  if (skip) return;
  stack = await Stack.start({ workers: [] });
  await stack.startWorker(host, 1, { RC_RUNTIME: 'docker', RC_DOCKER_IMAGE: IMAGE });
});
after(async () => {
  if (skip) return;
  await stack.stop();
  const ids = docker('ps', '-aq', '--filter', `label=rc.host=${host}`).stdout.split('\n').filter(Boolean);
  if (ids.length) docker('rm', '-f', ...ids);
});

test('a job in the stock image: a venv with pip, a C program built with gcc and run, git, jq, make and cmake', { skip, timeout: 180_000 }, async () => {
  const script = [
    'set -e',
    'python3 -m venv /scratch/venv',
    '/scratch/venv/bin/python -c "import sys; print(\'venv\', sys.prefix)"',
    '/scratch/venv/bin/pip --version >/dev/null && echo pip ok',
    `printf '%s\\n' '#include <stdio.h>' 'int main(void){puts("gcc ok");return 0;}' > /scratch/hello.c`,
    'gcc -o /scratch/hello /scratch/hello.c',
    '/scratch/hello',
    'git --version | cut -d" " -f1-2',
    'echo \'{"a":1}\' | jq -c .a',
    'make --version >/dev/null && cmake --version >/dev/null && echo build tools ok',
  ].join('\n');
  const r = await stack.cli(['run', '-d', `${host}:gpu0`, '--', 'bash', '-c', script], { timeoutMs: 170_000 });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, 'venv /scratch/venv\npip ok\ngcc ok\ngit version\n1\nbuild tools ok\n');
});

test('rc describe shows the image, its base and what it contains', { skip }, async () => {
  const d = await stack.cli(['describe', `${host}:gpu0`]);
  assert.equal(d.code, 0, d.stderr);
  assert.match(d.stdout, /image +rc-job:stock +detected \(host\)/);
  assert.match(d.stdout, /image_base +(ubuntu 24\.04 \(noble\)|debian \d+ \(\w+\)) +detected \(host\)/);
  const contents = /image_contents +(.+?) +detected \(host\)/.exec(d.stdout)?.[1] ?? '';
  for (const p of ['bash', 'git', 'curl', 'gcc', 'g++', 'make', 'cmake', 'python3', 'python3-pip', 'python3-venv', 'jq', 'rsync']) {
    assert.ok(contents.split(' ').includes(p), `image_contents lacks ${p}: ${contents}`);
  }
});

test('the Dockerfile labels the image with the same package list build.sh installs', () => {
  const dir = join(import.meta.dirname, '..', '..', 'docker', 'worker-image');
  const packages = readFileSync(join(dir, 'packages'), 'utf8')
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('#'))
    .join(' ');
  const dockerfile = readFileSync(join(dir, 'Dockerfile'), 'utf8');
  assert.equal(/^ARG RC_CONTENTS="([^"]*)"$/m.exec(dockerfile)?.[1], packages);
  assert.match(dockerfile, /COPY packages /);
});
