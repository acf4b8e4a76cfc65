// Fills a backend's database with many enrolled devices at once (for the console's big-table
// test and benchmarks): what thousands of enrollments would leave, written in one transaction.
import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { BrokerAgentRepository } from '../../src-main/backend/agents/broker-repository.ts';
import { SqliteAgentRepository } from '../../src-main/backend/agents/repository.ts';
import { ENROLL_STATUS } from '../../src-main/backend/agents/status.ts';
import { SqliteFleetRepository } from '../../src-main/backend/fleets/fleet-repository.ts';
import { UserRepository } from '../../src-main/backend/sessions/user-repository.ts';
import { SqliteSql } from '../../src-main/backend/db/sqlite-sql.ts';
import type { Sql } from '../../src-main/backend/db/sql.ts';

const FIRST = ['Ada', 'Alan', 'Grace', 'Linus', 'Margaret', 'Ken', 'Barbara', 'Dennis', 'Frances', 'Edsger', 'Radia', 'Tim'];
const LAST = [
  'Lovelace',
  'Turing',
  'Hopper',
  'Torvalds',
  'Hamilton',
  'Thompson',
  'Liskov',
  'Ritchie',
  'Allen',
  'Dijkstra',
  'Perlman',
  'Berners-Lee',
];

export interface SeedOptions {
  count: number;
  /** Fleet names to spread devices over (created when missing); default: the default fleet. */
  fleets?: string[];
  /** Share of devices marked online. */
  onlineShare?: number;
  /** Serial prefix, so a test can find its devices. */
  prefix?: string;
  /** A fixed clock (ms) and uuids made from the serial: the same seed gives the same rows on either engine. */
  at?: number;
}

/** The type and fleet (index in `fleets`) of the i-th seeded device, so tests can count them. */
export const seededType = (i: number) => (i % 3 === 0 ? 'apple' : 'android');
export const seededFleet = (i: number, fleets: number) => Math.floor(i / 7) % fleets;

/**
 * Inserts `count` agents (with their accounts, enrolling people and computers) into the database of
 * a data dir (its SQLite file) or of a connection (`t.sql`: either engine).
 */
export async function seedDevices(
  target: string | Sql,
  { count, fleets = [], onlineShare = 0.3, prefix = 'SEED', at }: SeedOptions,
): Promise<void> {
  const own = typeof target === 'string';
  let sql: Sql;
  if (typeof target === 'string') {
    const db = new Database(join(target, 'mdm-console.sqlite'));
    db.pragma('busy_timeout = 10000');
    sql = new SqliteSql(db);
  } else sql = target;
  const now = at ?? Date.now();
  const iso = (ms: number) => new Date(ms).toISOString();
  try {
    await sql.transaction(async () => {
      const fleetRepository = new SqliteFleetRepository(sql);
      const fleetIds: number[] = [];
      for (const name of fleets)
        fleetIds.push((await fleetRepository.byName(1, name))?.id ?? (await fleetRepository.insert(1, name, iso(now))));
      if (fleetIds.length === 0) fleetIds.push((await fleetRepository.defaultOf(1))!.id);
      const users = new UserRepository(sql);
      const agents = new SqliteAgentRepository(sql);
      const presence = new BrokerAgentRepository(sql);
      const people = Math.max(1, Math.ceil(count / 2));
      const personIds: number[] = [];
      for (let i = 0; i < people; i++) {
        const firstname = FIRST[i % FIRST.length]!;
        const lastname = LAST[Math.floor(i / FIRST.length) % LAST.length]!;
        const email = `${firstname}.${lastname}.${prefix}${i}@example.com`.toLowerCase();
        personIds.push((await users.findOrCreatePerson(email, 1, { firstname, lastname })).id);
      }
      for (let i = 0; i < count; i++) {
        const type = seededType(i);
        const serial = `${prefix}${String(i).padStart(6, '0')}`;
        const account = (await users.createAgentAccount(1, serial)).id;
        const person = personIds[i % personIds.length]!;
        const uuid = at === undefined ? randomUUID() : `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
        const created = now - (count - i) * 60_000;
        const computerId = await agents.insertComputer({
          entity_id: 1,
          name: serial,
          serial,
          uuid,
          user_id: person,
          now: iso(created),
        });
        const p = i % personIds.length;
        const agentId = await agents.insertAgent({
          entity_id: 1,
          computer_id: computerId,
          fleet_id: fleetIds[seededFleet(i, fleetIds.length)]!,
          account_user_id: account,
          enrolled_by_user_id: person,
          invitation_id: null,
          enrollment_code_id: null,
          enroll_status: ENROLL_STATUS.enrolled,
          name: serial,
          serial,
          uuid,
          version: `1.${i % 4}.${i % 10}`,
          type,
          firstname: FIRST[p % FIRST.length]!,
          lastname: LAST[Math.floor(p / FIRST.length) % LAST.length]!,
          topic: `/1/agent/${serial}`,
          mqtt_login: serial,
          now: iso(created),
        });
        await presence.setPresence(agentId, (i * 7919) % 100 < onlineShare * 100, iso(now - ((i * 7919) % 86_400) * 1000));
      }
    });
  } finally {
    if (own) await sql.close();
  }
}
