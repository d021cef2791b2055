// The dashboard's Teams page (issue 32) in a real Chromium: the default state
// says so simply; with two teams, three tokens and a fabricated history of use,
// the table and each team's chart show; an admin sets a limit through the page
// (then seen at GET /api/admin/limits, and audited), a bad value shows its
// error sentence, a token is moved to another team; a client session reads the
// page with no edit control. Screenshots go under /tmp/teams-shots/ too.
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync } from 'node:fs';
import { after, afterEach, before, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import postgres from 'postgres';
import type { AuditEntry, LimitView, TokenView } from '../../protocol/wire';
import { launchChromium, noChromium, screenshot, signIn } from '../helpers/browser';
import { Stack } from '../helpers/stack';

const skip = noChromium;
const SHOTS = '/tmp/teams-shots';
let stack: Stack;
let sql: postgres.Sql;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let context: BrowserContext;
const pageErrors: string[] = [];
const tokens: Record<string, { id: number; secret: string }> = {};

before(
  async () => {
    if (skip) return;
    stack = await Stack.start({ dashboard: true, workers: [{ name: 'alpha', devices: 2 }] });
    sql = postgres(stack.dbUrl, { max: 2 });
    browser = await launchChromium();
    context = browser.context;
    context.on('page', (p) => p.on('pageerror', (e) => pageErrors.push(`${p.url()}: ${e.message}`)));
    mkdirSync(SHOTS, { recursive: true });
  },
  { timeout: 660_000 },
);

afterEach(() => {
  const errors = pageErrors.splice(0);
  assert.deepEqual(errors, [], 'no page threw');
});

after(async () => {
  await browser?.close();
  await sql?.end();
  await stack?.stop();
});

async function teamsPage(token: string): Promise<Page> {
  const page = await context.newPage();
  await page.setViewportSize({ width: 1400, height: 900 });
  await signIn(page, stack.controllerUrl, token);
  await page.goto(`${stack.controllerUrl}/teams`);
  await page.locator('[data-team-row="default"]').waitFor();
  return page;
}

async function shot(page: Page, name: string): Promise<void> {
  copyFileSync(await screenshot(page, name), `${SHOTS}/${name}.png`);
}

const adminApi = async (method: string, path: string, body?: unknown) => {
  const r = await stack.api(method, path, body, stack.adminToken);
  assert.ok(r.status < 300, `${method} ${path}: ${JSON.stringify(r.body)}`);
  return r.body;
};

test('with only the default team and no limits the page says so simply, and the nav leads to it', { skip }, async () => {
  const page = await teamsPage(stack.adminToken);
  await page.locator('[data-teams-empty]').waitFor();
  assert.match((await page.locator('[data-teams-empty]').textContent()) ?? '', /Every token is in the one team, default, and no limit is set/);
  assert.equal(await page.getByRole('link', { name: 'Teams' }).getAttribute('aria-current'), 'page');
  assert.match((await page.locator('[data-team-row="default"] [data-fair]').textContent()) ?? '', /no recent use: goes first/);
  await shot(page, 'teams-empty');
  await page.close();
});

test('two teams, three tokens and a history of use: an admin sets limits through the page, audited; a bad value shows its sentence; a token moves', {
  skip,
}, async () => {
  await adminApi('POST', '/api/admin/teams', { name: 'vision', share: 2 });
  await adminApi('POST', '/api/admin/teams', { name: 'nlp' });
  for (const [name, team, submitter] of [
    ['agent-a', 'vision', 'claude/'],
    ['bob', 'nlp', null],
    ['carol', 'nlp', null],
  ] as const) {
    const t = (await adminApi('POST', '/api/admin/tokens', { name, team, submitter })) as { id: number; token: string };
    tokens[name] = { id: t.id, secret: t.token };
  }
  // A fortnight of fabricated use: vision's agent 6 h a day, a third of it idle; nlp's bob 2 h a day, busy.
  const [device] = await sql<{ id: number }[]>`select id from devices where host_name = 'alpha' order by index limit 1`;
  for (let day = 1; day <= 12; day++) {
    for (const [who, hours, idleS] of [
      ['agent-a', 6, 7200],
      ['bob', 2, 0],
    ] as const) {
      const id = `jfab${who.replace('-', '')}${day}`;
      const fromH = day * 24;
      await sql`insert into jobs (id, submitter, argv, state, kind, token_id, started_at, ended_at)
        values (${id}, ${who}, '["true"]'::jsonb, 'succeeded', 'run', ${tokens[who]!.id}, now() - make_interval(hours => ${fromH}), now() - make_interval(hours => ${fromH - hours}))`;
      await sql`insert into leases (device_id, job_id, acquired_at, released_at, idle_s, idle_seen_at)
        values (${device!.id}, ${id}, now() - make_interval(hours => ${fromH}), now() - make_interval(hours => ${fromH - hours}), ${idleS}, now())`;
    }
  }
  await adminApi('PUT', '/api/admin/limits/team:nlp', { gpuHours: '30/week', queued: 10 });

  const page = await teamsPage(stack.adminToken);
  const vision = page.locator('[data-team="vision"]');
  await vision.waitFor();
  assert.equal(await page.locator('[data-teams-empty]').count(), 0, 'not the default state any more');
  // The table: members with their binding, fair share in words, the budget against its limit.
  const visionRow = page.locator('[data-team-row="vision"]');
  assert.match((await visionRow.locator('[data-member="agent-a"]').textContent()) ?? '', /agent-a client · acts as claude\//);
  assert.match((await visionRow.locator('[data-fair]').textContent()) ?? '', /above its share/);
  const nlpRow = page.locator('[data-team-row="nlp"]');
  assert.match((await nlpRow.locator('[data-fair]').textContent()) ?? '', /below its share: goes first/);
  assert.match((await nlpRow.locator('[data-budget]').textContent()) ?? '', /^1[24]\.0 of 30 this week/);
  assert.deepEqual(await nlpRow.locator('[data-member]').evaluateAll((els) => els.map((e) => e.getAttribute('data-member'))), ['bob', 'carol']);
  assert.match((await visionRow.locator('[data-idle]').textContent()) ?? '', /^33%$/);
  await vision.locator('[data-team-chart] canvas').waitFor();
  await page.locator('[data-team="nlp"] [data-team-chart] canvas').waitFor();

  // The admin sets vision's limits through the form.
  const form = page.getByRole('form', { name: 'limits of team vision' });
  await form.locator('input[name=gpus]').fill('4');
  await form.locator('input[name=gpuHours]').fill('200/week');
  await form.locator('input[name=share]').fill('3');
  await form.getByRole('button', { name: 'Save' }).click();
  await vision.getByRole('status').filter({ hasText: 'saved' }).waitFor();
  const [limits] = ((await adminApi('GET', '/api/admin/limits?scope=team:vision')) as { limits: LimitView[] }).limits;
  assert.deepEqual([limits!.gpus, limits!.gpuHours, limits!.period, limits!.queued], [4, 200, 'week', null]);
  await page.locator('[data-team-row="vision"] [data-gpus]').filter({ hasText: '0 of 4' }).waitFor();
  await page.locator('[data-team-row="vision"] td').nth(1).filter({ hasText: /^3$/ }).waitFor();
  const audit = ((await adminApi('GET', '/api/audit?limit=50')) as { entries: AuditEntry[] }).entries;
  const set = audit.find((e) => e.action === 'limit.set' && e.target === 'team:vision');
  assert.ok(set, `a limit.set row for team:vision in ${audit.map((e) => `${e.action} ${e.target}`).join(', ')}`);
  assert.match(set.origin ?? '', /dashboard/);
  assert.deepEqual((set.detail as { set: Record<string, unknown> }).set, { gpus: 4, gpuHours: 200, period: 'week' });
  assert.ok(audit.some((e) => e.action === 'team.set' && e.target === 'vision'));

  // A bad value: the controller's sentence, naming the flag; nothing changes.
  await form.locator('input[name=gpus]').fill('-1');
  await form.getByRole('button', { name: 'Save' }).click();
  const alert = vision.getByRole('alert');
  await alert.waitFor();
  assert.match((await alert.textContent()) ?? '', /bad_request.*--gpus: the devices leased at once, a whole number from 1 to 100000, not "-1"/);
  assert.equal(((await adminApi('GET', '/api/admin/limits?scope=team:vision')) as { limits: LimitView[] }).limits[0]!.gpus, 4);
  // Emptied: the limit is cleared.
  await form.locator('input[name=gpus]').fill('');
  await form.getByRole('button', { name: 'Save' }).click();
  await page.locator('[data-team-row="vision"] [data-gpus]').filter({ hasText: '(no limit)' }).waitFor();

  // Moving carol from nlp to vision.
  const nlp = page.locator('[data-team="nlp"]');
  await nlp.getByLabel('token to move').selectOption({ label: 'carol' });
  await nlp.getByLabel('team to move it to').selectOption('vision');
  await nlp.getByRole('button', { name: 'Move' }).click();
  await page.locator('[data-team-row="vision"] [data-member="carol"]').waitFor();
  const listed = ((await adminApi('GET', '/api/admin/tokens')) as { tokens: TokenView[] }).tokens;
  assert.equal(listed.find((t) => t.name === 'carol')!.team, 'vision');
  await form.locator('input[name=gpus]').fill('4');
  await form.getByRole('button', { name: 'Save' }).click();
  await page.locator('[data-team-row="vision"] [data-gpus]').filter({ hasText: '0 of 4' }).waitFor();
  await shot(page, 'teams-admin');
  await page.close();
});

test('a client session reads the page: no form, no move, the limits listed', { skip }, async () => {
  const page = await teamsPage(tokens.bob!.secret);
  await page.locator('[data-team="vision"] [data-limits-readonly]').waitFor();
  assert.equal(await page.locator('form').count(), 0, 'no edit form');
  assert.equal(await page.getByRole('button', { name: /Save|Move/ }).count(), 0, 'no edit control');
  assert.match((await page.locator('[data-team="vision"] [data-limits-readonly]').textContent()) ?? '', /--gpus4.*--gpu-hours200\/week/);
  for (const team of ['vision', 'nlp']) await page.locator(`[data-team="${team}"] [data-team-chart] canvas`).waitFor();
  await shot(page, 'teams-client');
  await page.close();
});
