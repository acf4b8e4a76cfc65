// `serve --admin-host` / `--admin-origin`: the admin listener on another address than 127.0.0.1 (a
// load balancer on another machine reaches it), still guarded against DNS rebinding. Real HTTP on a
// second loopback address (127.0.0.2, which Linux routes to this machine).
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, startServe } from '../../helpers/cli.ts';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One raw HTTP request, so the Host header is the one given (fetch sets its own). */
function call(
  address: string,
  port: number,
  path: string,
  headers: Record<string, string>,
  method = 'GET',
  body?: string,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: address, port, path, method, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const portOf = (t: TestBackend) => Number(new URL(t.backend.info.admin_url).port);

describe('admin listener address (--admin-host, --admin-origin)', () => {
  let t: TestBackend | undefined;
  afterEach(async () => {
    await t?.stop();
    t = undefined;
  });

  it('binds 127.0.0.1 only by default: nothing answers on 127.0.0.2', async () => {
    t = await startTestBackend();
    expect(new URL(t.backend.info.admin_url).hostname).toBe('127.0.0.1');
    const auth = { authorization: `Bearer ${t.backend.info.admin_token}` };
    expect((await call('127.0.0.1', portOf(t), '/api/settings', auth)).status).toBe(200);
    await expect(call('127.0.0.2', portOf(t), '/api/settings', auth)).rejects.toThrow(/ECONNREFUSED/);
  });

  it('with --admin-host 127.0.0.2 answers there, to the --admin-origin name too, and refuses another name', async () => {
    t = await startTestBackend({ adminHost: '127.0.0.2', adminOrigin: 'https://admin.example' });
    const port = portOf(t);
    expect(t.backend.info.admin_url).toBe(`http://127.0.0.2:${port}`);
    const auth = { authorization: `Bearer ${t.backend.info.admin_token}` };
    expect((await call('127.0.0.2', port, '/api/settings', { ...auth, host: `127.0.0.2:${port}` })).status).toBe(200);
    // The name the balancer passes on (with or without its port).
    expect((await call('127.0.0.2', port, '/api/settings', { ...auth, host: 'admin.example' })).status).toBe(200);
    expect((await call('127.0.0.2', port, '/api/settings', { ...auth, host: 'ADMIN.example:443' })).status).toBe(200);
    // Any other name is a rebinding page: refused, with the way out in the message.
    const refused = await call('127.0.0.2', port, '/api/settings', { ...auth, host: 'evil.example' });
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body)).toMatchObject({ error: 'ERROR_HOST_NOT_ALLOWED' });
    expect(JSON.parse(refused.body).message).toMatch(/admin\.example.*--admin-origin/);
  });

  it('signs in from the https origin of the balancer, with a Secure cookie when it says X-Forwarded-Proto: https', async () => {
    t = await startTestBackend({ adminHost: '127.0.0.2', adminOrigin: 'https://admin.example' });
    const port = portOf(t);
    const body = JSON.stringify({ credential: t.backend.info.admin_token });
    const headers = { host: 'admin.example', 'content-type': 'application/json', 'x-forwarded-proto': 'https' };
    const signedIn = await call(
      '127.0.0.2',
      port,
      '/auth/sign-in',
      { ...headers, origin: 'https://admin.example' },
      'POST',
      body,
    );
    expect(signedIn.status).toBe(200);
    const cookie = String(signedIn.headers['set-cookie']);
    expect(cookie).toMatch(/mdm_console=.*HttpOnly; SameSite=Strict;.*; Secure/);
    const session = /mdm_console=([^;]+)/.exec(cookie)![1]!;
    const me = await call('127.0.0.2', port, '/api/settings', { host: 'admin.example', cookie: `mdm_console=${session}` });
    expect(me.status).toBe(200);
    // Another origin cannot sign in through it.
    const foreign = await call('127.0.0.2', port, '/auth/sign-in', { ...headers, origin: 'https://evil.example' }, 'POST', body);
    expect(foreign.status).toBe(403);
    // Straight to the node over plain HTTP (no X-Forwarded-Proto): no Secure flag, or the browser would drop it.
    const direct = await call(
      '127.0.0.2',
      port,
      '/auth/sign-in',
      { host: `127.0.0.2:${port}`, 'content-type': 'application/json', origin: `http://127.0.0.2:${port}` },
      'POST',
      body,
    );
    expect(direct.status).toBe(200);
    expect(String(direct.headers['set-cookie'])).not.toMatch(/Secure/);
  });

  it('serve --admin-host 127.0.0.2 listens there and says so', async () => {
    const serve = await startServe('adminbind-', { extraArgs: ['--admin-host', '127.0.0.2'] });
    try {
      const info = JSON.parse(readFileSync(join(serve.dataDir, 'server.json'), 'utf8')) as {
        admin_url: string;
        admin_token: string;
      };
      const url = new URL(info.admin_url);
      expect(url.hostname).toBe('127.0.0.2');
      const auth = { authorization: `Bearer ${info.admin_token}` };
      expect((await call('127.0.0.2', Number(url.port), '/api/settings', auth)).status).toBe(200);
      await expect(call('127.0.0.1', Number(url.port), '/api/settings', auth)).rejects.toThrow(/ECONNREFUSED/);
    } finally {
      serve.stop('SIGTERM');
    }
  });

  it('serve refuses a malformed --admin-origin with a clear error', async () => {
    const result = await runCli('/tmp/adminbind-unused', [
      'serve',
      '--admin-host',
      '127.0.0.2',
      '--admin-origin',
      'admin.example/path',
    ]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/--admin-origin must be .*https:\/\/NAME/);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});
