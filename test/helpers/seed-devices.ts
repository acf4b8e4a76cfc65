// Fills a backend's database with many enrolled devices at once (for the console's big-table
// test and benchmarks): what thousands of enrollments would leave, written in one transaction
// with multi-row INSERTs (a statement per 500 rows: 100,000 devices in seconds on either engine).
import Database from 'better-sqlite3';
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { ENROLL_STATUS } from '../../src-main/backend/agents/status.ts';
import { SqliteFleetRepository } from '../../src-main/backend/fleets/fleet-repository.ts';
import { SqliteSql } from '../../src-main/backend/db/sqlite-sql.ts';
import type { Sql, SqlValue } from '../../src-main/backend/db/sql.ts';

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
      const profiles = await profileIds(sql);
      const people = Math.max(1, Math.ceil(count / 2));
      // The people who enroll (UserRepository.findOrCreatePerson: one already there keeps its row,
      // takes the names and the guest profile; a new one holds the default and the guest profiles).
      const personIds: number[] = [];
      for (let from = 0; from < people; from += CHUNK) {
        const chunk = Array.from({ length: Math.min(CHUNK, people - from) }, (_, k) => {
          const i = from + k;
          const firstname = FIRST[i % FIRST.length]!;
          const lastname = LAST[Math.floor(i / FIRST.length) % LAST.length]!;
          return { email: `${firstname}.${lastname}.${prefix}${i}@example.com`.toLowerCase(), firstname, lastname };
        });
        const existing = new Map(
          (
            await sql.all<{ id: number; login: string }>(
              `SELECT id, login FROM users WHERE lower(login) IN (${chunk.map(() => '?').join(', ')})`,
              chunk.map((person) => person.email),
            )
          ).map((row) => [row.login.toLowerCase(), Number(row.id)]),
        );
        for (const person of chunk) {
          const id = existing.get(person.email);
          if (id === undefined) continue;
          await sql.run(`UPDATE users SET firstname = ?, lastname = ? WHERE id = ?`, [person.firstname, person.lastname, id]);
          await sql.run(ASSIGN + ` VALUES (?, ?, 1) ON CONFLICT DO NOTHING`, [id, profiles.guest]);
        }
        const fresh = chunk.filter((person) => !existing.has(person.email));
        const created = await insertUsers(
          sql,
          fresh.map((person) => [person.email, 'person', person.email, person.firstname, person.lastname, profiles.default]),
        );
        await assign(
          sql,
          [...created.values()].flatMap((id) => [[id, profiles.default] as const, [id, profiles.guest] as const]),
        );
        for (const person of chunk) personIds.push(existing.get(person.email) ?? created.get(person.email)!);
      }
      // The devices, a chunk at a time: each one's agent account (UserRepository.createAgentAccount),
      // computer and agent (the enrollment's inserts), and its presence (BrokerAgentRepository.setPresence).
      for (let from = 0; from < count; from += CHUNK) {
        const indexes = Array.from({ length: Math.min(CHUNK, count - from) }, (_, k) => from + k);
        const serialOf = (i: number) => `${prefix}${String(i).padStart(6, '0')}`;
        const logins = indexes.map((i) => `agent:${serialOf(i)}:${randomBytes(6).toString('hex')}`);
        const accounts = await insertUsers(
          sql,
          logins.map((login) => [login, 'agent', null, null, null, profiles.agent]),
        );
        await assign(
          sql,
          logins.map((login) => [accounts.get(login)!, profiles.agent] as const),
        );
        const devices = indexes.map((i) => ({
          i,
          serial: serialOf(i),
          uuid: at === undefined ? randomUUID() : `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
          created: iso(now - (count - i) * 60_000),
          person: personIds[i % personIds.length]!,
          account: accounts.get(logins[i - from]!)!,
        }));
        const computers = await insertReturning(
          sql,
          'computers (entity_id, name, serial, uuid, user_id, created_at, updated_at)',
          devices.map((d) => [1, d.serial, d.serial, d.uuid, d.person, d.created, d.created]),
          'serial',
        );
        await insertReturning(
          sql,
          `agents (entity_id, computer_id, fleet_id, account_user_id, enrolled_by_user_id, invitation_id, enrollment_code_id,
             name, serial, uuid, version, type, firstname, lastname, enroll_status, topic, mqtt_login, created_at, updated_at,
             is_online, last_contact)`,
          devices.map(({ i, serial, uuid, created, person, account }) => {
            const p = i % personIds.length;
            return [
              1,
              computers.get(serial)!,
              fleetIds[seededFleet(i, fleetIds.length)]!,
              account,
              person,
              null,
              null,
              serial,
              serial,
              uuid,
              `1.${i % 4}.${i % 10}`,
              seededType(i),
              FIRST[p % FIRST.length]!,
              LAST[Math.floor(p / FIRST.length) % LAST.length]!,
              ENROLL_STATUS.enrolled,
              `/1/agent/${serial}`,
              serial,
              created,
              created,
              (i * 7919) % 100 < onlineShare * 100 ? 1 : 0,
              iso(now - ((i * 7919) % 86_400) * 1000),
            ];
          }),
          'serial',
        );
      }
    });
  } finally {
    if (own) await sql.close();
  }
}

/** Rows per multi-row INSERT: 21 columns at most, well under either engine's limit on parameters. */
const CHUNK = 500;
const ASSIGN = `INSERT INTO profile_assignments (user_id, profile_id, entity_id)`;

async function profileIds(sql: Sql): Promise<{ guest: number; default: number; agent: number }> {
  const rows = await sql.all<{ id: number; name: string; is_guest: number; is_default: number }>(
    `SELECT id, name, is_guest, is_default FROM profiles ORDER BY id`,
  );
  const find = (test: (row: (typeof rows)[number]) => boolean) => Number(rows.find(test)!.id);
  return {
    guest: find((row) => Number(row.is_guest) === 1),
    default: find((row) => Number(row.is_default) === 1),
    agent: find((row) => row.name === 'MDM agent'),
  };
}

/** One multi-row INSERT; returns the new ids by the value of column `key` (unique among the rows). */
async function insertReturning(sql: Sql, into: string, rows: SqlValue[][], key: string): Promise<Map<SqlValue, number>> {
  const ids = new Map<SqlValue, number>();
  if (rows.length === 0) return ids;
  const values = rows.map((row) => `(${row.map(() => '?').join(', ')})`).join(', ');
  const returned = await sql.all<Record<string, SqlValue>>(
    `INSERT INTO ${into} VALUES ${values} RETURNING id, ${key}`,
    rows.flat(),
  );
  for (const row of returned) ids.set(row[key]!, Number(row.id));
  return ids;
}

/** Users as UserRepository.insert writes them (a fresh token each, created now); ids by login. */
function insertUsers(
  sql: Sql,
  users: [
    login: string,
    kind: string,
    email: string | null,
    firstname: string | null,
    lastname: string | null,
    profile: number,
  ][],
) {
  const created = new Date().toISOString();
  return insertReturning(
    sql,
    'users (login, kind, email, firstname, lastname, user_token, default_profile_id, entity_id, created_at)',
    users.map(([login, kind, email, firstname, lastname, profile]) => [
      login,
      kind,
      email,
      firstname,
      lastname,
      randomBytes(20).toString('hex'),
      profile,
      1,
      created,
    ]),
    'login',
  ) as Promise<Map<string, number>>;
}

async function assign(sql: Sql, pairs: (readonly [user: number, profile: number])[]): Promise<void> {
  if (pairs.length === 0) return;
  await sql.run(`${ASSIGN} VALUES ${pairs.map(() => '(?, ?, 1)').join(', ')} ON CONFLICT DO NOTHING`, pairs.flat());
}
