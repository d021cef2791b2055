// The Docker tests' image: busybox alone, imported from the host's
// busybox-static (there may be no registry to pull from).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, copyFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const TEST_IMAGE = 'rc-test:busybox';
const BUSYBOX = '/bin/busybox';
const NEEDS = 'the Docker tests need dockerd running and busybox-static installed (.ci/run does both)';

function docker(args: string[], input?: Buffer) {
  return spawnSync('docker', args, { input, encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 });
}

/** Returns the test image's name, importing it first if dockerd does not have it. */
export async function ensureTestImage(): Promise<string> {
  const info = docker(['info', '--format', '{{.ServerVersion}}']);
  if (info.error || info.status !== 0) {
    const why = info.error ? info.error.message : info.stderr.toString().trim().split('\n')[0];
    throw new Error(`${NEEDS}: docker info failed: ${why}`);
  }
  if (docker(['image', 'inspect', TEST_IMAGE]).status === 0) return TEST_IMAGE;
  if (!existsSync(BUSYBOX)) throw new Error(`${NEEDS}: ${BUSYBOX} is missing`);
  const root = mkdtempSync(join(tmpdir(), 'rc-busybox-'));
  try {
    for (const d of ['bin', 'tmp', 'workspace', 'etc', 'root', 'usr/local/bin', 'proc', 'sys', 'dev']) mkdirSync(join(root, d), { recursive: true });
    copyFileSync(BUSYBOX, join(root, 'bin/busybox'));
    const list = spawnSync(BUSYBOX, ['--list'], { encoding: 'utf8' });
    if (list.status !== 0) throw new Error(`${NEEDS}: ${BUSYBOX} --list failed`);
    const have = new Set(readdirSync(join(root, 'bin')));
    for (const applet of list.stdout.split('\n').filter(Boolean)) {
      if (!have.has(applet)) symlinkSync('busybox', join(root, 'bin', applet));
    }
    writeFileSync(join(root, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\n');
    const tar = spawnSync('tar', ['-C', root, '-c', '.'], { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 });
    if (tar.status !== 0) throw new Error(`cannot pack the test image: ${tar.stderr.toString().trim()}`);
    const imp = docker(['import', '-', TEST_IMAGE], tar.stdout);
    if (imp.status !== 0) throw new Error(`cannot import the test image: ${imp.stderr.toString().trim()}`);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  return TEST_IMAGE;
}

/** The stock job image (docker/worker-image/build.sh, which .ci/run runs once): the local provider's machines and the stock image's test run in it. */
export const STOCK_IMAGE = 'rc-job:stock';

/**
 * For a test that needs the stock image: throws when dockerd does not answer
 * (a missing dockerd is a broken machine, not a reason to skip), and returns
 * why to skip when the image was not built here (false: it is there).
 */
export function stockImageSkip(what: string): string | false {
  const info = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { encoding: 'utf8' });
  if (info.error || info.status !== 0) throw new Error(`${what} needs dockerd running (.ci/run starts it): ${info.error?.message ?? info.stderr.trim()}`);
  const skip =
    docker(['image', 'inspect', STOCK_IMAGE]).status === 0
      ? false
      : `${STOCK_IMAGE} is not on this host: build it with docker/worker-image/build.sh (.ci/run does)`;
  if (skip) console.log(`# skipped: ${skip}`);
  return skip;
}

/** Every container whose name starts `<prefix>-` (a provider test's own prefix), removed: after its controller stopped, so none is launched later. */
export async function removeContainersByPrefix(prefix: string): Promise<void> {
  const names = docker(['ps', '-a', '--format', '{{.Names}}', '--filter', `name=^${prefix}-`])
    .stdout.toString()
    .split('\n')
    .filter((n) => n.startsWith(`${prefix}-`));
  await removeContainers(names);
}

/** Removes these containers, by their exact names, whether they run or not (the provider tests' clean-up); one already gone is no error. */
export async function removeContainers(names: Iterable<string>): Promise<void> {
  for (const name of names) docker(['rm', '-f', name]);
}

/** The images compose.yaml runs (docker/compose-images.sh builds them; .ci/run does). */
export const COMPOSE_IMAGES = ['rc-controller:latest', 'rc-postgres:latest', 'rc-proxy:latest'];

/**
 * For the compose test: throws when dockerd does not answer (as stockImageSkip), and returns why to skip when
 * docker-compose or one of compose.yaml's images is not on this host (false: all there).
 */
export function composeSkip(what: string): string | false {
  const info = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { encoding: 'utf8' });
  if (info.error || info.status !== 0) throw new Error(`${what} needs dockerd running (.ci/run starts it): ${info.error?.message ?? info.stderr.trim()}`);
  const compose = spawnSync('docker-compose', ['version', '--short'], { encoding: 'utf8' });
  const missing = COMPOSE_IMAGES.filter((image) => docker(['image', 'inspect', image]).status !== 0);
  const skip =
    compose.error || compose.status !== 0
      ? 'docker-compose is not installed: apt-get install docker-compose (.ci/run does)'
      : missing.length
        ? `${missing.join(', ')} not on this host: build them with docker/compose-images.sh (.ci/run does)`
        : false;
  if (skip) console.log(`# skipped: ${skip}`);
  return skip;
}
