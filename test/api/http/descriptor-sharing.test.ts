/**
 * The socket plan shares the descriptors by need (http/socket-limits.ts): the embedded broker may
 * hold more than half of them, all but the HTTP listeners' reserves, and the admin side and an
 * enrolling device still get in. Before, the broker had a fixed half (at 512: 128 agents).
 * The server runs in its own process under `ulimit -n 512`.
 */
import mqtt, { type MqttClient } from 'mqtt';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planSockets } from '../../../src-main/backend/http/socket-limits.ts';
import { agentCall, enrollByHand } from '../../helpers/backend.ts';
import { startChildBackend, type ChildBackend } from '../../helpers/child-backend.ts';

const FD_LIMIT = 512;
const plan = planSockets(FD_LIMIT);
let server: ChildBackend;
const clients: MqttClient[] = [];
let credentials: { username: string; password: string }[] = [];

beforeAll(async () => {
  server = await startChildBackend({}, `ulimit -n ${FD_LIMIT} &&`);
});

afterAll(async () => {
  await Promise.all(clients.map((client) => client.endAsync(true)));
  await server?.stop();
});

type Invitation = { user_token: string; invitation_token: string; email: string };

async function invite(count: number, prefix: string): Promise<Invitation[]> {
  const rows = Array.from({ length: count }, (_, i) => ({ email: `${prefix}${i}@fd.example` }));
  const created = await fetch(`${server.info.admin_url}/api/invitations/bulk`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.info.admin_token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ invitations: rows, send_email: false }),
  });
  expect(created.status).toBe(201);
  return ((await created.json()) as { items: Invitation[] }).items;
}

/** Enrolls a device by the spec's five requests; its MQTT credentials. */
async function enroll(invitation: Invitation, serial: string): Promise<{ username: string; password: string }> {
  const { session, created } = await enrollByHand(server.info.api_url, invitation, { serial });
  expect(created.status).toBe(201);
  const record = await agentCall(server.info.api_url, 'GET', `PluginMdmAgent/${created.body.id}?session_token=${session}`);
  expect(record.status).toBe(200);
  return { username: serial, password: record.body.mqttpasswd as string };
}

/** A logged-in MQTT client, or null when the broker closed the connection before its CONNACK. */
function login(credentials: { username: string; password: string }): Promise<MqttClient | null> {
  return new Promise((resolve) => {
    const client = mqtt.connect({
      host: '127.0.0.1',
      port: server.info.mqtt_port,
      ...credentials,
      reconnectPeriod: 0,
      connectTimeout: 10_000,
    });
    client.once('connect', () => resolve(client));
    const refused = () => {
      client.end(true);
      resolve(null);
    };
    client.once('error', refused);
    client.once('close', refused);
  });
}

async function inBatches<T, R>(items: T[], size: number, each: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += size)
    results.push(...(await Promise.all(items.slice(i, i + size).map((item, j) => each(item, i + j)))));
  return results;
}

describe(`descriptors shared by need under ulimit -n ${FD_LIMIT}`, () => {
  it(
    'the broker holds more than half the descriptors, every one but the HTTP reserves; an admin and a new enrollment still get in',
    { timeout: 120_000 },
    async () => {
      const extra = 10;
      const devices = plan.mqttConnections + extra;
      const invitations = await invite(devices, 'held');
      credentials = await inBatches(invitations, 8, (invitation, i) => enroll(invitation, `FD${String(i).padStart(5, '0')}`));
      // Logged in one batch at a time (16 at once): each holds its connection.
      const logins = await inBatches(credentials, 16, (device) => login(device));
      for (const client of logins) if (client) clients.push(client);
      await new Promise((resolve) => setTimeout(resolve, 500)); // any late close arrives
      const held = clients.filter((client) => client.connected).length;
      // More than half of the limit, where the fixed half gave (512 - 256) / 2 = 128.
      expect(held).toBeGreaterThan(FD_LIMIT / 2);
      // Everything but the reserves: the devices past it were refused, none of those held was closed.
      expect(held).toBe(plan.mqttConnections);
      expect(logins.filter((client) => client === null).length).toBe(extra);

      // The HTTP listeners keep their reserves: an admin call and a whole enrollment on new connections.
      const status = await fetch(`${server.info.admin_url}/api/status`, {
        headers: { authorization: `Bearer ${server.info.admin_token}`, connection: 'close' },
      });
      expect(status.status).toBe(200);
      const [newcomer] = await invite(1, 'late');
      const late = await enroll(newcomer!, 'FDLATE'); // 201 and its record: the enrollment went through

      // The broker has nothing left: the newcomer waits until a device leaves, then gets in.
      expect(await login(late)).toBeNull();
      await clients.pop()!.endAsync(true);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const client = await login(late);
      expect(client?.connected).toBe(true);
      clients.push(client!);
    },
  );

  it(
    'by need both ways: HTTP connections beyond their reserve are descriptors the broker does not get, until they close',
    { timeout: 120_000 },
    async () => {
      await Promise.all(clients.splice(0).map((client) => client.endAsync(true)));
      await new Promise((resolve) => setTimeout(resolve, 500));
      // Idle keep-alive connections on the agent listener, from 4 addresses (each under its per-address cap).
      const beyond = 30;
      const idle = await Promise.all(
        Array.from({ length: plan.reserves.agent + beyond }, (_, i) => openIdle(server.info.api_url, `127.0.9.${(i % 4) + 2}`)),
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(idle.filter((socket) => !socket.destroyed).length).toBe(plan.reserves.agent + beyond);
      const logins = await inBatches(credentials, 16, (device) => login(device));
      for (const client of logins) if (client) clients.push(client);
      // At most all but the reserves less what HTTP holds beyond its own (the enrollments' kept-alive
      // connections may still hold a few more).
      const held = clients.length;
      expect(held).toBeLessThanOrEqual(plan.mqttConnections - beyond);
      expect(held).toBeGreaterThan(FD_LIMIT / 2);
      // HTTP gives them back: the devices refused now get in, at least as many as were beyond.
      for (const socket of idle) socket.destroy();
      await new Promise((resolve) => setTimeout(resolve, 500));
      const refused = credentials.filter((_, i) => logins[i] === null);
      const again = await inBatches(refused, 16, (device) => login(device));
      for (const client of again) if (client) clients.push(client);
      expect(clients.length).toBeGreaterThanOrEqual(held + beyond);
      expect(clients.length).toBeLessThanOrEqual(plan.mqttConnections);
    },
  );
});

/** A connection that sent nothing yet, from `localAddress`; resolves once connected. */
function openIdle(url: string, localAddress: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port), localAddress });
    socket.on('error', () => {});
    socket.once('connect', () => resolve(socket));
    socket.once('close', () => resolve(socket));
  });
}
