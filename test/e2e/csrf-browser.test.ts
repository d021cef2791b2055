// Cross-site request forgery in a real Chromium: an operator is signed in to
// the dashboard (its session cookie is set), and a page served from another
// port of the same host (same site, so SameSite=Strict lets the cookie through)
// tries what such pages can send without a preflight: a text/plain fetch and a
// text/plain form that smuggles JSON. Neither may run a command or make a token.
// Needs /usr/bin/chromium (.ci/run installs it).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { BrowserContext } from 'playwright-core';
import { launchChromium, noChromium } from '../helpers/browser';
import { Stack } from '../helpers/stack';

const skip = noChromium;

let stack: Stack;
let context: BrowserContext;
let evil: Server;
let evilUrl = '';
let browser: Awaited<ReturnType<typeof launchChromium>>;
const marker = join(mkdtempSync(join(tmpdir(), 'rc-csrf-')), 'ran');

before(
  async () => {
    if (skip) return;
    stack = await Stack.start({ workers: [{ name: 'alpha', devices: 1 }] });
    const ctl = stack.controllerUrl;
    // JSON in a text/plain form: the field name carries the object, the value closes it (the body reads …"submitter":"csrf="}).
    const smuggled = JSON.stringify({ argv: ['sh', '-c', `touch ${marker}`], submitter: 'csrf' }).slice(0, -2);
    const page = `<!doctype html><title>cat pictures</title>
<form id="f" method="POST" action="${ctl}/api/jobs" enctype="text/plain"><input type="hidden" name='${smuggled}' value='"}'></form>
<script>
fetch(${JSON.stringify(ctl)} + '/api/admin/tokens', { method: 'POST', credentials: 'include', headers: { 'content-type': 'text/plain' }, body: JSON.stringify({ name: 'csrf-admin', kind: 'admin' }) })
  .catch(() => null)
  .then(() => fetch(${JSON.stringify(ctl)} + '/api/jobs', { method: 'POST', credentials: 'include', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body: JSON.stringify({ argv: ['sh', '-c', 'touch ${marker}'], submitter: 'csrf' }) }).catch(() => null))
  .then(() => { document.title = 'sent'; document.getElementById('f').submit(); });
</script>`;
    evil = createServer((_, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(page);
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    evilUrl = `http://127.0.0.1:${(evil.address() as { port: number }).port}/`;
    browser = await launchChromium();
    context = browser.context;
    // Signed in as an operator, as the dashboard's sign-in leaves it.
    const session = (await stack.signIn(stack.adminToken)).slice('rc_session='.length);
    await context.addCookies([{ name: 'rc_session', value: session, url: ctl, httpOnly: true, sameSite: 'Strict' }]);
  },
  { timeout: 120_000 },
);

after(async () => {
  await browser?.close();
  evil?.close();
  await stack?.stop();
});

test("a page on another port of the same host cannot run a command or create a token with the operator's cookie", { skip, timeout: 60_000 }, async () => {
  const page = await context.newPage();
  // The cookie really reaches the controller from this browser: a same-origin read works.
  await page.goto(`${stack.controllerUrl}/api/whoami`);
  assert.match((await page.textContent('body')) ?? '', /"kind":"admin"/);
  const answer = page.waitForResponse(
    (r) => r.url() === `${stack.controllerUrl}/api/jobs` && r.request().method() === 'POST' && r.request().resourceType() === 'document',
  );
  await page.goto(evilUrl);
  const form = await answer;
  assert.equal(form.status(), 403, 'the smuggled form is refused');
  await new Promise((r) => setTimeout(r, 1000));
  const tokens = await stack.api('GET', '/api/admin/tokens', undefined, stack.adminToken);
  assert.ok(!(tokens.body as { tokens: { name: string }[] }).tokens.some((t) => t.name === 'csrf-admin'), 'no token was created');
  const jobs = await stack.api('GET', '/api/jobs');
  assert.deepEqual((jobs.body as { jobs: unknown[] }).jobs, [], 'no job was submitted');
  assert.ok(!existsSync(marker), 'no command ran');
  await page.close();
});
