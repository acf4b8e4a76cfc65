import { test as base, expect, type Locator, type Page, type TestInfo } from '@playwright/test';
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

export const test = base.extend<{ consoleErrors: string[] }>({
  baseURL: async ({}, use) => use(server.admin_url),
  storageState: async ({}, use) => use(process.env.MDM_E2E_STORAGE!),
  // Every test fails on a script error or a failed request the console did not expect.
  consoleErrors: [
    async ({ page }, use) => {
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(`pageerror: ${error.message}`));
      page.on('console', (message) => {
        // Expected, not errors: refused requests the console handles, and Chromium saying that the
        // email preview's sandboxed frame (no scripts, on purpose) ran none (logged at random, when
        // a script context is set up in that frame).
        const expected =
          /Failed to load resource: the server responded with a status of (40[049]|422)|^Blocked script execution in 'about:srcdoc' because the document's frame is sandboxed/;
        if (message.type() === 'error' && !expected.test(message.text())) {
          errors.push(`console: ${message.text()}`);
        }
      });
      await use(errors);
      expect(errors, 'errors in the browser console').toEqual([]);
    },
    { auto: true },
  ],
});

export { expect };
