/** The inputs an outside fuzzer found answered with a 500: each now gets a clear 4xx. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentCall, startTestBackend, type TestBackend } from '../../helpers/backend.ts';

let t: TestBackend;
const rendererDir = mkdtempSync(join(tmpdir(), 'mdm-renderer-'));
beforeAll(async () => {
  writeFileSync(join(rendererDir, 'index.html'), '<!doctype html><title>console</title>'); // a console build of our own
  process.env.MDM_CONSOLE_RENDERER_DIR = rendererDir;
  t = await startTestBackend();
});
afterAll(async () => {
  await t.stop();
  delete process.env.MDM_CONSOLE_RENDERER_DIR;
  rmSync(rendererDir, { recursive: true, force: true });
});

describe('bad input gets a 4xx, never a 500', () => {
  it('numbers no column can hold: 1e309, Infinity, 1e20', async () => {
    for (const path of [
      '/invitations?limit=1e309',
      '/events?limit=1e309',
      '/invitations?offset=Infinity',
      '/invitations/1e309',
      '/agents/1e20',
      '/invitations?fleet_id=-1e309',
    ]) {
      const { status, body } = await t.admin('GET', path);
      expect(status, path).toBe(400);
      expect(body.error, path).toBe('ERROR_BAD_REQUEST');
    }
    const created = await t.admin('POST', '/invitations', JSON.parse('{"email":"n@example.com","days":1e400}'));
    expect(created.status).toBe(400);
    const agent = await agentCall(t.apiUrl, 'GET', 'PluginMdmFile/1e309?session_token=x');
    expect(agent.status).toBeLessThan(500);
  });

  it('a NUL or an over-long name in a console path', async () => {
    for (const path of ['/assets/%00', '/%00', `/${'x'.repeat(5000)}`]) {
      const response = await fetch(`${t.backend.info.admin_url}${path}`);
      expect(response.status, path.slice(0, 20)).toBeLessThan(500);
    }
    expect((await fetch(`${t.backend.info.admin_url}/assets/%00`)).status).toBe(400);
  });

  it("a URL that cannot be decoded, in each listener's error shape", async () => {
    const agent = await agentCall(t.apiUrl.replace(/\/api$/, ''), 'GET', '%C0%AF');
    expect(agent.status).toBe(400);
    expect(agent.body).toEqual(['ERROR_BAD_REQUEST', 'Bad Request']);
    const admin = await fetch(`${t.backend.info.admin_url}/api/%C0%AF`, {
      headers: { authorization: `Bearer ${t.backend.info.admin_token}` },
    });
    expect(admin.status).toBe(400);
    expect(await admin.json()).toMatchObject({ error: 'ERROR_BAD_REQUEST' });
  });
});
