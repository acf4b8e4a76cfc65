// An enrollment code's token is printed for everyone (issue 19, item 6): sessions opened with it
// never end another person's enrollment under way. They are bounded per client address and per
// code instead; past a bound, only a session no longer in use makes room, else 429. Real HTTP and
// SQLite; the crowd comes from other loopback addresses (127.0.0.2 …) than the person (127.0.0.1).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EnrollmentCode } from '../../../src-shared/contract/index.ts';
import { agentCall, startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { callFrom } from '../../helpers/from-address.ts';

const PER_ADDRESS = 20;
const PER_CODE = 50;
let t: TestBackend;

beforeAll(async () => {
  t = await startTestBackend({ sessionLimits: { livePerCodeAddress: PER_ADDRESS, livePerCode: PER_CODE } });
});
afterAll(async () => {
  await t?.stop();
});

async function makeCode(name: string): Promise<EnrollmentCode> {
  const created = await t.admin('POST', '/codes', { name });
  expect(created.status).toBe(201);
  return created.body as EnrollmentCode;
}

/** The agent's first steps with the code's account token: a session under the guest profile. */
async function startEnrolling(code: EnrollmentCode): Promise<string> {
  const init = await agentCall(t.apiUrl, 'GET', `initSession?user_token=${code.user_token}`);
  expect(init.status).toBe(200);
  const session = init.body.session_token as string;
  const full = await agentCall(t.apiUrl, 'GET', `getFullSession?session_token=${session}`);
  const guest = full.body.plugin_mdm_guest_profiles_id as number;
  expect((await agentCall(t.apiUrl, 'POST', `changeActiveProfile?session_token=${session}&profiles_id=${guest}`)).status).toBe(
    200,
  );
  return session;
}

async function finishEnrolling(code: EnrollmentCode, session: string, email: string) {
  const created = await agentCall(t.apiUrl, 'POST', `PluginMdmAgent?session_token=${session}`, {
    body: {
      input: {
        _email: email,
        _invitation_token: code.token,
        _serial: `CS${Math.random().toString(36).slice(2, 10).toUpperCase()}`,
        _uuid: crypto.randomUUID(),
        version: '2.0.0',
        type: 'android',
      },
    },
  });
  const record = await agentCall(t.apiUrl, 'GET', `PluginMdmAgent/${created.body.id}?session_token=${session}`);
  return { created, record };
}

const openFrom = (address: string, code: EnrollmentCode) =>
  callFrom(address, `${t.apiUrl}/initSession?user_token=${code.user_token}`, { headers: { 'content-type': 'application/json' } });

describe("an enrollment code's sessions", () => {
  it("a crowd holding the code's QR cannot end a person's enrollment under way: it meets its own bounds", async () => {
    const code = await makeCode('Lobby poster');
    const mine = await startEnrolling(code);

    // One address opens more than its share: PER_ADDRESS sessions, then 429, none of them ending another's.
    const statuses: number[] = [];
    for (let i = 0; i < PER_ADDRESS + 5; i++) statuses.push((await openFrom('127.0.0.2', code)).status);
    expect(statuses).toEqual([...Array<number>(PER_ADDRESS).fill(200), ...Array<number>(5).fill(429)]);
    const refused = await openFrom('127.0.0.2', code);
    expect(refused.body).toEqual([
      'ERROR_TOO_MANY_REQUESTS',
      expect.stringMatching(
        new RegExp(
          `^This enrollment code already has ${PER_ADDRESS} enrollments under way from 127\\.0\\.0\\.2; retry in \\d+ s$`,
        ),
      ),
    ]);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);

    // More addresses fill the code's own bound (PER_CODE, the person's session included); past it, 429 too.
    const crowd: number[] = [];
    for (const address of ['127.0.0.3', '127.0.0.4', '127.0.0.5'])
      for (let i = 0; i < PER_ADDRESS; i++) crowd.push((await openFrom(address, code)).status);
    expect(crowd.filter((s) => s === 200)).toHaveLength(PER_CODE - PER_ADDRESS - 1);
    expect(crowd.filter((s) => s !== 200 && s !== 429)).toEqual([]);

    // The person's session outlived all of it: it enrolls and reads its record.
    const { created, record } = await finishEnrolling(code, mine, 'ana@example.com');
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(record.status).toBe(200);
    expect(record.body.mqttpasswd).toEqual(expect.any(String));
  });

  it('a session whose enrollment timed out or is done makes room for a newcomer from its address', async () => {
    const code = await makeCode('Help desk');
    const sessions: string[] = [];
    for (let i = 0; i < PER_ADDRESS; i++) {
      const opened = await openFrom('127.0.1.2', code);
      expect(opened.status).toBe(200);
      sessions.push(opened.body.session_token as string);
    }
    expect((await openFrom('127.0.1.2', code)).status).toBe(429);

    // The third session's enrollment ran out of time (opened 16 minutes ago, no device enrolled).
    const past = new Date(Date.now() - 16 * 60 * 1000).toISOString();
    t.db.prepare('UPDATE sessions SET created_at = ? WHERE token = ?').run(past, sessions[2]);
    const newcomer = await openFrom('127.0.1.2', code);
    expect(newcomer.status).toBe(200);
    const stillThere = async (session: string) =>
      (await agentCall(t.apiUrl, 'GET', `getFullSession?session_token=${session}`)).status;
    expect(await stillThere(sessions[2]!)).toBe(401); // the one no longer in use ended
    for (const session of [...sessions.slice(0, 2), ...sessions.slice(3)]) expect(await stillThere(session)).toBe(200);
    expect((await openFrom('127.0.1.2', code)).status).toBe(429); // and only that one
  });
});
