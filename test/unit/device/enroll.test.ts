// The simulator's enrollment sequence and CLI against a tiny fake agent API started here.
// It tests the client only: the real backend has its own API tests.
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { enrollSilently, runAgent } from '../../../src-main/device/agent.ts';
import { AgentApiError } from '../../../src-main/device/api-client.ts';
import { runAgentCommand } from '../../../src-main/device/cli.ts';
import { encodeDeeplinkData } from '../../../src-main/device/deeplink.ts';
import { simulateEnrollment } from '../../../src-main/device/simulate.ts';
import {
  checkAgentRecord,
  enrollDevice,
  mqttCredentialsOf,
  randomSerial,
  startAgentSession,
} from '../../../src-main/device/enroll.ts';
import type { AgentRecord } from '../../../src-main/device/api-client.ts';

const USER_TOKEN = 'user-token-abcdef0123456789';
const API_TOKEN = 'agent-api-token-9876543210';
const INVITATION = 'f'.repeat(64);
const EMAIL = 'alice@example.org';

interface Logged {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType: string | undefined;
  body: unknown;
}

const state = {
  activeProfile: 2 as number | string,
  guestProfile: 5 as number | string,
  nested: false,
  refuseSwitch: false,
  requests: [] as Logged[],
  record: {} as Record<string, unknown>,
};

let server: Server;
let baseUrl: string;

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://fake');
  let raw = '';
  for await (const chunk of req) raw += String(chunk);
  const body: unknown = raw === '' ? undefined : JSON.parse(raw);
  const query = Object.fromEntries(url.searchParams);
  const path = url.pathname.replace(/^\/api\//, '');
  state.requests.push({ method: req.method ?? '', path, query, contentType: req.headers['content-type'], body });

  if (path === 'initSession') {
    if (query['user_token'] === USER_TOKEN) return sendJson(res, 200, { session_token: 'S-user-0001' });
    if (query['user_token'] === API_TOKEN) return sendJson(res, 200, { session_token: 'S-agent-0002' });
    return sendJson(res, 401, ['ERROR_LOGIN', 'Incorrect username or password']);
  }
  if (!query['session_token']?.startsWith('S-'))
    return sendJson(res, 401, ['ERROR_SESSION_TOKEN_INVALID', 'session_token seems invalid']);

  if (path === 'getFullSession') {
    const fields = {
      core_plugins: { 0: 'mdm' },
      coreactiveprofile: { id: state.activeProfile, name: 'Self-Service' },
      plugin_mdm_guest_profiles_id: state.guestProfile,
      glpiname: EMAIL,
    };
    return sendJson(res, 200, state.nested ? { session: fields } : fields);
  }
  if (path === 'changeActiveProfile' && req.method === 'POST') {
    if (state.refuseSwitch || query['profiles_id'] !== String(state.guestProfile))
      return sendJson(res, 404, ['ERROR_ITEM_NOT_FOUND', 'Item not found']);
    state.activeProfile = state.guestProfile;
    res.writeHead(200);
    return void res.end();
  }
  if (path === 'PluginMdmAgent' && req.method === 'POST') {
    const input = (body as { input?: Record<string, unknown> } | undefined)?.input ?? {};
    if (input['_invitation_token'] !== INVITATION) return sendJson(res, 400, ['ERROR_CORE_ADD', 'Invitation token invalid']);
    if (input['_email'] !== EMAIL) return sendJson(res, 400, ['ERROR_CORE_ADD', 'Wrong email address']);
    state.record = { ...makeRecord(), name: String(input['_serial']), topic: `/1/agent/${String(input['_serial'])}` };
    return sendJson(res, 201, { id: '12', message: 'Agent created' });
  }
  if (path === 'PluginMdmAgent/12') return sendJson(res, 200, state.record);
  return sendJson(res, 404, ['ERROR_ITEM_NOT_FOUND', 'Item not found']);
}

function makeRecord(): AgentRecord {
  return {
    id: 12,
    name: 'device',
    version: '1.0.0',
    computers_id: 40,
    wipe: 0,
    lock: 0,
    enroll_status: 'enrolled',
    entities_id: 1,
    plugin_mdm_fleets_id: 3,
    last_report: null,
    last_contact: null,
    certificate: '',
    topic: '/1/agent/device',
    mqttpasswd: 'p'.repeat(32),
    api_token: API_TOKEN,
    broker: 'mdm.local',
    port: 8883,
    tls: 1,
    android_bugcollecctor_url: '',
    android_bugcollector_login: '',
    android_bugcollector_passwd: '',
    links: [{ rel: 'Computer', href: `${baseUrl}/Computer/40` }],
  };
}

beforeAll(async () => {
  server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => sendJson(res, 500, ['FAKE_ERROR', String(error)]));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
beforeEach(() => {
  Object.assign(state, { activeProfile: 2, guestProfile: 5, nested: false, refuseSwitch: false, requests: [], record: {} });
});

const deeplink = (): string =>
  `https://links.example.org/deeplink/?data=${encodeURIComponent(encodeDeeplinkData({ backendUrl: baseUrl, userToken: USER_TOKEN, invitationToken: INVITATION, helpdeskName: 'ACME IT' }))}`;

describe('enrollDevice', () => {
  it('performs the five steps and switches to the guest profile', async () => {
    const lines: string[] = [];
    const result = await enrollDevice(
      { deeplink: deeplink(), email: EMAIL, serial: 'R58N1234ABC', uuid: '1b4e28ba-2fa1-11d2-883f-0016d3cca427' },
      (line) => lines.push(line),
    );

    expect(lines).toEqual([
      `deeplink … ok (backend ${baseUrl}, csv format)`,
      '1/5 initSession … ok (session S-us…)',
      '2/5 getFullSession … ok (active profile 2, guest profile 5)',
      '3/5 changeActiveProfile 5 … ok (switched to the guest profile)',
      '4/5 POST PluginMdmAgent … ok (agent 12 — Agent created)',
      '5/5 GET PluginMdmAgent/12 … ok (enrolled, topic /1/agent/R58N1234ABC, broker mdm.local:8883)',
    ]);
    expect(result).toMatchObject({
      backendUrl: baseUrl,
      agentId: '12',
      apiToken: API_TOKEN,
      serial: 'R58N1234ABC',
      type: 'android',
      version: '1.0.0',
      switchedProfile: true,
      guestProfileId: 5,
      helpdesk: { name: 'ACME IT', phone: '', website: '', email: '' },
    });
    expect(JSON.stringify(result)).not.toContain(USER_TOKEN); // discarded after enrollment (spec §5)

    expect(state.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET initSession',
      'GET getFullSession',
      'POST changeActiveProfile',
      'POST PluginMdmAgent',
      'GET PluginMdmAgent/12',
    ]);
    for (const request of state.requests) expect(request.contentType).toBe('application/json');
    expect(state.requests[0]?.query).toEqual({ user_token: USER_TOKEN });
    expect(state.requests[2]?.query).toEqual({ profiles_id: '5', session_token: 'S-user-0001' });
    expect(state.requests[3]?.body).toEqual({
      input: {
        _email: EMAIL,
        _invitation_token: INVITATION,
        _serial: 'R58N1234ABC',
        _uuid: '1b4e28ba-2fa1-11d2-883f-0016d3cca427',
        csr: '',
        version: '1.0.0',
        type: 'android',
      },
    });
  });

  it('skips the switch when the guest profile is active, reading the `session` key and string ids', async () => {
    Object.assign(state, { activeProfile: '5', guestProfile: '5', nested: true });
    const lines: string[] = [];
    const result = await enrollDevice(
      { deeplink: deeplink(), email: EMAIL, type: 'apple', version: '2.3', firstname: 'Alice', lastname: 'Liddell' },
      (line) => lines.push(line),
    );
    expect(lines[3]).toBe('3/5 changeActiveProfile … skipped (profile 5 is already the guest profile)');
    expect(state.requests.map((r) => r.path)).not.toContain('changeActiveProfile');
    expect(result).toMatchObject({ switchedProfile: false, type: 'apple', version: '2.3' });
    expect(result.serial).toMatch(/^C02[0-9A-Z]{9}$/);
    expect(result.uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(state.requests[2]?.body).toMatchObject({ input: { firstname: 'Alice', lastname: 'Liddell', type: 'apple' } });
  });

  it('stops at a refused creation with the server code and message', async () => {
    const lines: string[] = [];
    const error = await enrollDevice({ deeplink: deeplink(), email: 'mallory@example.org' }, (line) => lines.push(line)).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AgentApiError);
    expect(error).toMatchObject({
      status: 400,
      code: 'ERROR_CORE_ADD',
      serverMessage: 'Wrong email address',
      endpoint: 'POST PluginMdmAgent',
    });
    expect(lines.at(-1)).toBe(
      '4/5 POST PluginMdmAgent … failed: ERROR_CORE_ADD: Wrong email address (HTTP 400 from POST PluginMdmAgent)',
    );
    expect(state.requests.map((r) => r.path)).not.toContain('PluginMdmAgent/12');
  });

  it('stops when the profile switch fails', async () => {
    state.refuseSwitch = true;
    const lines: string[] = [];
    const error = await enrollDevice({ deeplink: deeplink(), email: EMAIL }, (line) => lines.push(line)).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 404, code: 'ERROR_ITEM_NOT_FOUND', serverMessage: 'Item not found' });
    expect(lines.at(-1)).toBe(
      '3/5 changeActiveProfile 5 … failed: ERROR_ITEM_NOT_FOUND: Item not found (HTTP 404 from POST changeActiveProfile)',
    );
    expect(state.requests.map((r) => r.path)).toEqual(['initSession', 'getFullSession', 'changeActiveProfile']);
  });

  it('reports a bad user token and bad deeplink clearly', async () => {
    const badToken = `${baseUrl.replace(/\/api$/, '')}/deeplink/?data=${encodeURIComponent(encodeDeeplinkData({ backendUrl: baseUrl, userToken: 'nope', invitationToken: INVITATION }))}`;
    await expect(enrollDevice({ deeplink: badToken, email: EMAIL })).rejects.toMatchObject({
      status: 401,
      code: 'ERROR_LOGIN',
      endpoint: 'GET initSession',
    });
    const lines: string[] = [];
    await expect(enrollDevice({ deeplink: 'https://x/deeplink/?data=!!', email: EMAIL }, (l) => lines.push(l))).rejects.toThrow(
      /not base64/,
    );
    expect(lines[0]).toMatch(/^deeplink … failed: deeplink data is not base64/);
    await expect(enrollDevice({ deeplink: deeplink(), email: ' ' })).rejects.toThrow(/email address is required/);
  });

  it('opens a later session with the api_token', async () => {
    const result = await enrollSilently({ deeplink: deeplink(), email: EMAIL });
    const client = await startAgentSession(result.backendUrl, result.apiToken);
    expect(client.sessionToken).toBe('S-agent-0002');
    expect(state.requests.at(-1)?.query).toEqual({ user_token: API_TOKEN });
  });

  it('exposes the MQTT credentials and runs the after-enrollment hook', async () => {
    const seen: unknown[] = [];
    const run = await runAgent({
      deeplink: deeplink(),
      email: EMAIL,
      serial: 'R58ABCDEFGH',
      afterEnrollment: async (enrollment, mqtt) => {
        seen.push(enrollment.agentId, mqtt);
      },
    });
    const expected = {
      host: 'mdm.local',
      port: 8883,
      tls: true,
      username: 'R58ABCDEFGH',
      password: 'p'.repeat(32),
      topic: '/1/agent/R58ABCDEFGH',
    };
    expect(run.mqtt).toEqual(expected);
    expect(mqttCredentialsOf(run.enrollment)).toEqual(expected);
    expect(seen).toEqual(['12', expected]);
    expect(run).toMatchObject({ ok: true, downloads: [] });
  });
});

describe('simulateEnrollment (the console\'s "simulate a device")', () => {
  it('reports success and refusal as outcomes', async () => {
    const ok = await simulateEnrollment({
      deeplink: deeplink(),
      email: EMAIL,
      firstname: null,
      lastname: 'Liddell',
      type: 'apple',
    });
    expect(ok).toMatchObject({ ok: true, agent_id: 12, type: 'apple', error: null });
    expect(ok.serial).toMatch(/^C02/);
    expect(ok.log).toHaveLength(6);
    const refused = await simulateEnrollment({
      deeplink: deeplink(),
      email: 'eve@example.org',
      firstname: null,
      lastname: null,
      type: 'android',
    });
    expect(refused).toMatchObject({ ok: false, agent_id: null, serial: null, error: 'Wrong email address' });
    expect(refused.log.at(-1)).toMatch(/^4\/5 POST PluginMdmAgent … failed/);
  });
});

describe('agent record and serial helpers', () => {
  it('warns about fields that differ from the spec', () => {
    expect(checkAgentRecord(makeRecord())).toEqual([]);
    const record = { ...makeRecord(), port: '8883', enroll_status: 'pending' } as unknown as AgentRecord;
    delete (record as Record<string, unknown>)['links'];
    expect(checkAgentRecord(record)).toEqual([
      'agent record field port should be integer, got "8883"',
      'agent record field links should be array, got nothing',
      'enroll_status is pending, expected enrolled',
    ]);
  });

  it('makes realistic serials', () => {
    expect(randomSerial()).toMatch(/^R58[0-9A-Z]{8}$/);
    expect(randomSerial('apple')).toMatch(/^C02[0-9A-Z]{9}$/);
    expect(new Set(Array.from({ length: 50 }, () => randomSerial())).size).toBe(50);
  });
});

// This fake serves the REST API only, no broker: the runs below enroll with --no-mqtt.
describe('runAgentCommand', () => {
  const run = async (argv: string[]) => {
    const stdout: string[] = [];
    const stderr: string[] = [];
    const code = await runAgentCommand(argv, { stdout: (l) => stdout.push(l), stderr: (l) => stderr.push(l) });
    return { code, stdout: stdout.join('\n'), stderr: stderr.join('\n') };
  };

  it('enrolls and prints one JSON object with --json', async () => {
    const { code, stdout, stderr } = await run([
      '--deeplink',
      deeplink(),
      '--email',
      EMAIL,
      '--serial',
      'R58JSON0001',
      '--json',
      '--no-mqtt',
    ]);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    const output = JSON.parse(stdout) as {
      ok: boolean;
      enrollment: { apiToken: string; agent: { mqttpasswd: string } };
      mqtt: { username: string };
    };
    expect(output.ok).toBe(true);
    expect(output.enrollment.apiToken).toBe(API_TOKEN);
    expect(output.mqtt.username).toBe('R58JSON0001');
  });

  it('prints progress lines and a summary without secrets', async () => {
    const { code, stdout } = await run(['--deeplink', deeplink(), '--email', EMAIL, '--serial', 'R58HUMAN001', '--no-mqtt']);
    expect(code).toBe(0);
    expect(stdout).toContain('4/5 POST PluginMdmAgent … ok (agent 12 — Agent created)');
    expect(stdout).toContain('enrolled: agent 12 (R58HUMAN001), android 1.0.0');
    expect(stdout).toContain('helpdesk ACME IT');
    expect(stdout).not.toContain(API_TOKEN);
    expect(stdout).not.toContain('p'.repeat(32));
  });

  it('requires --deeplink and --email, and checks --type and --download before any request', async () => {
    expect(await run(['--email', EMAIL])).toMatchObject({ code: 2, stderr: expect.stringContaining('--deeplink is required') });
    expect(await run(['--deeplink', deeplink()])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--email is required: the deeplink does not carry the invited address'),
    });
    expect(await run(['--deeplink', deeplink(), '--email', EMAIL, '--type', 'windows'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--type must be android or apple'),
    });
    expect(await run(['--deeplink', deeplink(), '--email', EMAIL, '--download', 'file:x'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('file:ID or package:ID'),
    });
    expect(await run(['--deeplink', deeplink(), '--email', EMAIL, '--bogus'])).toMatchObject({ code: 2 });
    expect(state.requests).toEqual([]);
    expect(await run(['--help'])).toMatchObject({ code: 0, stdout: expect.stringContaining('usage: mdm-console agent') });
  });

  it('prints the server code and message and exits non-zero', async () => {
    const human = await run(['--deeplink', deeplink(), '--email', 'bob@example.org']);
    expect(human.code).toBe(1);
    expect(human.stderr).toBe('error: ERROR_CORE_ADD: Wrong email address (HTTP 400 from POST PluginMdmAgent)');
    const json = await run(['--deeplink', deeplink(), '--email', 'bob@example.org', '--json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toEqual({
      ok: false,
      error: { status: 400, code: 'ERROR_CORE_ADD', message: 'Wrong email address', endpoint: 'POST PluginMdmAgent' },
    });
  });

  it('downloads after enrollment with a new api_token session', async () => {
    const { code, stderr } = await run(['--deeplink', deeplink(), '--email', EMAIL, '--download', 'package:77', '--no-mqtt']);
    expect(code).toBe(1); // this fake serves no packages
    expect(stderr).toBe('error: ERROR_ITEM_NOT_FOUND: Item not found (HTTP 404 from GET PluginMdmPackage/77)');
    expect(state.requests.slice(-2).map((r) => [r.path, r.query])).toEqual([
      ['initSession', { user_token: API_TOKEN }],
      ['PluginMdmPackage/77', { session_token: 'S-agent-0002' }],
    ]);
  });

  it('explains a bad deeplink', async () => {
    const { code, stderr } = await run(['--deeplink', 'https://x/deeplink/', '--email', EMAIL]);
    expect(code).toBe(1);
    expect(stderr).toBe('error: bad deeplink: deeplink URL has no ?data= parameter: https://x/deeplink/');
  });
});
