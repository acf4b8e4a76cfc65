// Issue 23, item 4: three nodes behind haproxy behave as one server (scripts/cluster.ts: PostgreSQL,
// Mosquitto, haproxy). The console on node A sees, live, the device rows of enrollments node C
// served; a policy set on node B reaches real MQTT agents and their task reports (over MQTT and over
// REST through the balancer) show on every node; a file stored through one node downloads through
// every node; sign-in links, console sessions, the sign-in throttle and the agent API's rate limits
// hold across nodes (a limit of 10 is 10 in all, not 10 per node).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AgentApiClient,
  decodeDeeplink,
  encodeDeeplinkData,
  enrollDevice,
  startDevice,
  type SimulatedDevice,
} from '../../src-main/device/index.ts';
import type { ClusterNode } from '../../scripts/cluster.ts';
import { startTestCluster, type TestCluster } from '../helpers/cluster.ts';
import { eventually } from '../helpers/mqtt.ts';

let cluster: TestCluster;
let A: ClusterNode, B: ClusterNode, C: ClusterNode;
let codeDeeplink: string;
const devices: SimulatedDevice[] = [];
const OWNER = 'owner@example.com';
const PASSWORD = 'a long owner password, never guessed';

const serverJson = (node: ClusterNode) =>
  JSON.parse(readFileSync(join(node.dataDir, 'server.json'), 'utf8')) as { setup_url: string | null; console_url: string };

/** A deeplink whose REST address is one node's own (not the balancer's): that node serves the enrollment. */
const viaNode = (deeplink: string, node: ClusterNode) => {
  const data = decodeDeeplink(deeplink);
  return encodeDeeplinkData({ ...data, backendUrl: `${node.agentUrl}/api` });
};

/** The events one node's admin event stream (SSE) delivers, as they come. */
function followStream(node: ClusterNode) {
  const controller = new AbortController();
  const seen: { type: string; data: any }[] = [];
  const ready = (async () => {
    const response = await fetch(`${node.adminUrl}/api/events/stream`, {
      headers: { authorization: `Bearer ${cluster.adminToken}` },
      signal: controller.signal,
    });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    void (async () => {
      const decoder = new TextDecoder();
      let buffer = '';
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          buffer += decoder.decode(value, { stream: true });
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const frame = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const type = /^event: (.*)$/m.exec(frame)?.[1];
            const data = /^data: (.*)$/m.exec(frame)?.[1];
            if (type && data) seen.push({ type, data: JSON.parse(data) });
          }
        }
      } catch {
        // aborted
      }
    })();
  })();
  return { seen, ready, close: () => controller.abort() };
}

const signIn = (url: string, email: string, password: string) =>
  fetch(`${url}/auth/password`, {
    method: 'POST',
    headers: { 'sec-fetch-site': 'same-origin', 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
const cookieOf = (response: Response) => /mdm_console=([^;]*)/.exec(response.headers.get('set-cookie') ?? '')?.[1];
const me = (node: ClusterNode, cookie: string) =>
  fetch(`${node.adminUrl}/api/me`, { headers: { cookie: `mdm_console=${cookie}`, 'sec-fetch-site': 'same-origin' } });

beforeAll(async () => {
  // MDM_CLUSTER_NODES=1: the same tests on one node (A, B and C the same), as a control.
  cluster = await startTestCluster({ label: 'one', nodes: Number(process.env.MDM_CLUSTER_NODES ?? 3) });
  [A, B, C] = [0, 1, 2].map((i) => cluster.nodes[i % cluster.nodes.length]!) as [ClusterNode, ClusterNode, ClusterNode];
  const code = await cluster.admin('POST', '/codes', { name: 'Front desk phones' }, B);
  expect(code.status).toBe(201);
  codeDeeplink = code.body.deeplink;
  // The owner chooses a password through node 1's one-time set-up link.
  const token = new URL(serverJson(A).setup_url!).searchParams.get('token');
  const setup = await fetch(`${A.adminUrl}/auth/setup`, {
    method: 'POST',
    headers: { 'sec-fetch-site': 'same-origin', 'content-type': 'application/json' },
    body: JSON.stringify({ token, email: OWNER, display_name: 'Owner', password: PASSWORD }),
  });
  expect(setup.status).toBe(200);
}, 180_000);

afterAll(async () => {
  await Promise.all(devices.map((device) => device.stop()));
  await cluster?.destroy();
});

describe('three nodes behind haproxy, as one server', () => {
  it('shows the console on node A, live, the device rows of enrollments node C served', async () => {
    const stream = followStream(A);
    await stream.ready;
    const served: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      const enrolled = await enrollDevice({ deeplink: viaNode(codeDeeplink, C), email: `c${i}@example.com` });
      served.push(enrolled.serial);
    }
    try {
      await eventually(
        () =>
          served.every((serial) =>
            stream.seen.some((event) => event.type === 'agent.enrolled' && event.data.agent?.serial === serial),
          ),
        15_000,
      );
    } finally {
      stream.close();
    }
  }, 60_000);

  it('carries a policy set on node B to real MQTT agents, and their reports (MQTT and REST) to every node', async () => {
    const fleet = await cluster.admin('POST', '/fleets', { name: 'Lobby' }, B);
    expect(fleet.status).toBe(201);
    const code = await cluster.admin('POST', '/codes', { name: 'Lobby tablets', fleet: 'Lobby' }, B);
    for (const reports of ['mqtt', 'mqtt', 'http'] as const) {
      devices.push(
        await startDevice({
          deeplink: code.body.deeplink,
          email: `lobby-${devices.length}@example.com`,
          reports,
          mqtt: { backoff: { initialMs: 100, maxMs: 1000 } },
        }),
      );
    }
    const set = await cluster.admin('POST', '/policy-assignments', { policy: 'disableCamera', value: true, fleet: 'Lobby' }, B);
    expect(set.status, JSON.stringify(set.body)).toBe(201);
    for (const node of cluster.nodes) {
      let last: unknown;
      await eventually(async () => {
        const status = await cluster.admin('GET', `/deployments/${set.body.id}`, undefined, node);
        last = status.body;
        return status.body.total === 3 && status.body.done === 3;
      }, 30_000).catch((error: unknown) => {
        throw new Error(`${node.name}: ${JSON.stringify(last)} (${(error as Error).message})`);
      });
    }
    // Each device holds the policy it was told.
    for (const device of devices) expect(device.policies.state.settings.disableCamera?.value).toBe(true);
  }, 120_000);

  it('serves a file stored through node B from every node', async () => {
    const bytes = Buffer.from('price list\n'.repeat(500));
    const upload = await fetch(`${B.adminUrl}/api/files?name=prices.txt`, {
      method: 'POST',
      headers: { authorization: `Bearer ${cluster.adminToken}`, 'content-type': 'application/octet-stream' },
      body: bytes,
    });
    expect(upload.status).toBe(201);
    const file = (await upload.json()) as { id: number };
    const device = devices[0]!.enrollment;
    for (const node of cluster.nodes) {
      const client = new AgentApiClient(`${node.agentUrl}/api`);
      await client.initSession(device.apiToken);
      const response = await fetch(`${node.agentUrl}/api/PluginMdmFile/${file.id}`, {
        headers: { 'session-token': client.sessionToken!, accept: 'application/octet-stream' },
      });
      expect(`${node.name}: ${response.status}`).toBe(`${node.name}: 200`);
      expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true);
    }
  }, 60_000);

  it('opens a sign-in link made by node A on node B, and a console session works on every node', async () => {
    const link = new URL(serverJson(A).console_url);
    const opened = await fetch(`${B.adminUrl}/auth${link.search}`, { redirect: 'manual' });
    expect(opened.status).toBe(302);
    const cookie = cookieOf(opened);
    expect(cookie, `node B refused node A's ticket (redirected to ${opened.headers.get('location')})`).toBeDefined();
    for (const node of cluster.nodes) expect((await me(node, cookie!)).status).toBe(200);
  }, 30_000);

  it('signs in with a password through the balancer into a session every node knows', async () => {
    const answer = await signIn(cluster.adminUrl, OWNER, PASSWORD);
    expect(answer.status).toBe(200);
    const cookie = cookieOf(answer)!;
    for (const node of cluster.nodes) expect((await me(node, cookie)).status).toBe(200);
    // Signed out on one node: over on all.
    const out = await fetch(`${C.adminUrl}/auth/sign-out`, {
      method: 'POST',
      headers: { cookie: `mdm_console=${cookie}`, 'sec-fetch-site': 'same-origin' },
    });
    expect(out.status).toBe(200);
    for (const node of cluster.nodes) expect((await me(node, cookie)).status).toBe(401);
  }, 30_000);

  it("limits initSession with one person's token to 10 at once in all, whichever node answers", async () => {
    const invitation = await cluster.admin('POST', '/invitations', { email: 'rate@example.com', send_email: false });
    const { userToken } = decodeDeeplink(invitation.body.deeplink);
    const statuses: number[] = [];
    for (let i = 0; i < 15; i += 1) {
      const response = await fetch(`${cluster.agentUrl}/api/initSession`, {
        headers: { authorization: `user_token ${userToken}` },
      });
      statuses.push(response.status);
    }
    const passed = statuses.filter((status) => status === 200).length;
    // A burst of 10, and at most one more refilled meanwhile (10 a minute).
    expect(passed, statuses.join(',')).toBeGreaterThanOrEqual(10);
    expect(passed, statuses.join(',')).toBeLessThanOrEqual(11);
    expect(statuses.filter((status) => status === 429).length).toBe(15 - passed);
  }, 30_000);

  it('throttles wrong passwords after 10 in all through the balancer, not 10 per node', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 14; i += 1) statuses.push((await signIn(cluster.adminUrl, `nobody${i}@example.org`, 'guess')).status);
    expect(statuses).toEqual([...Array<number>(10).fill(401), 429, 429, 429, 429]);
  }, 30_000);
});
