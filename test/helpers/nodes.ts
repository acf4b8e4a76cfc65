// Several backends in this process on one PostgreSQL database, as the cluster tests start them:
// each its own node name and data dir, its own embedded broker (which `serve` refuses beside other
// nodes: embeddedBrokerPerNode), the same cluster key (startTestBackend's, one per database) and
// the same admin token (the first node's, copied into each data dir, which every node adopts).
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NewJob } from '../../src-main/backend/jobs/repository.ts';
import { startTestBackend, type TestBackend } from './backend.ts';

export type NodeOptions = NonNullable<Parameters<typeof startTestBackend>[0]> & { databaseUrl: string };

/** One node named `name`; with `tokenFrom`, holding that node's admin token. Its data dir goes on stop. */
export async function startNode(name: string, options: NodeOptions, tokenFrom?: TestBackend): Promise<TestBackend> {
  const dataDir = mkdtempSync(join(tmpdir(), `mdm-${name}-`));
  if (tokenFrom) copyFileSync(join(tokenFrom.dataDir, 'admin-token'), join(dataDir, 'admin-token'));
  try {
    const node = await startTestBackend({ embeddedBrokerPerNode: true, ...options, dataDir, nodeName: name });
    const stop = node.stop;
    node.stop = async () => {
      await stop();
      rmSync(dataDir, { recursive: true, force: true });
    };
    return node;
  } catch (error) {
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
}

/** `n` nodes started one after the other, named `names` (default node-a, node-b…), sharing the first one's admin token. */
export async function startNodes(n: number, { names, ...options }: NodeOptions & { names?: string[] }): Promise<TestBackend[]> {
  const nodes: TestBackend[] = [];
  try {
    for (let i = 0; i < n; i++)
      nodes.push(await startNode(names?.[i] ?? `node-${String.fromCharCode(97 + i)}`, options, nodes[0]));
  } catch (error) {
    for (const node of nodes) await node.stop().catch(() => {});
    throw error;
  }
  return nodes;
}

/** A bulk job's row as `node`'s JobService writes it when the job starts (running, one device). */
export const runningJobOf = (node: string): NewJob => ({
  action: 'ping',
  selection: '{"all":true}',
  description: 'all devices',
  params: null,
  total: 1,
  fleet_ids: '[]',
  account_id: null,
  actor: null,
  created_at: new Date().toISOString(),
  node,
});
