// A host joins with one command, end to end: rc admin host add prints it, the
// controller serves the install script and the worker package, the script
// (run as `curl … | sh` would, into a temporary root: no systemd here, so its
// no-systemd path starts the worker) verifies the package, keeps the key
// root-only, starts the worker, which connects with its key and takes a job;
// run again it updates; `sh -s uninstall` removes it. The printed command pins
// the script and the package (RC_SHA256): a middleman swapping either, with its
// stated SHA-256, installs nothing; plain HTTP to another machine is warned of.
// And what it refuses: a bad key, a host without Node, a damaged package, the
// wrong credential. And
// the hello itself: once answered, its devices are listed; many labels fit.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { Stack } from '../helpers/stack';

let stack: Stack;
const roots: string[] = [];
before(async () => {
  stack = await Stack.start({ workers: [] });
});
after(async () => {
  for (const root of roots) {
    // A worker a failed test left running.
    const pid = join(root, 'var/lib/rc-worker/background.pid');
    if (existsSync(pid)) {
      try {
        process.kill(Number(readFileSync(pid, 'utf8')), 'SIGKILL');
      } catch {}
    }
    rmSync(root, { recursive: true, force: true });
  }
  await stack.stop();
});

const PATH = `${dirname(process.execPath)}:/usr/bin:/bin`;

const sha256 = (text: string | Buffer) => createHash('sha256').update(text).digest('hex');

/** The worker package's SHA-256 as the controller states it to a host. */
async function packageSha256(credential: string): Promise<string> {
  const text = await (await fetch(`${stack.controllerUrl}/api/worker/package/sha256`, { headers: { authorization: `Bearer ${credential}` } })).text();
  return text.slice(0, 64);
}

/** Runs a printed command in `cwd` as root would, sudo's part by env (the test is no root). */
function runCommand(command: string, env: Record<string, string>, cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  assert.equal(command.split(' sudo ').length, 2, command);
  return runScript(command.replace(' sudo ', ' env '), env, [], cwd);
}

/** Pipes `script` into sh, as `curl … | sh [-s args]` does. */
function runScript(
  script: string,
  env: Record<string, string>,
  args: string[] = [],
  cwd?: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('sh', ['-s', ...args], {
      cwd,
      env: { PATH, HOME: process.env.HOME ?? '/root', ...env } as unknown as NodeJS.ProcessEnv,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(script);
  });
}

const newRoot = () => {
  const root = mkdtempSync(join(tmpdir(), 'rc-join-'));
  roots.push(root);
  return root;
};
const admin = (args: string[]) => stack.cli(['admin', ...args], { env: { RC_TOKEN: stack.adminToken } });
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test('rc admin host add prints one command; the script installs the worker, which connects with its key and runs a job; again, it updates; uninstall removes it', async () => {
  const t0 = performance.now();
  const added = await admin(['host', 'add', 'joinbox', '--json']);
  assert.equal(added.code, 0, added.stderr);
  const { command, credential, warning } = JSON.parse(added.stdout) as { command: string; credential: string; warning: string | null };
  const script = await (await fetch(`${stack.controllerUrl}/install.sh`)).text();
  assert.match(script, /^#!\/bin\/sh\n/);
  assert.ok(script.includes(`CONTROLLER='${stack.controllerUrl}'`));
  // The command pins the script it runs and the package that script installs.
  const packageSha = await packageSha256(credential);
  assert.equal(
    command,
    `curl -fsSL ${stack.controllerUrl}/install.sh -o rc-install.sh && echo '${sha256(script)}  rc-install.sh' | sha256sum -c - && ` +
      `sudo RC_HOST_TOKEN=${credential} RC_SHA256=${packageSha} sh rc-install.sh`,
  );
  // This controller is on this machine: nothing crosses a network.
  assert.equal(warning, null);

  // The printed command itself, as root would run it (sudo's part by env: the test is no root), in a folder of its own.
  const root = newRoot();
  const r = await runCommand(command, { RC_INSTALL_ROOT: root }, newRoot());
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /^rc-install\.sh: OK\n/);
  assert.match(r.stdout, new RegExp(`joining ${stack.controllerUrl.replace(/[.:/]/g, '\\$&')} as host joinbox`));
  assert.match(r.stdout, new RegExp(`package rc-worker-[\\d.]+\\.tar\\.gz verified \\(sha256 ${packageSha}, as RC_SHA256 pins it\\)`));
  assert.doesNotMatch(r.stderr, /warning/);
  assert.match(r.stdout, /GPUs: none found \(no nvidia-smi\): this host offers CPU slots/);
  assert.match(r.stdout, /no systemd here: rc-worker was started in the background \(pid \d+, log .*worker\.log\)/);
  assert.match(r.stdout, /run .*\/opt\/rc-worker\/rc-worker under your own supervisor/);
  assert.match(r.stdout, /checking it: rc-worker doctor/);
  await stack.waitFor(async () => (await stack.devices()).some((d) => d.name === 'joinbox:gpu0' && d.state === 'free'), 'the new host to be free', 30_000);
  const joinMs = performance.now() - t0;
  console.log(`# rc admin host add → the new host's devices free: ${Math.round(joinMs)} ms (script ${r.stdout.length} bytes of output)`);

  // The key: only in a file root alone reads; the package is in place.
  const env = join(root, 'etc/rc-worker/env');
  assert.equal(statSync(env).mode & 0o777, 0o600);
  assert.ok(readFileSync(env, 'utf8').includes(`RC_HOST_TOKEN=${credential}\n`));
  assert.ok(existsSync(join(root, 'opt/rc-worker/rc-worker.cjs')));
  assert.ok(existsSync(join(root, 'opt/rc-worker/node_modules/node-pty/build/Release/pty.node')));

  const job = await stack.cli(['run', '-d', 'joinbox:gpu0', '--', 'sh', '-c', 'echo "ran on $RC_DEVICES"']);
  assert.equal(job.code, 0, job.stderr);
  assert.equal(job.stdout, 'ran on joinbox:gpu0\n');

  // Again: an update (the key comes from the installed file when not given); a new worker process takes over.
  const pidFile = join(root, 'var/lib/rc-worker/background.pid');
  const firstPid = Number(readFileSync(pidFile, 'utf8'));
  const again = await runScript(script, { RC_INSTALL_ROOT: root });
  assert.equal(again.code, 0, again.stdout + again.stderr);
  // Without RC_SHA256 it says the package is checked only against what came with it.
  assert.match(again.stdout, /verified \(sha256 [0-9a-f]{64}\); not pinned: that SHA-256 came from the controller with the package/);
  const secondPid = Number(readFileSync(pidFile, 'utf8'));
  assert.ok(secondPid > 0, `${again.stdout}${readFileSync(pidFile, 'utf8')}`);
  assert.notEqual(secondPid, firstPid);
  assert.equal(alive(firstPid), false, 'the old worker was stopped');
  await stack.waitFor(
    async () => (await stack.devices()).some((d) => d.name === 'joinbox:gpu0' && d.state === 'free'),
    'the updated worker to connect',
    30_000,
  );
  assert.equal((await stack.cli(['run', '-d', 'joinbox:gpu0', '--', 'true'])).code, 0);

  const gone = await runScript(script, { RC_INSTALL_ROOT: root }, ['uninstall']);
  assert.equal(gone.code, 0, gone.stdout + gone.stderr);
  assert.match(gone.stdout, /rc-worker is removed from this host/);
  assert.equal(alive(secondPid), false);
  for (const dir of ['opt/rc-worker', 'etc/rc-worker', 'var/lib/rc-worker']) assert.equal(existsSync(join(root, dir)), false, `${dir} removed`);
  await stack.waitFor(async () => (await stack.devices()).find((d) => d.name === 'joinbox:gpu0')?.state !== 'free', 'the host to go away');
});

test('the script refuses plainly: no key, a bad key, a host without Node, a package that does not match its SHA-256', async () => {
  const script = await (await fetch(`${stack.controllerUrl}/install.sh`)).text();
  const noKey = await runScript(script, { RC_INSTALL_ROOT: newRoot() });
  assert.equal(noKey.code, 1);
  assert.match(noKey.stderr, /RC_HOST_TOKEN is not set: run the command that rc admin host add <name> printed/);
  const badKey = await runScript(script, { RC_INSTALL_ROOT: newRoot(), RC_HOST_TOKEN: 'rc_h_not-a-key' });
  assert.equal(badKey.code, 1);
  assert.match(badKey.stderr, /the controller at .* refused this key or did not answer/);
  const clientKey = await runScript(script, { RC_INSTALL_ROOT: newRoot(), RC_HOST_TOKEN: stack.clientToken });
  assert.equal(clientKey.code, 1, 'a client token is not a host key');
  // A host whose Node is too old (a fake node first on PATH, as an old distribution's would be).
  const oldNode = mkdtempSync(join(tmpdir(), 'rc-old-node-'));
  roots.push(oldNode);
  writeFileSync(join(oldNode, 'node'), '#!/bin/sh\n[ "$1" = --version ] && echo v18.19.0\nexit 1\n', { mode: 0o755 });
  const tooOld = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const child = spawn('sh', ['-s'], {
      env: { PATH: `${oldNode}:${PATH}`, RC_INSTALL_ROOT: newRoot(), RC_HOST_TOKEN: 'x' } as unknown as NodeJS.ProcessEnv,
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('close', (code) => resolve({ code, stderr }));
    child.stdin.end(script);
  });
  assert.equal(tooOld.code, 1);
  assert.match(tooOld.stderr, /this host is missing what the worker needs:\n {2}- Node\.js 20\.16 or newer \(this host has v18\.19\.0\)/);
  assert.match(tooOld.stderr, /Install them and run the same command again\./);

  // A controller (here, a proxy in front of it) whose package does not match the SHA-256 it states: nothing is installed.
  const added = JSON.parse((await admin(['host', 'add', 'tamperbox', '--json'])).stdout) as { credential: string };
  const proxy: Server = createServer(async (req, res) => {
    const upstream = await fetch(stack.controllerUrl + req.url, { headers: { authorization: req.headers.authorization ?? '' } });
    let body = Buffer.from(await upstream.arrayBuffer());
    if (req.url === '/api/worker/package') body = Buffer.concat([body, Buffer.from('tampered')]);
    res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/octet-stream' });
    res.end(body);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  try {
    const port = (proxy.address() as { port: number }).port;
    const viaProxy = script.replace(`CONTROLLER='${stack.controllerUrl}'`, `CONTROLLER='http://127.0.0.1:${port}'`);
    const root = newRoot();
    const tampered = await runScript(viaProxy, { RC_INSTALL_ROOT: root, RC_HOST_TOKEN: added.credential });
    assert.equal(tampered.code, 1);
    assert.match(tampered.stderr, /the worker package's SHA-256 is [0-9a-f]{64}, not [0-9a-f]{64} as the controller says: .*nothing was installed/);
    assert.equal(existsSync(join(root, 'opt/rc-worker')), false);
    assert.equal(existsSync(join(root, 'etc/rc-worker')), false);
  } finally {
    proxy.close();
  }
});

/**
 * A man in the middle between a host and the controller: forwards every request (as `host`, when given, in the
 * Host header), and swaps the answers `swap` names by path for what it returns.
 */
async function middleman(swap: Record<string, (body: Buffer) => Buffer | Promise<Buffer>>, host?: string): Promise<{ url: string; close(): void }> {
  const upstream = new URL(stack.controllerUrl);
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const out = request(
        { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: { ...req.headers, ...(host ? { host } : {}) } },
        (up) => {
          const parts: Buffer[] = [];
          up.on('data', (c: Buffer) => parts.push(c));
          up.on('end', async () => {
            const change = swap[req.url ?? ''];
            const body = change ? await change(Buffer.concat(parts)) : Buffer.concat(parts);
            // The body's own length; no hash of what it was before.
            const {
              'x-rc-sha256': _,
              'transfer-encoding': __,
              ...headers
            } = { ...up.headers, 'content-length': String(body.length) } as Record<string, string | string[] | undefined>;
            res.writeHead(up.statusCode ?? 502, headers);
            res.end(body);
          });
        },
      );
      out.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, close: () => server.close() };
}

test('a pinned install: RC_SHA256 installs only that package, refuses another and installs nothing; the printed command runs no swapped script', async () => {
  const added = JSON.parse((await admin(['host', 'add', 'pinbox', '--json'])).stdout) as { command: string; credential: string };
  const script = await (await fetch(`${stack.controllerUrl}/install.sh`)).text();
  const pinned = await packageSha256(added.credential);

  // A wrong pin: refused before anything is installed, saying why.
  const wrongRoot = newRoot();
  const wrong = await runScript(script, { RC_INSTALL_ROOT: wrongRoot, RC_HOST_TOKEN: added.credential, RC_SHA256: '0'.repeat(64) });
  assert.equal(wrong.code, 1, wrong.stdout + wrong.stderr);
  assert.match(
    wrong.stderr,
    new RegExp(
      `the worker package's SHA-256 is ${pinned}, not 0{64} as RC_SHA256 pins it: it was altered on the way, or the controller was upgraded since the command was printed .*; nothing was installed`,
    ),
  );
  for (const dir of ['opt/rc-worker', 'etc/rc-worker']) assert.equal(existsSync(join(wrongRoot, dir)), false, `${dir} not installed`);
  // Not a SHA-256 at all: refused before anything is fetched.
  const junk = await runScript(script, { RC_INSTALL_ROOT: newRoot(), RC_HOST_TOKEN: added.credential, RC_SHA256: 'abc' });
  assert.equal(junk.code, 1);
  assert.match(junk.stderr, /RC_SHA256 is not a SHA-256 \(64 hex digits\)/);

  // A middleman swaps the package, and the SHA-256 the controller states with it (a valid package: the same tar,
  // compressed again). Unpinned, the script cannot tell; pinned, it refuses and installs nothing.
  const { gunzipSync, gzipSync } = await import('node:zlib');
  let swapped = '';
  const mitm = await middleman({
    '/api/worker/package': (b) => gzipSync(gunzipSync(b), { level: 1 }),
    '/api/worker/package/sha256': async (b) => {
      const res = await fetch(`${stack.controllerUrl}/api/worker/package`, { headers: { authorization: `Bearer ${added.credential}` } });
      swapped = sha256(gzipSync(gunzipSync(Buffer.from(await res.arrayBuffer())), { level: 1 }));
      return Buffer.from(swapped + b.toString().slice(64));
    },
  });
  try {
    const viaMitm = script.replace(`CONTROLLER='${stack.controllerUrl}'`, `CONTROLLER='${mitm.url}'`);
    const unpinnedRoot = newRoot();
    const unpinned = await runScript(viaMitm, { RC_INSTALL_ROOT: unpinnedRoot, RC_HOST_TOKEN: added.credential, RC_INSTALL_NO_START: '1' });
    assert.equal(unpinned.code, 0, unpinned.stdout + unpinned.stderr);
    assert.match(unpinned.stdout, new RegExp(`verified \\(sha256 ${swapped}\\); not pinned`), 'unpinned, the swapped package is taken');
    const pinnedRoot = newRoot();
    const refused = await runScript(viaMitm, { RC_INSTALL_ROOT: pinnedRoot, RC_HOST_TOKEN: added.credential, RC_SHA256: pinned, RC_INSTALL_NO_START: '1' });
    assert.equal(refused.code, 1, refused.stdout + refused.stderr);
    assert.match(refused.stderr, new RegExp(`SHA-256 is ${swapped}, not ${pinned} as RC_SHA256 pins it`));
    for (const dir of ['opt/rc-worker', 'etc/rc-worker']) assert.equal(existsSync(join(pinnedRoot, dir)), false, `${dir} not installed`);
  } finally {
    mitm.close();
  }

  // A middleman swaps the script itself: the printed command does not run it.
  const marker = join(newRoot(), 'ran');
  const scriptSwap = await middleman({ '/install.sh': () => Buffer.from(`#!/bin/sh\ntouch ${marker}\n`) });
  try {
    const cwd = newRoot();
    const r = await runCommand(added.command.replace(`${stack.controllerUrl}/install.sh`, `${scriptSwap.url}/install.sh`), { RC_INSTALL_ROOT: newRoot() }, cwd);
    assert.notEqual(r.code, 0);
    assert.match(r.stdout, /rc-install\.sh: FAILED/);
    assert.equal(existsSync(marker), false, 'the swapped script did not run');
  } finally {
    scriptSwap.close();
  }

  // The package is made again at each start, to the same bytes: a printed command still holds after a restart.
  await stack.stopController();
  await stack.startController();
  assert.equal(await packageSha256(added.credential), pinned);
});

test('to a controller on plain HTTP at another address, host add warns, and so do both install scripts on the host', async () => {
  // The controller as hosts would reach it by name over plain HTTP: a proxy that passes that name as the Host header.
  const named = await middleman({}, 'rc.internal:8080');
  try {
    const r = await stack.cli(['admin', 'host', 'add', 'farbox'], { env: { RC_TOKEN: stack.adminToken, RC_CONTROLLER: named.url } });
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /curl -fsSL http:\/\/rc\.internal:8080\/install\.sh -o rc-install\.sh && echo '[0-9a-f]{64} {2}rc-install\.sh' \| sha256sum -c - && sudo RC_HOST_TOKEN=rc_h_\S+ RC_SHA256=[0-9a-f]{64} sh rc-install\.sh/,
    );
    assert.equal(
      r.stderr,
      "rc: warning: http://rc.internal:8080 is plain HTTP: the host's key crosses the network in clear, and the install is only as trustworthy as the network " +
        'and the way this command reaches the host (its pins refuse a script or package swapped on the way). Serve the controller over HTTPS ' +
        '(a TLS proxy, RC_PUBLIC_URL=https://…): docs/operators.md, "HTTPS"\n',
    );
    const json = JSON.parse(
      (await stack.cli(['admin', 'host', 'add', 'farbox2', '--json'], { env: { RC_TOKEN: stack.adminToken, RC_CONTROLLER: named.url } })).stdout,
    ) as {
      warning: string | null;
    };
    assert.match(json.warning ?? '', /^http:\/\/rc\.internal:8080 is plain HTTP/);
    // On the host: each script says so before it fetches anything (rc.internal does not resolve here: they stop there).
    for (const path of ['/install.sh', '/install/rc.sh']) {
      const text = await (await fetch(named.url + path)).text();
      const ran = await runScript(text, { RC_INSTALL_ROOT: newRoot(), RC_HOST_TOKEN: 'rc_h_x', HOME: newRoot() });
      assert.equal(ran.code, 1, path);
      assert.match(ran.stderr, /^rc-install: warning: http:\/\/rc\.internal:8080 is plain HTTP: .*only as trustworthy as the network/m, path);
    }
  } finally {
    named.close();
  }
});

test('the package and its SHA-256 need the host key; the script is public; host add refuses bad input', async () => {
  const added = JSON.parse((await admin(['host', 'add', 'pkgbox', '--json'])).stdout) as { credential: string };
  const pkg = await stack.api('GET', '/api/worker/package', undefined, null);
  assert.equal(pkg.status, 401);
  assert.equal((await stack.api('GET', '/api/worker/package', undefined, stack.clientToken)).status, 403);
  assert.equal((await stack.api('GET', '/api/worker/package/sha256', undefined, stack.adminToken)).status, 403);
  const res = await fetch(`${stack.controllerUrl}/api/worker/package`, { headers: { authorization: `Bearer ${added.credential}` } });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/gzip');
  const bytes = Buffer.from(await res.arrayBuffer());
  const sha = createHash('sha256').update(bytes).digest('hex');
  assert.equal(res.headers.get('x-rc-sha256'), sha);
  const shaText = await (await fetch(`${stack.controllerUrl}/api/worker/package/sha256`, { headers: { authorization: `Bearer ${added.credential}` } })).text();
  assert.match(shaText, new RegExp(`^${sha}  rc-worker-[\\d.]+\\.tar\\.gz\\n$`));
  assert.equal((await fetch(`${stack.controllerUrl}/install.sh`, { method: 'POST' })).status, 405);
  // A forged Host header does not get into the script's single quotes.
  const forged = await new Promise<string>((resolve, reject) => {
    const req = request(`${stack.controllerUrl}/install.sh`, { headers: { host: "evil'; rm -rf /;'" } }, (res) => {
      let text = '';
      res.on('data', (b: Buffer) => (text += b.toString()));
      res.on('end', () => resolve(text));
    });
    req.on('error', reject);
    req.end();
  });
  assert.ok(forged.includes("CONTROLLER='http://localhost'"), 'an unfit Host header is not used');
  for (const args of [
    ['host', 'add'],
    ['host', 'add', 'a', 'b'],
    ['host', 'add', 'x', '--bogus'],
  ])
    assert.equal((await admin(args)).code, 2);
  const bad = await admin(['host', 'add', '-bad name']);
  assert.notEqual(bad.code, 0);
});

/** 64 devices with `perDevice` labels each, as a site probe printing many would report them. */
function manyLabels(perDevice: number) {
  const labels = Array.from({ length: perDevice }, (_, k) => ({ key: `probe_${k}`, value: `v${k}`, source: 'detected' as const, probe: 'site' }));
  return Array.from({ length: 64 }, (_, index) => ({ index, labels }));
}

test("a host's devices are listed as soon as its hello is answered", async () => {
  // The worker (and the simulator, and an rc run -d right after) takes the answer to mean that the devices are known.
  // Hosts with many labels: what the controller does after a hello takes long enough to be seen.
  const devices = manyLabels(100);
  const missing: string[] = [];
  for (let i = 0; i < 3; i++) {
    const name = `joined-${i}`;
    const socket = await stack.hostSocket(name);
    try {
      // Listed once before it says hello, as a dashboard would.
      await stack.api('GET', '/api/devices');
      const hello = (await socket.timeout(20_000).emitWithAck('hello', { version: 'test', hostLabels: [], devices, running: [] })) as { ok: boolean };
      assert.ok(hello.ok, JSON.stringify(hello));
      const listed = (await stack.api('GET', '/api/devices')).body as { devices: { name: string; state: string }[] };
      const mine = listed.devices.filter((d) => d.name.startsWith(`${name}:`) && d.state === 'free').length;
      if (mine !== devices.length) missing.push(`${name}: ${mine} of ${devices.length} listed`);
    } finally {
      socket.close();
    }
  }
  assert.deepEqual(missing, [], 'devices not listed right after the hello was answered');
});

test('a hello with more labels than one statement can carry is stored (64 devices × 150)', async () => {
  const socket = await stack.hostSocket('labelled');
  try {
    // 9,600 labels of 8 parameters each: past a statement's 65,535 (and within the 4 MB a socket.io message may carry, server.ts).
    const devices = manyLabels(150);
    const hello = (await socket.timeout(30_000).emitWithAck('hello', { version: 'test', hostLabels: [], devices, running: [] })) as {
      ok: boolean;
      code?: string;
    };
    assert.equal(hello.code, undefined);
    assert.equal(hello.ok, true);
    const d = (await stack.api('GET', '/api/devices/labelled:gpu63')).body as { device: { labels: Record<string, string> } };
    assert.equal(d.device.labels.probe_149, 'v149');
  } finally {
    socket.close();
  }
});

test('a worker whose labels would not fit in one message joins without the largest of its own labels, and says which', async () => {
  // 5 × 1,000 declared labels of 1,000 characters: about 5.5 MB of hello, past the 4 MB a message may carry (server.ts).
  // Sent whole, the controller cut the connection at every hello, and the worker reconnected forever without a word.
  const dir = mkdtempSync(join(tmpdir(), 'rc-big-labels-'));
  roots.push(dir);
  const labels = (tag: string) => Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`${tag}_${i}`, 'x'.repeat(1000)]));
  const config = { labels: labels('site'), devices: Object.fromEntries([0, 1, 2, 3].map((i) => [String(i), { labels: labels(`dev${i}`) }])) };
  writeFileSync(join(dir, 'worker.json'), JSON.stringify(config));
  await stack.startWorker('big-labels', 4, { RC_WORKER_CONFIG: join(dir, 'worker.json') });
  assert.match(
    stack.workerLogs.get('big-labels') ?? '',
    /over the 4 MiB a message to the controller may carry: left out \d+ label\(s\) \(\d+ of the config file\)/,
  );
  const d = (await stack.api('GET', '/api/devices/big-labels:gpu0')).body as { device: { labels: Record<string, string> } };
  assert.equal(
    d.device.labels.kind,
    'cpu-slot',
    `what the worker detects is never left out: ${JSON.stringify(Object.entries(d.device.labels).filter(([k]) => !/^(dev0|site)_/.test(k)))}`,
  );
  const declared = Object.keys(d.device.labels).filter((k) => k.startsWith('dev0_') || k.startsWith('site_')).length;
  assert.ok(declared > 0 && declared < 2000, `${declared} of 2,000 declared labels kept`);
});
