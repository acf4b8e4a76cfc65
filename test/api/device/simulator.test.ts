import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAgent } from '../../../src-main/device/index.ts';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';

let t: TestBackend;

beforeAll(async () => {
  t = await startTestBackend();
});
afterAll(async () => {
  await t.stop();
});

async function store(kind: 'file' | 'package', name: string, bytes: Buffer, query = '') {
  const response = await fetch(`${t.backend.info.admin_url}/api/${kind}s?name=${encodeURIComponent(name)}${query}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.backend.info.admin_token}`, 'content-type': 'application/octet-stream' },
    body: bytes,
  });
  expect(response.status).toBe(201);
  return (await response.json()) as { id: number };
}

describe('the device simulator against the real backend', () => {
  it('enrolls through the whole sequence and verifies every download form, empty files included', async () => {
    const bytes = Buffer.from(Array.from({ length: 70_001 }, (_, i) => (i * 31) % 256));
    const file = await store('file', 'policy.json', bytes);
    // not a real APK: kept as the package the admin describes
    const pkg = await store(
      'package',
      'agent-1.2.apk',
      Buffer.concat([bytes, bytes]),
      '&if_unreadable=keep&package_name=org.example.agent&version_code=12',
    );
    const empty = await store('file', 'empty.txt', Buffer.alloc(0));
    const { body: invitation } = await t.admin('POST', '/invitations', { email: 'sim@example.com', firstname: 'Sim' });

    const lines: string[] = [];
    const result = await runAgent(
      {
        deeplink: invitation.deeplink,
        email: 'SIM@example.com',
        serial: 'SIM-0001',
        type: 'apple',
        downloads: [`file:${file.id}`, `package:${pkg.id}`, `file:${empty.id}`],
      },
      (line) => lines.push(line),
    );
    expect(result.ok, lines.join('\n')).toBe(true);
    expect(result.enrollment.switchedProfile).toBe(true);
    expect(result.enrollment.agent.enroll_status).toBe('enrolled');
    expect(result.mqtt.username).toBe('SIM-0001');
    expect(result.downloads.map((d) => d.size)).toEqual([bytes.length, bytes.length * 2, 0]);
    expect(result.downloads[0]!.checks.filter((c) => c.status === 'failed')).toEqual([]);
    expect(result.downloads[0]!.rangesChecked).toEqual(
      expect.arrayContaining(['bytes=0-', `bytes=-1023`, `bytes=${bytes.length}-`]),
    );

    const { body: agents } = await t.admin('GET', '/agents');
    expect(agents.items.find((a: { serial: string }) => a.serial === 'SIM-0001')).toMatchObject({
      type: 'apple',
      enroll_status: 'enrolled',
      email: 'sim@example.com',
    });
  });

  it('reports the server refusal when the invitation was already used', async () => {
    const { body: invitation } = await t.admin('POST', '/invitations', { email: 'twice@example.com' });
    await runAgent({ deeplink: invitation.deeplink, email: 'twice@example.com', serial: 'TWICE-1' });
    await expect(runAgent({ deeplink: invitation.deeplink, email: 'twice@example.com', serial: 'TWICE-2' })).rejects.toThrow(
      /already been used/,
    );
  });
});
