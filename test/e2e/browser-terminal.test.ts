// The dashboard's terminal in a real Chromium (Debian's, driven by
// playwright-core): sign in, open a terminal on a device, type, reload and find
// the same session, and push 20M of output through it without the page freezing
// or the controller's memory growing with it. Needs /usr/bin/chromium
// (.ci/run installs it) and a Next build of the dashboard (the Stack makes one).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, afterEach, before, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { launchChromium, lines, noChromium, signIn as signInAs, terminalStarted, typeLine, untilLine } from '../helpers/browser';
import { Stack } from '../helpers/stack';

const skip = noChromium;

let stack: Stack;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let context: BrowserContext;

before(
  async () => {
    if (skip) return;
    stack = await Stack.start({ dashboard: true, workers: [{ name: 'alpha', devices: 2 }], controllerEnv: { RC_TTY_GRACE_S: '5' } });
    browser = await launchChromium();
    context = browser.context;
  },
  { timeout: 660_000 },
);

// A failed test's pages are closed, so its terminal ends after the grace period and frees its device.
afterEach(async () => {
  for (const p of context?.pages() ?? []) await p.close();
});

after(async () => {
  await browser?.close();
  await stack?.stop();
});

const signIn = (page: Page) => signInAs(page, stack.controllerUrl, stack.clientToken);
const type = typeLine;
const started = terminalStarted;

test('sign in, open a terminal on a device, type; a reload finds the same session with its screen', { skip, timeout: 120_000 }, async () => {
  const page = await context.newPage();
  await signIn(page);
  await page.click('a[href="/devices/alpha%3Agpu0"]');
  await page.getByRole('button', { name: 'Open a terminal on alpha:gpu0' }).click();
  await started(page);
  const url = page.url();
  const jobId = /[?&]job=(j[0-9a-v]{10})/.exec(url)?.[1];
  assert.ok(jobId, `the job goes into the URL: ${url}`);
  await type(page, 'echo ok');
  await untilLine(page, (l) => l === 'ok', 'ok');

  await page.reload();
  await started(page);
  assert.equal(page.url(), url);
  // The earlier screen is replayed...
  await untilLine(page, (l) => l.endsWith('echo ok'), 'the replayed command');
  await untilLine(page, (l) => l === 'ok', 'the replayed output');
  // ...and the session still takes input.
  await type(page, 'echo again-$((1+1)) $RC_JOB_ID');
  await untilLine(page, (l) => l === `again-2 ${jobId}`, 'the same job answering');

  const job = (await stack.api('GET', `/api/jobs/${jobId}`)).body as { job: { kind: string; state: string; submitter: string; devices: string[] } };
  assert.equal(job.job.kind, 'tty');
  assert.equal(job.job.state, 'running');
  assert.deepEqual(job.job.devices, ['alpha:gpu0']);
  assert.match(job.job.submitter, /^web:/);
  const running = (await stack.api('GET', '/api/jobs?state=running')).body as { jobs: unknown[] };
  assert.equal(running.jobs.length, 1, 'the reload opened no second terminal');

  // Resizing the window resizes the terminal (the fit addon, then a resize message).
  const size = async () => {
    await type(page, 'stty size');
    await untilLine(page, (l) => /^\d+ \d+$/.test(l), 'stty size to answer');
    return (await lines(page)).filter((l) => /^\d+ \d+$/.test(l)).at(-1)!;
  };
  await type(page, 'clear');
  const wide = await size();
  await page.setViewportSize({ width: 640, height: 480 });
  await new Promise((r) => setTimeout(r, 300));
  await type(page, 'clear');
  const narrow = await size();
  const [rowsW, colsW] = wide.split(' ').map(Number);
  const [rowsN, colsN] = narrow.split(' ').map(Number);
  assert.ok(colsN! < colsW! && rowsN! < rowsW!, `the terminal shrank with the window: ${wide} → ${narrow}`);

  await type(page, 'exit 0');
  await page.waitForFunction(() => /ended: succeeded/.test(document.querySelector('[data-testid=terminal-status]')?.textContent ?? ''), null, {
    timeout: 15_000,
  });
  await page.close();
});

test("20M of output: it finishes, the page stays responsive, the controller's memory stays bounded", { skip, timeout: 300_000 }, async () => {
  const page = await context.newPage();
  await page.goto(`${stack.controllerUrl}/`);
  await page.getByRole('textbox', { name: 'Filter devices by selector' }).fill('kind=cpu-slot');
  await page.getByRole('button', { name: 'Open a terminal on any device matching the filter' }).click();
  await started(page);
  const rss = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${stack.controllerPid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
  // A first, smaller flood: what the first one costs once (code compiled, buffers and the heap grown to their working size)
  // is not growth with the output, and it was most of the spread between runs (33-66 MiB measured from before any flood).
  await type(page, 'yes | head -c 4M; echo warm-$((6*7))');
  await untilLine(page, (l) => l === 'warm-42', 'the end of the warm-up', 120_000);
  const baseline = rss();
  let maxRss = baseline;
  let maxLagMs = 0;
  const t0 = Date.now();
  await type(page, 'yes | head -c 20M; echo done-$((6*7))');
  let done = false;
  const sampler = (async () => {
    while (!done) {
      const t = Date.now();
      // A page that is frozen answers late (or not at all).
      await page.evaluate(() => 1);
      maxLagMs = Math.max(maxLagMs, Date.now() - t);
      maxRss = Math.max(maxRss, rss());
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  try {
    await untilLine(page, (l) => l === 'done-42', 'the end of the output', 240_000);
  } finally {
    done = true;
    await sampler;
  }
  const seconds = (Date.now() - t0) / 1000;
  console.log(
    `# 20M through the browser terminal: ${seconds.toFixed(1)} s; controller RSS ${baseline.toFixed(0)} MiB before, at most ${maxRss.toFixed(0)} MiB during; slowest page round trip ${maxLagMs} ms`,
  );
  assert.ok(maxLagMs < 3000, `the page answered within 3 s throughout (slowest: ${maxLagMs} ms)`);
  assert.ok(maxRss - baseline < 64, `the controller grew by ${(maxRss - baseline).toFixed(0)} MiB (bounded: the terminal is paused while the page is behind)`);
  await type(page, 'echo still-here');
  await untilLine(page, (l) => l === 'still-here', 'typing after the flood');
  await page.close();
  // Closing the page: the job ends after RC_TTY_GRACE_S and frees its device.
  await stack.waitFor(async () => (await stack.devices()).every((d) => d.state === 'free'), 'the device to be freed after the grace period', 20_000);
});

test("the job page's terminal opens beside the owner's rc run --tty: both see and type, rc stays attached; another token's page is told whose it is", {
  skip,
  timeout: 120_000,
}, async () => {
  const { spawn: spawnPty } = await import('node-pty');
  const cli = spawnPty(process.execPath, [join(import.meta.dirname, '..', '..', 'dist', 'rc.cjs'), 'run', '--tty', '-d', 'alpha:gpu1', '--', 'sh'], {
    name: 'xterm-256color',
    cols: 80,
    rows: 24,
    env: {
      PATH: process.env.PATH!,
      HOME: process.env.HOME ?? '/root',
      RC_CONTROLLER: stack.controllerUrl,
      RC_TOKEN: stack.clientToken,
      RC_SUBMITTER: 'tester',
    },
  });
  let out = '';
  cli.onData((d) => {
    out += d;
  });
  const exited = new Promise<number>((resolve) => cli.onExit(({ exitCode }) => resolve(exitCode)));
  try {
    await stack.waitFor(() => /\$ $|# $/m.test(out), 'the shell under rc run --tty');
    cli.write('echo from-cli-$((2*3))\r');
    await stack.waitFor(() => /[\r\n]from-cli-6\r\n/.test(out), 'the CLI to answer');
    const running = (await stack.api('GET', '/api/jobs?state=running')).body as { jobs: { id: string; kind: string }[] };
    const jobId = running.jobs.find((j) => j.kind === 'tty')!.id;

    const page = await context.newPage();
    await signIn(page);
    await page.goto(`${stack.controllerUrl}/jobs/${jobId}`);
    await page.getByRole('link', { name: 'Open its terminal' }).click();
    await started(page);
    // The screen so far, then what the page types: the CLI sees it too.
    await untilLine(page, (l) => l === 'from-cli-6', 'the replayed screen');
    await type(page, 'echo from-page-$((6*7))');
    await untilLine(page, (l) => l === 'from-page-42', 'the answer on the page');
    await stack.waitFor(() => /[\r\n]from-page-42\r\n/.test(out), 'the answer on the CLI', 15_000);
    // The CLI still types into it, and the page sees that.
    cli.write('echo again-cli-$((3*3))\r');
    await untilLine(page, (l) => l === 'again-cli-9', "the CLI's answer on the page");
    assert.doesNotMatch(out, /detach/, 'rc run --tty was never detached');

    // Another token (an admin signed in in another browser) is refused, and its page says whose the terminal is.
    const adminBrowser = await launchChromium();
    try {
      const other = await adminBrowser.context.newPage();
      await signInAs(other, stack.controllerUrl, stack.adminToken);
      await other.goto(`${stack.controllerUrl}/jobs/${jobId}`);
      await other.getByRole('link', { name: 'Open its terminal' }).click();
      await other.waitForFunction(
        () =>
          /^terminal_busy: the terminal j[0-9a-v]{10} is in use by client token ".*" through (rc|the dashboard) since .*; it can be opened here once they leave it/.test(
            document.querySelector('[data-testid=terminal-status]')?.textContent ?? '',
          ),
        null,
        { timeout: 15_000 },
      );
    } finally {
      await adminBrowser.close();
    }
    // Still the owner's: it types on.
    await type(page, 'echo still-$((4+4))');
    await stack.waitFor(() => /[\r\n]still-8\r\n/.test(out), 'the answer on the CLI', 15_000);

    cli.write('exit 5\r');
    assert.equal(await exited, 5);
    await page.waitForFunction(() => /ended: failed \(exit 5\)/.test(document.querySelector('[data-testid=terminal-status]')?.textContent ?? ''), null, {
      timeout: 15_000,
    });
    await page.close();
  } finally {
    cli.kill('SIGKILL');
  }
});
