// One `serve` for the whole run; the browser signs in once with the console_url it printed (the
// one-time ticket becomes an HttpOnly cookie) and every test reuses that signed-in state.
import { chromium, type FullConfig } from '@playwright/test';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, startServe } from './serve.ts';

export default async function globalSetup(config: FullConfig) {
  const serve = await startServe();
  const printed = /Console:\s+(\S+)/.exec(serve.output())?.[1];
  if (printed !== serve.info.console_url) throw new Error(`serve printed ${printed}, server.json says ${serve.info.console_url}`);

  const resultsDir = join(ROOT, 'test-results');
  mkdirSync(resultsDir, { recursive: true });
  // The signed-in state (an admin cookie) stays out of the repository and apart from other runs.
  const stateDir = mkdtempSync(join(tmpdir(), 'mdm-e2e-state-'));
  const storageState = join(stateDir, 'storage-state.json');
  const launchOptions = config.projects[0]!.use.launchOptions ?? {};
  const browser = await chromium.launch(launchOptions);
  try {
    const page = await browser.newPage();
    await page.goto(serve.info.console_url);
    // Signed in: the console loaded its data, no 401.
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor({ timeout: 20_000 });
    if (new URL(page.url()).search.includes('ticket')) throw new Error('the ticket stayed in the address bar');
    await page.context().storageState({ path: storageState });
  } finally {
    await browser.close();
  }
  const { admin_token: _token, ...visible } = serve.info;
  void _token;
  process.env.MDM_E2E_SERVER = JSON.stringify(serve.info);
  process.env.MDM_E2E_STORAGE = storageState;
  writeFileSync(join(resultsDir, 'e2e-server.json'), JSON.stringify(visible, null, 2));
  return async () => {
    await serve.stop();
    rmSync(stateDir, { recursive: true, force: true });
  };
}
