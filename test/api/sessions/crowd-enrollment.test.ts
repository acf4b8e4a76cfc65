// 1,000 devices behind one address (a school hall behind one NAT, IT staff handing out phones)
// enroll with one code, and none is refused: the real agents do not retry, they show an error
// (issue 19, item 6). Before, initSession answered 429 past 300 a minute from one address. A flood
// of unknown tokens from that same address is still slowed. Default limits, real HTTP and SQLite.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EnrollmentCode } from '../../../src-shared/contract/index.ts';
import { agentCall, startTestBackend, type TestBackend } from '../../helpers/backend.ts';

const DEVICES = 1000;
/** Devices enrolling at once: enough to be a crowd, modest enough for a shared test machine. */
const CONCURRENCY = 16;
const BAD_TOKENS = 200;
let t: TestBackend;

beforeAll(async () => {
  t = await startTestBackend();
});
afterAll(async () => {
  await t?.stop();
});

/** The agent's whole enrollment: every step's status, and the MQTT password it ends with. */
async function enroll(code: EnrollmentCode, n: number): Promise<{ steps: number[]; password: unknown }> {
  const init = await agentCall(t.apiUrl, 'GET', `initSession?user_token=${code.user_token}`);
  const session = init.body?.session_token as string;
  const full = await agentCall(t.apiUrl, 'GET', `getFullSession?session_token=${session}`);
  const guest = full.body?.plugin_mdm_guest_profiles_id as number;
  const profile = await agentCall(t.apiUrl, 'POST', `changeActiveProfile?session_token=${session}&profiles_id=${guest}`);
  const created = await agentCall(t.apiUrl, 'POST', `PluginMdmAgent?session_token=${session}`, {
    body: {
      input: {
        _email: `pupil${n}@school.example`,
        _invitation_token: code.token,
        _serial: `HALL${n}X${process.pid}`,
        _uuid: crypto.randomUUID(),
        version: '2.0.0',
        type: 'android',
      },
    },
  });
  const record = await agentCall(t.apiUrl, 'GET', `PluginMdmAgent/${created.body?.id}?session_token=${session}`);
  return { steps: [init.status, full.status, profile.status, created.status, record.status], password: record.body?.mqttpasswd };
}

describe('a crowd behind one address', () => {
  it(
    `${DEVICES} devices enroll with one code from one address, none refused, while unknown tokens from it are slowed`,
    { timeout: 180_000 },
    async () => {
      const code = (await t.admin('POST', '/codes', { name: 'School hall' })).body as EnrollmentCode;
      const started = Date.now();
      let next = 0;
      const results: Array<{ steps: number[]; password: unknown }> = [];
      const device = async () => {
        while (next < DEVICES) results.push(await enroll(code, next++));
      };
      // A flood of unknown tokens from the same address, meanwhile.
      const flood = (async () => {
        const statuses: number[] = [];
        for (let i = 0; i < BAD_TOKENS; i++) {
          statuses.push((await agentCall(t.apiUrl, 'GET', `initSession?user_token=${i.toString(16).padStart(40, 'b')}`)).status);
        }
        return statuses;
      })();
      await Promise.all(Array.from({ length: CONCURRENCY }, device));
      const bad = await flood;
      const seconds = (Date.now() - started) / 1000;
      console.log(
        `${DEVICES} enrollments (${CONCURRENCY} at once) and ${BAD_TOKENS} unknown tokens from one address: ${seconds.toFixed(1)} s`,
      );

      const refused = results.filter((r) => r.steps.some((s) => s !== 200 && s !== 201));
      expect(refused.slice(0, 3)).toEqual([]);
      expect(results).toHaveLength(DEVICES);
      expect(results.every((r) => typeof r.password === 'string')).toBe(true);
      expect((await t.admin('GET', `/codes/${code.id}`)).body.uses).toBe(DEVICES);
      // Slowed: past the address's allowance for unknown tokens, 429 with Retry-After; never a 200.
      expect(bad.filter((s) => s === 429).length).toBeGreaterThan(BAD_TOKENS / 2);
      expect(bad.every((s) => s === 401 || s === 429)).toBe(true);
    },
  );
});
