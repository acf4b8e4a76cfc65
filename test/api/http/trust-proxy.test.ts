// Behind a balancer every request comes from the balancer's address (issue 23): `--trust-proxy`
// makes the forwarded client the address of the per-address limits and of the audit log, for the
// listed balancers only. Real HTTP against real backends; the client's real address is 127.0.0.1.
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { agentCall, startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { callFrom } from '../../helpers/from-address.ts';
import { sameOriginJson } from '../../helpers/console-session.ts';

const limits = { perAddress: { burst: 3, perMinute: 1 } };
const started: TestBackend[] = [];
afterAll(async () => {
  await Promise.all(started.map((t) => t.stop()));
});

async function backend(trustProxy?: string[], ownerName?: string): Promise<TestBackend> {
  const t = await startTestBackend({ sessionLimits: limits, ...(trustProxy && { trustProxy }), ...(ownerName && { ownerName }) });
  started.push(t);
  return t;
}

let unknown = 0;
/** initSession with a token nobody has, as if forwarded for `client` (none: no header). */
const unknownToken = (t: TestBackend, client?: string) =>
  agentCall(t.apiUrl, 'GET', `initSession?user_token=${(++unknown).toString(16).padStart(40, 'e')}`, {
    headers: client ? { 'x-forwarded-for': client } : {},
  });

describe('--trust-proxy', () => {
  it('without it, a forged X-Forwarded-For is ignored: the limit counts the real address', async () => {
    const t = await backend();
    for (const client of ['203.0.113.1', '203.0.113.2', '203.0.113.3']) expect((await unknownToken(t, client)).status).toBe(401);
    const refused = await unknownToken(t, '203.0.113.4');
    expect(refused.status).toBe(429);
    expect(refused.body[1]).toMatch(/^Too many unknown user tokens from 127\.0\.0\.1;/);
  });

  it('from a trusted balancer, each forwarded client is limited on its own', async () => {
    const t = await backend(['127.0.0.1']);
    for (let i = 0; i < 3; i++) expect((await unknownToken(t, '203.0.113.1')).status).toBe(401);
    const refused = await unknownToken(t, '203.0.113.1');
    expect(refused.status).toBe(429);
    expect(refused.body[1]).toMatch(/^Too many unknown user tokens from 203\.0\.113\.1;/);
    // Another device behind the same balancer is not refused for it, nor the balancer itself.
    expect((await unknownToken(t, '203.0.113.2')).status).toBe(401);
    expect((await unknownToken(t, '198.51.100.7, 203.0.113.2')).status).toBe(401);
    expect((await unknownToken(t)).status).toBe(401);
  });

  it('from an address outside the list, the header is ignored', async () => {
    const t = await backend(['10.0.0.0/8', '::1']);
    for (const client of ['203.0.113.1', '203.0.113.2', '203.0.113.3']) expect((await unknownToken(t, client)).status).toBe(401);
    const refused = await unknownToken(t, '203.0.113.4');
    expect(refused.status).toBe(429);
    expect(refused.body[1]).toMatch(/^Too many unknown user tokens from 127\.0\.0\.1;/);
  });
});

describe('--trust-proxy on the admin listener', () => {
  it('records the forwarded client of a trusted balancer in the audit log, and the real address of any other', async () => {
    const t = await backend(['127.0.0.2'], 'ana');
    const adminUrl = t.backend.info.admin_url;
    const wrongPassword = (from: string, forwarded: string) =>
      callFrom(
        from,
        `${adminUrl}/auth/password`,
        sameOriginJson({ email: 'ana@example.org', password: 'not it' }, { 'x-forwarded-for': forwarded }),
      );
    expect((await wrongPassword('127.0.0.2', '198.51.100.9')).status).toBe(401);
    expect((await wrongPassword('127.0.0.3', '198.51.100.10')).status).toBe(401);
    const events = (await t.admin('GET', '/events?limit=1000')).body.items as { type: string; data: { address?: string } }[];
    const addresses = events.filter((e) => e.type === 'admin.sign_in_failed').map((e) => e.data.address);
    expect(addresses.sort()).toEqual(['127.0.0.3', '198.51.100.9']);
  });
});

describe('serve --trust-proxy with something else than addresses', () => {
  const ROOT = join(import.meta.dirname, '../../..');
  const serve = (args: string[], env: Record<string, string> = {}) =>
    spawnSync(
      process.execPath,
      [join(ROOT, 'src-main/cli/main.ts'), 'serve', '--data-dir', mkdtempSync(join(tmpdir(), 'mdm-trust-')), ...args],
      { encoding: 'utf8', timeout: 60_000, cwd: ROOT, env: { ...process.env, ...env } },
    );

  it('is refused with a clear message, before anything starts', () => {
    for (const [args, env, message] of [
      [['--trust-proxy', 'true'], {}, '--trust-proxy: "true" is not an address or a CIDR range'],
      [['--trust-proxy', '127.0.0.1,10.0.0.0/33'], {}, '--trust-proxy: "10.0.0.0/33" is not an address or a CIDR range'],
      [['--trust-proxy', ' , '], {}, '--trust-proxy needs the addresses of the balancers'],
      [[], { MDM_CONSOLE_TRUST_PROXY: '*' }, 'MDM_CONSOLE_TRUST_PROXY: "*" is not an address or a CIDR range'],
      // Its companion behind a balancer: links must name a port devices can connect to.
      [['--public-port', '0'], {}, '--public-port must be a port number from 1 to 65535'],
      [['--public-port', '8o80'], {}, '--public-port must be a port number from 1 to 65535'],
    ] as const) {
      const result = serve([...args], env);
      expect(result.status, result.stderr).toBe(2); // a usage error
      expect(result.stderr).toContain(message);
      expect(result.stderr).not.toMatch(/^\s+at /m);
    }
  });
});
