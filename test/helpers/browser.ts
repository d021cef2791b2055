// A real Chromium for the browser tests (Debian's, driven by playwright-core),
// and the few steps they share on the dashboard's terminal.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';

export const CHROMIUM = process.env.RC_CHROMIUM ?? '/usr/bin/chromium';
/** For node:test's `skip`: false, or why the browser tests cannot run here. */
export const noChromium: string | false = existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (apt-get install chromium, as .ci/run does)`;

/** A headless Chromium with a profile of its own; close() removes the profile too. */
export async function launchChromium(): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const userDataDir = mkdtempSync(join(tmpdir(), 'rc-chromium-'));
  const { chromium } = await import('playwright-core');
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

/** The terminal's visible lines, as xterm's DOM renderer shows them. */
export function lines(page: Page): Promise<string[]> {
  return page.evaluate(
    // innerText, not textContent: each row is a div, and only innerText puts a line break between them.
    // biome-ignore lint/performance/useDomNodeTextContent: the rows' line breaks are the point.
    () => (document.querySelector('.xterm-rows') as HTMLElement | null)?.innerText.split('\n').map((l) => l.replace(/\u00a0/g, ' ').trimEnd()) ?? [],
  );
}

export async function untilLine(page: Page, test: (line: string) => boolean, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    const now = await lines(page);
    if (now.some(test)) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; the terminal shows:\n${now.join('\n')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Signs in on the dashboard's page with a token, as a person does. */
export async function signIn(page: Page, controllerUrl: string, token: string): Promise<void> {
  await page.goto(`${controllerUrl}/login`);
  await page.fill('input[name=token]', token);
  await Promise.all([page.waitForURL(`${controllerUrl}/`), page.click('button[type=submit]')]);
}

/** A new page of `context` at desktop size, signed in with `token`, at `path` of the controller. */
export async function openSignedIn(context: BrowserContext, controllerUrl: string, token: string, path: string): Promise<Page> {
  const page = await context.newPage();
  await page.setViewportSize({ width: 1400, height: 900 });
  await signIn(page, controllerUrl, token);
  await page.goto(`${controllerUrl}${path}`);
  return page;
}

export async function typeLine(page: Page, text: string): Promise<void> {
  await page.click('[data-testid=terminal]');
  await page.keyboard.type(text);
  await page.keyboard.press('Enter');
}

/** The terminal's status says its job runs. */
export const terminalStarted = (page: Page) =>
  page.waitForFunction(() => /^job j[0-9a-v]{10} on /.test(document.querySelector('[data-testid=terminal-status]')?.textContent ?? ''), null, {
    timeout: 20_000,
  });

/** Saves a screenshot of the whole page under test-results/screenshots/ (CI keeps it as an artefact; people look at it). */
export async function screenshot(page: Page, name: string): Promise<string> {
  const { mkdirSync } = await import('node:fs');
  const dir = join(import.meta.dirname, '..', '..', 'test-results', 'screenshots');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
