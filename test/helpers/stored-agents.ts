// A stopped backend's agents, changed through their repository (what a crash or an admin's other
// tool could leave behind), without starting the backend.
import { join } from 'node:path';
import { BrokerAgentRepository, type BrokerAgentStore } from '../../src-main/backend/agents/broker-repository.ts';
import { openDatabase } from '../../src-main/backend/db/database.ts';
import { SqliteSql } from '../../src-main/backend/db/sqlite-sql.ts';

export async function withStoredAgents(dataDir: string, change: (agents: BrokerAgentStore) => Promise<void>): Promise<void> {
  const sql = new SqliteSql(openDatabase(join(dataDir, 'mdm-console.sqlite')));
  try {
    await change(new BrokerAgentRepository(sql));
  } finally {
    await sql.close();
  }
}
