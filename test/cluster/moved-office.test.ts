// Issue 23, item 4: an office's SQLite data dir (test/helpers/populated-office.ts: fleets, an
// invitation and a code with their uses, two devices enrolled by the simulator, a file and a package
// deployed and downloaded, a policy, an admin account, an API token) is moved to PostgreSQL with
// `mdm-console migrate-db`, then served by a three-node cluster (scripts/cluster.ts) whose balancer
// takes the port the devices know and whose first node runs on that data dir. The same devices keep
// working: a session token from before the move answers through the balancer; each device's token
// opens a session and reads its record (its topic kept, the cluster's broker named), it logs in to
// Mosquitto with the password that read gave, obeys a policy set on node 3 after the move and
// reports it done, as every node shows; and the file deployed before the move downloads whole and
// by ranges through the balancer (from whichever node answers).
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectEnrolledDevice,
  downloadAndVerify,
  startAgentSession,
  type SimulatedDevice,
} from '../../src-main/device/index.ts';
import { agentCall } from '../helpers/backend.ts';
import { runCli } from '../helpers/cli.ts';
import { clusterLogs, startTestCluster, type TestCluster } from '../helpers/cluster.ts';
import { eventually } from '../helpers/mqtt.ts';
import { populateOffice, type PopulatedOffice } from '../helpers/populated-office.ts';
import { createTestDatabase } from '../helpers/postgres.ts';

let office: PopulatedOffice;
let dataDir: string;
let cluster: TestCluster;
let oldSession: string;
const devices: SimulatedDevice[] = [];
const deviceLog: string[] = [];

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'mdm-moved-office-'));
  office = await populateOffice(dataDir);
  const db = new Database(join(dataDir, 'mdm-console.sqlite'), { readonly: true });
  oldSession = db
    .prepare('SELECT token FROM sessions WHERE agent_id IS NOT NULL ORDER BY created_at DESC')
    .pluck()
    .get() as string;
  db.close();
  const database = await createTestDatabase('moved_office');
  const moved = await runCli(dataDir, ['migrate-db', '--to', database.url]);
  expect(moved.code, moved.stderr).toBe(0);
  // The office's data dir is node 1's; the balancer answers on the port its devices know.
  cluster = await startTestCluster({
    label: 'moved',
    nodes: Number(process.env.MDM_CLUSTER_NODES ?? 3),
    dataDirs: [dataDir],
    port: office.ports.port,
    database,
    // What docs/scaling.md says to do: the office's stored files into the nodes' shared files dir.
    seedFiles: join(dataDir, 'files'),
  });
}, 300_000);

afterAll(async () => {
  await Promise.all(devices.map((device) => device.stop()));
  await cluster?.destroy();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('an office moved from SQLite to PostgreSQL, served by three nodes', () => {
  it('answers a session token issued before the move, through the balancer at the address the devices know', async () => {
    const apiUrl = office.devices[0]!.enrollment.backendUrl.replace(/\/$/, '');
    expect(apiUrl).toBe(`${cluster.agentUrl}/api`);
    for (let i = 0; i < cluster.nodes.length; i += 1) {
      const full = await agentCall(apiUrl, 'GET', `getFullSession?session_token=${oldSession}`);
      expect(full.status, JSON.stringify(full.body)).toBe(200);
    }
  });

  it('lets each device read its record, log in to the cluster’s broker, obey a policy set on node 3 and report it, seen on every node', async () => {
    for (const device of office.devices) {
      const client = await startAgentSession(device.enrollment.backendUrl, device.enrollment.apiToken);
      const record = await client.getAgent(device.agentId);
      expect(record.topic).toBe(device.enrollment.agent.topic);
      expect(Number(record.port)).toBe(cluster.broker.port);
      devices.push(
        await connectEnrolledDevice(
          { ...device.enrollment, agent: record },
          {
            chunkSize: 4096,
            mqtt: { backoff: { initialMs: 100, maxMs: 1000 } },
            log: (line) => deviceLog.push(`${device.serial}: ${line}`),
          },
        ),
      );
    }
    const set = await cluster.admin(
      'POST',
      '/policy-assignments',
      { policy: 'disableBluetooth', value: true, fleet: 'Warehouse' },
      cluster.nodes.at(-1),
    );
    expect(set.status, JSON.stringify(set.body)).toBe(201);
    for (const node of cluster.nodes) {
      let last: unknown;
      await eventually(async () => {
        const { body } = await cluster.admin('GET', `/deployments/${set.body.id}`, undefined, node);
        last = body;
        return body.total === 2 && body.done === 2;
      }, 30_000).catch(() => {
        throw new Error(`${node.name}: ${JSON.stringify(last)}\n${deviceLog.join('\n')}\n${clusterLogs(cluster)}`);
      });
    }
    const [row] = await cluster.query<{ n: number }>('SELECT count(*)::int AS n FROM policy_tasks WHERE deployment_id = $1', [
      set.body.id,
    ]);
    expect(row!.n).toBe(2);
  }, 90_000);

  it('serves the file deployed before the move, whole and by ranges, whichever node answers', async () => {
    for (const device of office.devices) {
      // Three downloads: round robin takes them through each node.
      for (let i = 0; i < cluster.nodes.length; i += 1) {
        const download = await downloadAndVerify({
          backendUrl: device.enrollment.backendUrl,
          apiToken: device.enrollment.apiToken,
          target: `file:${office.file.id}`,
        });
        expect(download.checks.filter((check) => check.status === 'failed')).toEqual([]);
        expect(download.sha256).toBe(office.file.sha256);
      }
    }
  }, 90_000);
});
