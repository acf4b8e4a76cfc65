// A stopped backend's agents, changed through their repository (what a crash or an admin's other
// tool could leave behind), without starting the backend.
import { join } from 'node:path';
import { BrokerAgentRepository, type BrokerAgentStore } from '../../src-main/backend/agents/broker-repository.ts';
import { openDatabase } from '../../src-main/backend/db/database.ts';

export function withStoredAgents(dataDir: string, change: (agents: BrokerAgentStore) => void): void {
  const db = openDatabase(join(dataDir, 'mdm-console.sqlite'));
  try {
    change(new BrokerAgentRepository(db));
  } finally {
    db.close();
  }
}
