// The SQL the broker runs on agents: logins, presence and last contact, and the command flags.
import type { Sql } from '../db/sql.ts';
import { ENROLL_STATUS } from './status.ts';

/** The columns of `agents` the broker reads. */
export interface BrokerAgentRow {
  id: number;
  entity_id: number;
  fleet_id: number;
  name: string;
  topic: string;
  mqtt_login: string;
  mqtt_password_hash: string | null;
  enroll_status: string;
  is_online: number;
  lock: number;
  wipe: number;
}

export interface BrokerAgentStore {
  /** The agents with this MQTT login (one per entity at most), oldest first. */
  byLogin(login: string): Promise<BrokerAgentRow[]>;
  byId(id: number): Promise<BrokerAgentRow | undefined>;
  setPresence(id: number, online: boolean, at: string): Promise<void>;
  touch(id: number, at: string): Promise<void>;
  /** `touch` for many agents, one statement per 500. */
  touchMany(ids: readonly number[], at: string): Promise<void>;
  reported(id: number, at: string): Promise<void>;
  /** Marks every agent offline; returns the ids that were online. */
  allOffline(): Promise<number[]>;
  setLock(id: number, lock: boolean, at: string): Promise<void>;
  setWipe(id: number, wipe: boolean, at: string): Promise<void>;
  setEnrollStatus(id: number, status: string, at: string): Promise<void>;
  setFleet(id: number, fleetId: number, at: string): Promise<void>;
  /** Agents whose record holds a command they may not have received yet (locked, wiped, unenrolling). */
  withPendingCommands(): Promise<BrokerAgentRow[]>;
  /** Every agent that may hold an MQTT account (external brokers are reconciled against them). */
  connectable(): Promise<BrokerAgentRow[]>;
}

const COLUMNS = `id, entity_id, fleet_id, name, topic, mqtt_login, mqtt_password_hash, enroll_status, is_online, lock, wipe`;

export class BrokerAgentRepository implements BrokerAgentStore {
  private readonly sql: Sql;
  private readonly s;

  constructor(sql: Sql) {
    this.sql = sql;
    this.s = {
      // Sorted below rather than by ORDER BY: SQLite ran this query (every MQTT login) 4x slower so.
      byLogin: `SELECT ${COLUMNS} FROM agents WHERE mqtt_login = ?`,
      byId: `SELECT ${COLUMNS} FROM agents WHERE id = ?`,
      presence: `UPDATE agents SET is_online = ?, last_contact = ? WHERE id = ?`,
      touch: `UPDATE agents SET last_contact = ? WHERE id = ?`,
      report: `UPDATE agents SET last_report = ?, last_contact = ? WHERE id = ?`,
      online: `SELECT id FROM agents WHERE is_online = 1`,
      allOffline: `UPDATE agents SET is_online = 0 WHERE is_online = 1`,
      lock: `UPDATE agents SET lock = ?, updated_at = ? WHERE id = ?`,
      wipe: `UPDATE agents SET wipe = ?, updated_at = ? WHERE id = ?`,
      enrollStatus: `UPDATE agents SET enroll_status = ?, updated_at = ? WHERE id = ?`,
      fleet: `UPDATE agents SET fleet_id = ?, updated_at = ? WHERE id = ?`,
      connectable: `SELECT ${COLUMNS} FROM agents WHERE enroll_status IN ('${ENROLL_STATUS.enrolled}', '${ENROLL_STATUS.unenrolling}')`,
      pending: `SELECT ${COLUMNS} FROM agents WHERE enroll_status != '${ENROLL_STATUS.unenrolled}' AND (lock = 1 OR wipe = 1 OR enroll_status = '${ENROLL_STATUS.unenrolling}')`,
    };
  }

  async byLogin(login: string): Promise<BrokerAgentRow[]> {
    return ((await this.sql.all(this.s.byLogin, [login])) as BrokerAgentRow[]).sort((a, b) => a.id - b.id);
  }

  async byId(id: number): Promise<BrokerAgentRow | undefined> {
    return (await this.sql.get(this.s.byId, [id])) as BrokerAgentRow | undefined;
  }

  async setPresence(id: number, online: boolean, at: string): Promise<void> {
    await this.sql.run(this.s.presence, [online ? 1 : 0, at, id]);
  }

  async touch(id: number, at: string): Promise<void> {
    await this.sql.run(this.s.touch, [at, id]);
  }

  async touchMany(ids: readonly number[], at: string): Promise<void> {
    for (let start = 0; start < ids.length; start += 500) {
      const chunk = ids.slice(start, start + 500);
      await this.sql.run(`UPDATE agents SET last_contact = ? WHERE id IN (${chunk.map(() => '?').join(', ')})`, [at, ...chunk]);
    }
  }

  async reported(id: number, at: string): Promise<void> {
    await this.sql.run(this.s.report, [at, at, id]);
  }

  async allOffline(): Promise<number[]> {
    const ids = ((await this.sql.all(this.s.online)) as { id: number }[]).map((row) => row.id);
    if (ids.length > 0) await this.sql.run(this.s.allOffline);
    return ids;
  }

  async setLock(id: number, lock: boolean, at: string): Promise<void> {
    await this.sql.run(this.s.lock, [lock ? 1 : 0, at, id]);
  }

  async setWipe(id: number, wipe: boolean, at: string): Promise<void> {
    await this.sql.run(this.s.wipe, [wipe ? 1 : 0, at, id]);
  }

  async setEnrollStatus(id: number, status: string, at: string): Promise<void> {
    await this.sql.run(this.s.enrollStatus, [status, at, id]);
  }

  async setFleet(id: number, fleetId: number, at: string): Promise<void> {
    await this.sql.run(this.s.fleet, [fleetId, at, id]);
  }

  async withPendingCommands(): Promise<BrokerAgentRow[]> {
    return (await this.sql.all(this.s.pending)) as BrokerAgentRow[];
  }

  async connectable(): Promise<BrokerAgentRow[]> {
    return (await this.sql.all(this.s.connectable)) as BrokerAgentRow[];
  }
}
