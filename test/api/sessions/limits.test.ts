// Sessions have bounds (issue 11, item 7): live sessions per token, initSession rate per token and
// per address, a 429 in the spec's error shape. Real HTTP against a backend with small limits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentCall, startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { repositoriesOf } from '../../helpers/repositories.ts';

let t: TestBackend;

beforeAll(async () => {
  t = await startTestBackend({
    sessionLimits: { livePerUser: 3, perToken: { burst: 5, perMinute: 1 }, perAddress: { burst: 8, perMinute: 1 } },
  });
});
afterAll(async () => {
  await t.stop();
});

async function invitee(n: number) {
  const invited = await t.admin('POST', '/invitations', { email: `bounds${n}-${process.pid}@example.com`, send_email: false });
  expect(invited.status).toBe(201);
  return invited.body as { user_token: string; user_id?: number };
}

const init = (token: string) => agentCall(t.apiUrl, 'GET', `initSession?user_token=${token}`);
const liveSessions = () => repositoriesOf(t).sessions.count();

describe('initSession bounds', () => {
  it('keeps the newest sessions of a token live, then answers 429 per token, and to unknown tokens per address', async () => {
    const first = await invitee(1);
    const opened: string[] = [];
    for (let i = 0; i < 5; i++) {
      const response = await init(first.user_token);
      expect(response.status).toBe(200);
      opened.push(response.body.session_token);
    }
    // Three live at most: the two least recently used ended as the others opened.
    expect(await liveSessions()).toBe(3);
    for (const [i, session] of opened.entries()) {
      const full = await agentCall(t.apiUrl, 'GET', `getFullSession?session_token=${session}`);
      expect(full.status, `session ${i}`).toBe(i < 2 ? 401 : 200);
      if (i < 2) expect(full.body).toEqual(['ERROR_SESSION_TOKEN_INVALID', 'session_token seems invalid']);
    }

    // The token's burst is spent.
    const tooMany = await init(first.user_token);
    expect(tooMany.status).toBe(429);
    expect(tooMany.body).toEqual([
      'ERROR_TOO_MANY_REQUESTS',
      expect.stringMatching(/^Too many sessions opened with this token; retry in \d+ s$/),
    ]);
    expect(Number(tooMany.headers.get('retry-after'))).toBeGreaterThan(0);

    // Unknown tokens count against their address: its burst (8) of 401s, then 429s. A valid token
    // from that same address is never refused for it (phones behind one NAT, a bad script among them).
    for (let i = 0; i < 8; i++) expect((await init(`${i}`.repeat(40))).status).toBe(401);
    const fromAddress = await init('f'.repeat(40));
    expect(fromAddress.status).toBe(429);
    expect(fromAddress.body).toEqual([
      'ERROR_TOO_MANY_REQUESTS',
      expect.stringMatching(/^Too many unknown user tokens from 127\.0\.0\.1; retry in \d+ s$/),
    ]);
    expect(Number(fromAddress.headers.get('retry-after'))).toBeGreaterThan(0);
    const second = await invitee(2);
    expect((await init(second.user_token)).status).toBe(200);
    // What was refused created nothing.
    expect(await liveSessions()).toBe(4);
  });
});
