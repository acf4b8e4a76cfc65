// A node's name lock lives on a connection of its own, never queried after the lock is taken. When
// that connection goes half-open (the database ended the session, but nothing reaches this side:
// a NAT or a proxy that drops the close), the node must notice at its next heartbeat that the
// database no longer holds its lock and take it again, instead of looking dead forever.
import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { eventually } from '../../helpers/mqtt.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.ts';

/** A TCP relay to PostgreSQL that can freeze the lock connections: from then on, nothing passes either way, and no close either. */
class Relay {
  readonly server: Server;
  private readonly pairs: { client: Socket; upstream: Socket; lock: boolean; frozen: boolean }[] = [];

  constructor(host: string, port: number) {
    this.server = createServer((client) => {
      const upstream = connect(port, host);
      const pair = { client, upstream, lock: false, frozen: false };
      this.pairs.push(pair);
      client.on('data', (chunk: Buffer) => {
        // The startup message names the application: the lock's connections are 'mdm-console lock'.
        if (chunk.includes('mdm-console lock')) pair.lock = true;
        if (!pair.frozen) upstream.write(chunk);
      });
      upstream.on('data', (chunk: Buffer) => {
        if (!pair.frozen) client.write(chunk);
      });
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => {
        if (!pair.frozen) client.destroy();
      });
      client.on('error', () => {});
      upstream.on('error', () => {});
    });
  }

  listen(): Promise<number> {
    return new Promise((resolve) =>
      this.server.listen(0, '127.0.0.1', () => resolve((this.server.address() as { port: number }).port)),
    );
  }

  /** Freezes the lock connections open now; how many. */
  freezeLocks(): number {
    const locks = this.pairs.filter((pair) => pair.lock && !pair.client.destroyed);
    for (const pair of locks) pair.frozen = true;
    return locks.length;
  }

  close(): Promise<void> {
    for (const pair of this.pairs) {
      pair.client.destroy();
      pair.upstream.destroy();
    }
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

describe("a node whose name lock's connection goes half-open", () => {
  let database: TestDatabase;
  let relay: Relay;
  let node: TestBackend;

  beforeAll(async () => {
    database = await createTestDatabase('node_lock');
    const url = new URL(database.url);
    relay = new Relay(url.hostname, Number(url.port));
    url.port = String(await relay.listen());
    node = await startTestBackend({
      databaseUrl: url.toString(),
      nodeName: 'node-a',
      nodeTiming: { heartbeatMs: 200, liveMs: 60_000 },
    });
  }, 120_000);
  afterAll(async () => {
    await node?.stop();
    await relay?.close();
    await database?.drop();
  });

  const live = async () => {
    const response = await fetch(`${node.backend.info.admin_url}/api/status`, {
      headers: { authorization: `Bearer ${node.backend.info.admin_token}` },
    });
    const body = (await response.json()) as { nodes: { name: string; live: boolean }[] };
    return body.nodes.find((n) => n.name === 'node-a')?.live;
  };

  it('takes its lock again at a heartbeat, and counts live again', async () => {
    expect(await live()).toBe(true);
    expect(relay.freezeLocks()).toBe(1);
    const lockPids = async () =>
      (
        await node.sql.all<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity WHERE application_name = 'mdm-console lock' AND datname = current_database()`,
        )
      ).map((row) => row.pid);
    const pids = await lockPids();
    expect(pids).toHaveLength(1);
    const before = pids[0]!;
    // The database ends the lock's session; the node never hears of it.
    const ended = await node.sql.value<boolean | number>('SELECT pg_terminate_backend(?::int)', [before]);
    expect(Boolean(ended)).toBe(true);
    // A heartbeat finds the lock gone and takes it on a new session: the node counts live.
    await eventually(async () => {
      const pids = await lockPids();
      return pids.length === 1 && pids[0] !== before && (await live()) === true;
    }, 30_000);
  }, 60_000);
});
