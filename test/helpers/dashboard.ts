// Driving the web dashboard (/app) in Chromium: signing in, the axe-core check and screenshots.
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { Test } from 'tap';

/** Where the screenshots of a run go (DASHBOARD_SCREENSHOTS to choose); the test prints it. */
export const SCREENSHOT_DIRECTORY = process.env.DASHBOARD_SCREENSHOTS ?? join(tmpdir(), 'media-dashboard-screenshots');

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * axe-core on the page as it is, failing the test on any serious or critical violation. The script
 * is evaluated through the DevTools protocol: the page's Content-Security-Policy would refuse it as
 * an inline script, and stays on (the test is about that page).
 */
export async function expectAccessible(t: Test, page: Page, screen: string): Promise<void> {
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const page = globalThis as unknown as { axe: { run(context: unknown, options: object): Promise<{ violations: any[] }> }; document: unknown };
    const result = await page.axe.run(page.document, { resultTypes: ['violations'] });
    return result.violations.map((violation) => ({
      id: violation.id, impact: violation.impact, help: violation.help,
      targets: violation.nodes.slice(0, 3).map((node: { target: string[] }) => node.target.join(' ')),
    }));
  });
  const serious = violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical');
  t.same(serious, [], `axe: no serious or critical violation on ${screen}`);
}

/** A full-page screenshot named after the screen. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOT_DIRECTORY, { recursive: true });
  const path = join(SCREENSHOT_DIRECTORY, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** Signs in on the sign-in view with a team's API key (the key finds its team: teamId is not typed), and waits for the media view. */
export async function signInWithKey(page: Page, baseUrl: string, team: { teamId?: string; key: string }): Promise<void> {
  await page.goto(`${baseUrl}/app`);
  await page.getByLabel('API key', { exact: true }).fill(team.key);
  await page.getByRole('button', { name: 'Open the team' }).click();
  await page.getByRole('heading', { level: 1, name: 'Media' }).waitFor();
}

export interface DashboardPage {
  context: BrowserContext;
  page: Page;
  /** Messages of the dialogs the page opened (each dismissed). */
  dialogs: string[];
  /** Uncaught errors and console errors of the page (failed resource loads aside). */
  pageErrors: string[];
}

/**
 * A fresh browser context and page for a dashboard test, closed at the test's end: reduced motion
 * (no colour transitions while axe measures contrast), the clipboard granted for `origin`.
 */
export async function newDashboardPage(t: Test, browser: Browser, origin: string): Promise<DashboardPage> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, reducedMotion: 'reduce' });
  t.teardown(() => context.close());
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  context.setDefaultTimeout(10_000);
  const page = await context.newPage();
  const dialogs: string[] = [];
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  const pageErrors: string[] = [];
  page.on('pageerror', (error) => pageErrors.push(String(error)));
  page.on('console', (message) => message.type() === 'error' && !/Failed to load resource/.test(message.text()) && pageErrors.push(message.text()));
  return { context, page, dialogs, pageErrors };
}

/** What the page's clipboard holds. */
export function clipboardText(page: Page): Promise<string> {
  return page.evaluate(() => (globalThis as any).navigator.clipboard.readText() as Promise<string>);
}
