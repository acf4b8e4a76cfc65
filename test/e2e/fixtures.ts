import { test as base, expect, type BrowserContext, type Locator, type Page, type TestInfo } from '@playwright/test';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { decodeQrPng } from '../helpers/qr.ts';
import { adminClient } from '../../src-shared/contract/admin-client.ts';
import { ROOT, type ServerInfo } from './serve.ts';

export const server: ServerInfo = JSON.parse(process.env.MDM_E2E_SERVER ?? 'null');
export const SCREENSHOTS = join(ROOT, 'test-results', 'screenshots');
mkdirSync(SCREENSHOTS, { recursive: true });

/** The admin API of a server, with its admin token (what a script or the CLI would use). */
export const adminOf = (info: Pick<ServerInfo, 'admin_url' | 'admin_token'>) =>
  adminClient({ baseUrl: info.admin_url, token: info.admin_token });
/** The admin API of the server the specs share. */
export const admin = adminOf(server ?? { admin_url: '', admin_token: '' });

/** Saves a screenshot as a test artifact (test-results/screenshots/<name>.png and the report). */
export async function shot(page: Page | Locator, name: string, testInfo: TestInfo, options: { fullPage?: boolean } = {}) {
  const path = join(SCREENSHOTS, `${name}.png`);
  const isPage = 'goto' in page;
  if (isPage && options.fullPage)
    await (page as Page).evaluate(() => (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 0));
  const body = isPage
    ? await (page as Page).screenshot({ path, fullPage: options.fullPage ?? false, animations: 'disabled' })
    : await (page as Locator).screenshot({ path, animations: 'disabled' });
  await testInfo.attach(name, { body, contentType: 'image/png' });
  return body;
}

/** Decodes the QR code shown by an element, from a screenshot of it. */
export async function decodeQrOf(locator: Locator): Promise<string | null> {
  return decodeQrPng(await locator.screenshot());
}

/**
 * What the browser console may say during a test without failing it. Nothing by default: any
 * warning or error, any script error, fails the test. A test that expects one (a refused request
 * it provokes on purpose) says so with `consoleGuard.allow(/narrow pattern/, why)`, the pattern matched
 * against "<message> @ <url of its source>"; an allowance
 * that never matched fails the test too, so none outlives its reason.
 */
export interface ConsoleGuard {
  allow(pattern: RegExp, why: string): void;
}

/**
 * Said by Chromium itself, whatever the page does: the email preview's sandboxed frame (no scripts,
 * on purpose) ran none. Logged at random, when a script context is set up in that frame.
 */
const CHROMIUM_NOISE = [/^Blocked script execution in 'about:srcdoc' because the document's frame is sandboxed/];

export const test = base.extend<{ consoleGuard: ConsoleGuard }>({
  baseURL: async ({}, use) => use(server.admin_url),
  storageState: async ({}, use) => use(process.env.MDM_E2E_STORAGE!),
  // Every test fails on a console warning or error, a script error, that it did not say it expects:
  // in its page, and in any page of a context it opens itself.
  consoleGuard: [
    async ({ context, browser }, use) => {
      const problems: string[] = [];
      const allowed: { pattern: RegExp; why: string; seen: number }[] = [];
      const watch = (watched: BrowserContext) => {
        watched.on('weberror', (error) => problems.push(`pageerror: ${error.error().message}`));
        watched.on('console', (message) => {
          const type = message.type();
          if (type !== 'error' && type !== 'warning') return;
          const text = message.text();
          if (CHROMIUM_NOISE.some((pattern) => pattern.test(text))) return;
          // Matched against the message and where it came from: "<text> @ <url>".
          const allowance = allowed.find((a) => a.pattern.test(`${text} @ ${message.location().url}`));
          if (allowance) allowance.seen++;
          else problems.push(`console ${type}: ${text} (at ${message.location().url})`);
        });
      };
      watch(context);
      const newContext = browser.newContext.bind(browser);
      browser.newContext = async (...args) => {
        const opened = await newContext(...args);
        watch(opened);
        return opened;
      };
      try {
        await use({ allow: (pattern, why) => void allowed.push({ pattern, why, seen: 0 }) });
      } finally {
        browser.newContext = newContext;
      }
      expect(problems, 'warnings or errors in the browser console that the test did not expect').toEqual([]);
      const unused = allowed.filter((a) => a.seen === 0).map((a) => `${a.pattern} (${a.why})`);
      expect(unused, 'console messages a test said it expects, never logged').toEqual([]);
    },
    { auto: true },
  ],
});

export { expect };
