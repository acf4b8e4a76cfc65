// Issue 23, item 4: 1,000 devices enroll through the balancer of a three-node cluster (PostgreSQL,
// Mosquitto, haproxy; scripts/cluster.ts) while one node is killed with `kill -9` and started
// again. Each device is the device simulator's wire code (enrollDevice: initSession,
// getFullSession, changeActiveProfile, POST PluginMdmAgent, GET PluginMdmAgent/<id>); a device
// whose request was lost (a 502 from the balancer, a reset connection) starts its enrollment again
// with the same serial and uuid, as a phone's agent would. Then: every enrollment that got its 201
// is intact (the same agent id at the end, its own token opens a session and reads its record, its
// MQTT password logs in to Mosquitto), every device is enrolled once, nothing is half made (no
// computer, agent account or broker login without its agent, no agent without its password or its
// broker login), and every foreign key of the database holds.
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AgentApiError,
  enrollDevice,
  mqttCredentialsOf,
  randomSerial,
  startAgentSession,
  type EnrollmentResult,
} from '../../src-main/device/index.ts';
import { clusterLogs, startTestCluster, type TestCluster } from '../helpers/cluster.ts';

const DEVICES = Number(process.env.MDM_CLUSTER_DEVICES ?? 1000);
const CONCURRENCY = 24;

let cluster: TestCluster;
let deeplink: string;

interface Device {
  serial: string;
  uuid: string;
  /** The agent id of every 201 this device received (its retries included). */
  created: number[];
  attempts: number;
  /** Why each failed attempt failed. */
  failures: string[];
  result?: EnrollmentResult;
}
const devices: Device[] = [];

/** A lost request: no answer, or the balancer's 502/503/504 for a node that died under it. */
const lost = (error: unknown) =>
  !(error instanceof AgentApiError) || error.status === 0 || error.status === 502 || error.status === 503 || error.status === 504;

async function enroll(device: Device): Promise<void> {
  for (;;) {
    device.attempts += 1;
    try {
      device.result = await enrollDevice(
        {
          deeplink,
          email: `${device.serial.toLowerCase()}@example.com`,
          serial: device.serial,
          uuid: device.uuid,
          timeoutMs: 20_000,
        },
        (line) => {
          const created = /^4\/5 POST \S+ … ok \(agent (\d+)/.exec(line);
          if (created) device.created.push(Number(created[1]));
        },
      );
      return;
    } catch (error) {
      device.failures.push(error instanceof Error ? error.message : String(error));
      if (!lost(error) || device.attempts >= 10) throw error;
      await new Promise((done) => setTimeout(done, 200 * device.attempts));
    }
  }
}

async function pool<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

beforeAll(async () => {
  cluster = await startTestCluster({ label: 'enroll', nodes: Number(process.env.MDM_CLUSTER_NODES ?? 3) });
  const code = await cluster.admin('POST', '/codes', { name: 'Warehouse scanners' });
  expect(code.status, JSON.stringify(code.body)).toBe(201);
  deeplink = code.body.deeplink;
  for (let i = 0; i < DEVICES; i += 1)
    devices.push({ serial: randomSerial(), uuid: crypto.randomUUID(), created: [], attempts: 0, failures: [] });
}, 120_000);

afterAll(async () => {
  await cluster?.destroy();
});

describe('a three-node cluster behind haproxy', () => {
  it(`enrolls ${DEVICES} devices while one node is killed with kill -9 and started again`, async () => {
    const victim = cluster.nodes[1] ?? cluster.nodes[0]!;
    let enrolled = 0;
    let killed = false;
    let restarted: Promise<void> | null = null;
    const killer = async () => {
      // Mid-run: a third of the devices enrolled, the rest still coming.
      while (enrolled < DEVICES / 3) await new Promise((done) => setTimeout(done, 20));
      await victim.kill('SIGKILL');
      killed = true;
      await new Promise((done) => setTimeout(done, 1500));
      restarted = victim.start();
      await restarted;
    };
    const killing = killer();
    const errors: string[] = [];
    await pool(devices, CONCURRENCY, async (device) => {
      try {
        await enroll(device);
      } catch (error) {
        errors.push(`${device.serial}: ${(error as Error).message} (attempts: ${device.failures.join(' | ')})`);
      }
      enrolled += 1;
    });
    await killing;
    expect(killed).toBe(true);
    expect(errors, clusterLogs(cluster)).toEqual([]);

    const retried = devices.filter((device) => device.attempts > 1);
    console.log(
      `${DEVICES} devices enrolled; ${retried.length} lost a request and enrolled on retry ` +
        `(${retried.filter((d) => d.created.length > 1).length} after their 201 had come)`,
    );
    // The kill did cost some devices a request (else this run proved nothing about it).
    expect(retried.length).toBeGreaterThan(0);
    // Each 201 named the agent the device ends with: a retry after a 201 got the same agent back.
    for (const device of devices) {
      expect(device.result, device.serial).toBeDefined();
      const id = Number(device.result!.agentId);
      expect(device.created.length).toBeGreaterThan(0);
      expect(new Set(device.created), `${device.serial}: ${device.failures.join(' | ')}`).toEqual(new Set([id]));
    }
  }, 900_000);

  it('keeps every enrollment whole: one agent per device, each with its computer, account, password and broker login', async () => {
    const serials = devices.map((device) => device.serial);
    const agents = await cluster.query<{
      id: string;
      serial: string;
      computer_serial: string | null;
      login: string;
      hash: string | null;
    }>(
      `SELECT a.id, a.serial, c.serial AS computer_serial, a.mqtt_login AS login, a.mqtt_password_hash AS hash
         FROM agents a JOIN computers c ON c.id = a.computer_id JOIN users u ON u.id = a.account_user_id`,
    );
    expect(agents).toHaveLength(DEVICES);
    expect(new Set(agents.map((agent) => agent.serial))).toEqual(new Set(serials));
    const bySerial = new Map(agents.map((agent) => [agent.serial, agent]));
    for (const device of devices) {
      const agent = bySerial.get(device.serial)!;
      expect(Number(agent.id)).toBe(Number(device.result!.agentId));
      expect(agent.computer_serial).toBe(device.serial);
      expect(agent.hash, `${device.serial} has no MQTT password`).not.toBeNull();
    }
    // No half states: nothing an enrollment makes exists without its agent.
    const [orphans] = await cluster.query<{ computers: number; accounts: number }>(
      `SELECT (SELECT count(*)::int FROM computers c WHERE NOT EXISTS (SELECT 1 FROM agents a WHERE a.computer_id = c.id)) AS computers,
              (SELECT count(*)::int FROM users u WHERE u.kind = 'agent' AND NOT EXISTS (SELECT 1 FROM agents a WHERE a.account_user_id = u.id)) AS accounts`,
    );
    expect(orphans).toEqual({ computers: 0, accounts: 0 });
    // Every agent has its broker login, and Mosquitto holds no login of an agent that does not exist.
    const clients = new Set(cluster.brokerClients());
    const missing = agents.filter((agent) => !clients.has(agent.login)).map((agent) => agent.login);
    expect(missing).toEqual([]);
    const logins = new Set(agents.map((agent) => agent.login));
    const strays = [...clients].filter((login) => !logins.has(login) && login !== 'admin' && login !== 'mdm-console-backend');
    expect(strays).toEqual([]);
  }, 120_000);

  it('holds every foreign key of the database', async () => {
    const keys = await cluster.query<{ child: string; columns: string[]; parent: string; parent_columns: string[] }>(
      `SELECT c.conrelid::regclass::text AS child, c.confrelid::regclass::text AS parent,
              array(SELECT attname::text FROM unnest(c.conkey) WITH ORDINALITY k(n, i) JOIN pg_attribute ON attrelid = c.conrelid AND attnum = k.n ORDER BY i) AS columns,
              array(SELECT attname::text FROM unnest(c.confkey) WITH ORDINALITY k(n, i) JOIN pg_attribute ON attrelid = c.confrelid AND attnum = k.n ORDER BY i) AS parent_columns
         FROM pg_constraint c WHERE c.contype = 'f'`,
    );
    expect(keys.length).toBeGreaterThan(10);
    const broken: string[] = [];
    for (const key of keys) {
      const join = key.columns.map((column, i) => `p.${column} = t.${key.parent_columns[i]}`).join(' AND ');
      const notNull = key.columns.map((column) => `p.${column} IS NOT NULL`).join(' AND ');
      const [row] = await cluster.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${key.child} p WHERE ${notNull} AND NOT EXISTS (SELECT 1 FROM ${key.parent} t WHERE ${join})`,
      );
      if (row!.n > 0) broken.push(`${key.child}(${key.columns.join(',')}) → ${key.parent}: ${row!.n} rows`);
    }
    expect(broken).toEqual([]);
    const [valid] = await cluster.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_constraint WHERE NOT convalidated`);
    expect(valid!.n).toBe(0);
  }, 120_000);

  it('lets every device work afterwards: its token opens a session that reads its record, its password logs in to the broker', async () => {
    const refused: string[] = [];
    await pool(devices, 16, async (device) => {
      const result = device.result!;
      let record: EnrollmentResult['agent'];
      try {
        const client = await startAgentSession(result.backendUrl, result.apiToken);
        record = await client.getAgent(result.agentId);
        if (Number(record.id) !== Number(result.agentId)) refused.push(`${device.serial}: record ${record.id}`);
      } catch (error) {
        refused.push(`${device.serial} (REST): ${(error as Error).message}`);
        return;
      }
      // Each record read draws a new MQTT password: this one's.
      const credentials = mqttCredentialsOf({ ...result, agent: record });
      const answer = await new Promise<string>((done) => {
        const client = mqtt.connect({
          host: credentials.host,
          port: credentials.port,
          username: credentials.username,
          password: credentials.password,
          clientId: credentials.username,
          reconnectPeriod: 0,
          connectTimeout: 10_000,
        });
        client.once('connect', () => client.end(true, () => done('ok')));
        client.once('error', (error) => (client.end(true), done(error.message)));
      });
      if (answer !== 'ok') refused.push(`${device.serial} (MQTT): ${answer}`);
    });
    expect(refused).toEqual([]);
  }, 300_000);
});
