/**
 * Slow, unauthenticated connections must not starve the server of file descriptors. The server
 * runs in its own process under `ulimit -n 1024`; floods come from other loopback addresses
 * (127.0.0.2 …), the legitimate requests from 127.0.0.1.
 */
import { get as httpGet } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planSockets } from '../../../src-main/backend/http/socket-limits.ts';
import { agentCall, enrollByHand } from '../../helpers/backend.ts';
import { startChildBackend, type ChildBackend } from '../../helpers/child-backend.ts';
import mqtt, { type MqttClient } from 'mqtt';
import { adminClient } from '../../../src-shared/contract/admin-client.ts';

const FD_LIMIT = 1024;
const plan = planSockets(FD_LIMIT);
let server: ChildBackend;
let session: string;

beforeAll(async () => {
  server = await startChildBackend({}, `ulimit -n ${FD_LIMIT} &&`);
  const admin = adminClient({ baseUrl: server.info.admin_url, token: server.info.admin_token });
  const userToken = (await admin.invitations.create({ body: { email: 'legit@example.com', send_email: false } })).user_token;
  // One session, then its reads: initSession itself is rate-limited per token.
  const init = await fetch(`${server.info.api_url}/initSession?user_token=${userToken}`, {
    headers: { 'content-type': 'application/json' },
  });
  session = ((await init.json()) as { session_token: string }).session_token;
});

afterAll(async () => {
  await server?.stop();
});

type Slow = { socket: Socket; state: 'open' | 'refused' | 'closed' };

/** A connection that sends half its headers and then nothing, from `localAddress`. */
function slowConnection(url: string, localAddress: string): Promise<Slow> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const slow: Slow = { socket: connect({ host: hostname, port: Number(port), localAddress }), state: 'open' };
    slow.socket.on('error', () => {});
    slow.socket.once('connect', () => {
      slow.socket.write('GET /api/initSession HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      resolve(slow);
    });
    slow.socket.on('data', (data) => {
      if (/^HTTP\/1\.1 503/.test(String(data))) slow.state = 'refused';
    });
    slow.socket.once('close', () => {
      if (slow.state === 'open') slow.state = 'closed';
      resolve(slow);
    });
  });
}

async function flood(count: number, addresses: string[]): Promise<Slow[]> {
  const all: Slow[] = [];
  for (let i = 0; i < count; i += 100) {
    all.push(
      ...(await Promise.all(
        Array.from({ length: Math.min(100, count - i) }, (_, j) =>
          slowConnection(server.info.api_url, addresses[(i + j) % addresses.length]!),
        ),
      )),
    );
  }
  await new Promise((resolve) => setTimeout(resolve, 1500)); // refusals arrive, refused sockets close
  return all;
}

const legitimate = async () => {
  const results: number[] = [];
  for (let i = 0; i < 10; i++) {
    const agent = await fetch(`${server.info.api_url}/getFullSession?session_token=${session}`, {
      headers: { 'content-type': 'application/json' },
    }).then(
      (r) => r.status,
      () => 0,
    );
    const admin = await fetch(`${server.info.admin_url}/api/status`, {
      headers: { authorization: `Bearer ${server.info.admin_token}` },
    }).then(
      (r) => r.status,
      () => 0,
    );
    results.push(agent, admin);
  }
  return results;
};

/** The status of a GET made on a new connection (0: refused or closed), from `localAddress` when given. */
function freshConnectionStatus(url: string, localAddress?: string): Promise<number> {
  return new Promise((resolve) => {
    const options = { agent: false, headers: { 'content-type': 'application/json' }, ...(localAddress && { localAddress }) };
    const request = httpGet(url, options, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    request.on('error', () => resolve(0));
    request.setTimeout(10_000, () => request.destroy());
  });
}

describe('socket caps under ulimit -n 1024', () => {
  it('plans descriptors: admin headroom, an agent share, a per-address part of it', () => {
    expect(plan.adminConnections).toBe(128);
    // Shared by need (test/unit/http/socket-plan.test.ts): the broker's most and the HTTP reserves fit the limit.
    expect(plan.mqttConnections + plan.reserves.admin + plan.reserves.agent + plan.reserves.downloads).toBeLessThan(
      FD_LIMIT - 64,
    );
    expect(plan.agentConnections + plan.agentDownloads + plan.adminConnections).toBeLessThan(FD_LIMIT - 64);
    expect(plan.agentConnectionsPerAddress).toBeLessThan(plan.agentConnections);
    expect(planSockets(1_048_576).agentConnections).toBe(10_000);
  });

  it(
    '1,100 slow connections from one address: that address keeps its share, its oldest closed for the newest; 20 of 20 legitimate requests succeed',
    { timeout: 60_000 },
    async () => {
      const slow = await flood(1100, ['127.0.0.2']);
      const open = slow.filter((s) => s.state === 'open').length;
      expect(open).toBe(plan.agentConnectionsPerAddress);
      // The newest hold the places: each newcomer closed the oldest connection still sending its request.
      expect(slow.slice(-plan.agentConnectionsPerAddress).every((s) => s.state === 'open')).toBe(true);
      const results = await legitimate();
      expect(results).toEqual(Array(20).fill(200));
      for (const s of slow) s.socket.destroy();
    },
  );

  it(
    'while 3,000 slow connections from one address are held, legitimate requests from that same address succeed (20 of 20)',
    { timeout: 60_000 },
    async () => {
      // Before: every place of the address was held, and its newcomers got 503 (0 of 20).
      const crowd = '127.0.3.2';
      const slow = await flood(3000, [crowd]);
      expect(slow.filter((s) => s.state === 'open').length).toBe(plan.agentConnectionsPerAddress);
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++)
        statuses.push(await freshConnectionStatus(`${server.info.api_url}/getFullSession?session_token=${session}`, crowd));
      expect(statuses).toEqual(Array(20).fill(200));
      for (const s of slow) s.socket.destroy();
    },
  );

  it(
    '1,100 slow connections from many addresses fill the agent listener only: the admin side still answers, and the agent side recovers',
    { timeout: 60_000 },
    async () => {
      const addresses = Array.from({ length: 20 }, (_, i) => `127.0.0.${i + 2}`);
      const slow = await flood(1100, addresses);
      // the listener's cap, less the few kept-alive connections of the legitimate client
      const open = slow.filter((s) => s.state === 'open').length;
      expect(open).toBeLessThanOrEqual(plan.agentConnections);
      expect(open).toBeGreaterThan(plan.agentConnections - 5);
      for (let i = 0; i < 10; i++) {
        const admin = await fetch(`${server.info.admin_url}/api/status`, {
          headers: { authorization: `Bearer ${server.info.admin_token}` },
        });
        expect(admin.status).toBe(200);
      }
      for (const s of slow) s.socket.destroy();
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await legitimate()).toEqual(Array(20).fill(200));
    },
  );

  it(
    'a few hosts under the per-address cap fill the agent listener: a device from another address still gets in',
    { timeout: 60_000 },
    async () => {
      // A few hosts, each a little under its cap (at 1024: 5 × 73, under 77): before, they held every place.
      const each = plan.agentConnectionsPerAddress - 4;
      const hosts = Math.ceil((plan.agentConnections + 20) / each);
      const addresses = Array.from({ length: hosts }, (_, i) => `127.0.1.${i + 2}`);
      const slow = await flood(hosts * each, addresses);
      expect(slow.filter((s) => s.state === 'open').length).toBeGreaterThan(plan.agentConnections - 5);
      // The greediest host's oldest connection makes room for a newcomer from 127.0.0.1, each on a
      // connection of its own (fetch would reuse one opened before the flood).
      const statuses: number[] = [];
      for (let i = 0; i < 10; i++)
        statuses.push(await freshConnectionStatus(`${server.info.api_url}/getFullSession?session_token=${session}`));
      expect(statuses).toEqual(Array(10).fill(200));
      const stillOpen = slow.filter((s) => !s.socket.destroyed && s.state === 'open').length;
      expect(stillOpen).toBeLessThanOrEqual(plan.agentConnections - 1);
      for (const s of slow) s.socket.destroy();
    },
  );
});

describe('the MQTT listener under ulimit -n 1024', () => {
  it(
    'sockets that never log in cannot hold it: a device still logs in, and one already logged in stays connected',
    { timeout: 60_000 },
    async () => {
      const device = async (email: string) => {
        const invited = await adminClient({ baseUrl: server.info.admin_url, token: server.info.admin_token }).invitations.create({
          body: {
            email,
            send_email: false,
          },
        });
        const serial = `CAP${Math.random().toString(36).slice(2, 10).toUpperCase()}`;
        const { session: enrolling, created } = await enrollByHand(server.info.api_url, { ...invited, email }, { serial });
        const record = await agentCall(
          server.info.api_url,
          'GET',
          `PluginMdmAgent/${created.body.id}?session_token=${enrolling}`,
        );
        return { username: serial, password: record.body.mqttpasswd as string };
      };
      const login = (credentials: { username: string; password: string }) =>
        new Promise<MqttClient>((resolve, reject) => {
          const client = mqtt.connect({
            host: '127.0.0.1',
            port: server.info.mqtt_port,
            ...credentials,
            reconnectPeriod: 0,
            connectTimeout: 10_000,
          });
          client.once('connect', () => resolve(client));
          client.once('error', reject);
          client.once('close', () => reject(new Error('closed before CONNACK')));
        });
      const early = await login(await device('mqtt-early@example.com'));
      const late = await device('mqtt-late@example.com');

      // More idle sockets than the broker's share (plan.mqttConnections), each never sending a CONNECT.
      const idle = await Promise.all(
        Array.from(
          { length: plan.mqttConnections + 50 },
          () =>
            new Promise<Socket>((resolve) => {
              const socket = connect({ host: '127.0.0.1', port: server.info.mqtt_port, localAddress: '127.0.2.2' });
              socket.on('error', () => {});
              socket.once('connect', () => resolve(socket));
              socket.once('close', () => resolve(socket));
            }),
        ),
      );
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(idle.filter((s) => !s.destroyed).length).toBeGreaterThan(plan.mqttConnections / 2); // they do fill it

      const client = await login(late);
      expect(client.connected).toBe(true);
      expect(early.connected).toBe(true);
      await Promise.all([client.endAsync(true), early.endAsync(true)]);
      for (const s of idle) s.destroy();
    },
  );
});

describe('the admin listener', () => {
  it('answers only to loopback names (no DNS rebinding)', async () => {
    const { port } = new URL(server.info.admin_url);
    const raw = (host: string) =>
      new Promise<string>((resolve) => {
        const socket = connect(Number(port), '127.0.0.1', () =>
          socket.write(
            `GET /api/status HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${server.info.admin_token}\r\nConnection: close\r\n\r\n`,
          ),
        );
        let text = '';
        socket.on('data', (d) => (text += d));
        socket.on('close', () => resolve(text));
      });
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, 'localhost', `[::1]:${port}`])
      expect(await raw(host)).toMatch(/^HTTP\/1\.1 200/);
    const refused = await raw(`rebind.example:${port}`);
    expect(refused).toMatch(/^HTTP\/1\.1 403/);
    expect(refused).toContain('ERROR_HOST_NOT_ALLOWED');
  });

  it('closes a body-dripping connection once it has answered 401', { timeout: 20_000 }, async () => {
    const { port } = new URL(server.info.admin_url);
    const socket = connect(Number(port), '127.0.0.1');
    socket.write(
      `POST /api/invitations HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"email":`,
    );
    const drip = setInterval(() => socket.writable && socket.write(' '), 200);
    const outcome = await new Promise<{ text: string; closed: boolean }>((resolve) => {
      let text = '';
      socket.on('data', (d) => (text += d));
      socket.on('error', () => {});
      socket.on('close', () => resolve({ text, closed: true }));
      setTimeout(() => resolve({ text, closed: false }), 10_000);
    });
    clearInterval(drip);
    socket.destroy();
    expect(outcome.text).toMatch(/^HTTP\/1\.1 401/);
    expect(outcome.text).toMatch(/connection: close/i);
    expect(outcome.closed).toBe(true);
  });
});
