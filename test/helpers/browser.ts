// Headless Debian Chromium for the browser tests (driven by playwright-core), and pages served on
// an origin of their own, the way a web panel or a game's in-game browser calls the API.
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { Test } from 'tap';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

// Without the background-networking flags Chromium keeps trying to reach Google's hosts, which this
// machine's closed network refuses.
const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

/** Why a browser test cannot run here (no Chromium), or null. */
export function chromiumMissing(): string | null {
  return existsSync(CHROMIUM) ? null : `no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`;
}

/**
 * Skips the whole test file with a clear message when Chromium is missing (tap reports a plan of
 * 0 with the reason); otherwise launches it, closed at the end of `t`.
 */
export async function launchChromiumOrSkip(t: Test, what: string): Promise<Browser> {
  const missing = chromiumMissing();
  if (missing) {
    t.plan(0, `${what} skipped: ${missing}`);
    process.exit(0);
  }
  return launchChromium(t);
}

/** Launches headless Chromium, closed at the end of `t`. */
export async function launchChromium(t: Test): Promise<Browser> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  t.teardown(() => browser.close());
  return browser;
}

/** A page opened on an origin of its own (another port of localhost), served by a tiny HTTP server; both closed at the end of `t`. */
export async function pageOnOwnOrigin(t: Test, browser: Browser, title = 'panel'): Promise<{ origin: string; page: Page }> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(`<!doctype html><title>${title}</title><p>${title}</p>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const context = await browser.newContext();
  t.teardown(() => context.close());
  const page = await context.newPage();
  await page.goto(`${origin}/`);
  return { origin, page };
}
