// The public host on several nodes sharing one PostgreSQL database: the console's choice (the
// `public_host` setting, which "Use this address" writes too) is the database's, so an invitation
// made on another node carries it; a node's own --public-host still wins on that node.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lanAddresses } from '../../../src-main/backend/config.ts';
import type { TestBackend } from '../../helpers/backend.ts';
import { startNode } from '../../helpers/nodes.ts';
import { eventually } from '../../helpers/mqtt.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.ts';

describe('the public host on two nodes sharing one PostgreSQL database', () => {
  let database: TestDatabase;
  const nodes: TestBackend[] = [];
  const start = async (name: string, publicHost: string | undefined) => {
    // No --public-host unless given (startTestBackend's default is one): the settings then decide.
    const node = await startNode(name, { databaseUrl: database.url, publicHost }, nodes[0]);
    nodes.push(node);
    return node;
  };
  // Every node holds the first one's admin token (startNode copies it): any node's own helper will do.
  const admin = (node: TestBackend, method: string, path: string, body?: unknown) => node.admin(method, path, body);
  const invite = async (node: TestBackend, email: string) => {
    const made = await admin(node, 'POST', '/invitations', { email, send_email: false });
    expect(made.status).toBe(201);
    return made.body as { deeplink: string };
  };

  beforeAll(async () => {
    database = await createTestDatabase('public_host_nodes');
    await start('node-a', undefined);
    await start('node-b', undefined);
    await start('node-c', '127.0.0.1');
  }, 120_000);
  afterAll(async () => {
    for (const node of nodes.splice(0).reverse()) await node.stop();
    await database?.drop();
  });

  it('chosen on A, used by B; C keeps its --public-host', async () => {
    const [a, b, c] = nodes as [TestBackend, TestBackend, TestBackend];
    const changed = await admin(a, 'PATCH', '/settings', { public_host: 'mdm.example' });
    expect(changed.status).toBe(200);
    await eventually(async () => (await admin(b, 'GET', '/status')).body.public_host === 'mdm.example');
    expect((await admin(b, 'GET', '/status')).body.public_host).toBe('mdm.example');
    // B's server.json (what the CLI pointed at B's data dir reads) says so too.
    const serverJson = () => JSON.parse(readFileSync(join(b.dataDir, 'server.json'), 'utf8')) as { public_host: string };
    await eventually(() => serverJson().public_host === 'mdm.example');
    expect(serverJson().public_host).toBe('mdm.example');
    const onB = await invite(b, 'b@example.com');
    expect(decodeURIComponent(onB.deeplink)).toContain('mdm.example');
    const onC = await invite(c, 'c@example.com');
    expect(decodeURIComponent(onC.deeplink)).not.toContain('mdm.example');
    expect(decodeURIComponent(onC.deeplink)).toContain('127.0.0.1');
  });

  it('"Use this address" on A is the setting every node without the flag uses', async () => {
    const [a, b] = nodes as [TestBackend, TestBackend];
    const lan = lanAddresses()[0];
    if (lan === undefined) return; // a machine without a LAN address cannot choose one
    const chosen = await admin(a, 'POST', '/public-host', { host: lan });
    expect(chosen.status).toBe(200);
    await eventually(async () => (await admin(b, 'GET', '/settings')).body.public_host === lan);
    expect((await admin(b, 'GET', '/settings')).body.public_host).toBe(lan);
    // B's own links follow once its settings store has reloaded (the feed).
    await eventually(async () => (await admin(b, 'GET', '/status')).body.public_host === lan);
    expect((await admin(b, 'GET', '/status')).body.public_host).toBe(lan);
  });
});
