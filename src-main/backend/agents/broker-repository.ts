// The SQL the broker runs on agents: logins, presence and last contact, and the command flags.
import type { Db } from '../db/database.ts';
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
  byLogin(login: string): BrokerAgentRow[];
  byId(id: number): BrokerAgentRow | undefined;
  setPresence(id: number, online: boolean, at: string): void;
  touch(id: number, at: string): void;
  reported(id: number, at: string): void;
  /** Marks every agent offline; returns the ids that were online. */
  allOffline(): number[];
  setLock(id: number, lock: boolean, at: string): void;
  setWipe(id: number, wipe: boolean, at: string): void;
  setEnrollStatus(id: number, status: string, at: string): void;
  setFleet(id: number, fleetId: number, at: string): void;
  /** Agents whose record holds a command they may not have received yet (locked, wiped, unenrolling). */
  withPendingCommands(): BrokerAgentRow[];
  /** Every agent that may hold an MQTT account (external brokers are reconciled against them). */
  connectable(): BrokerAgentRow[];
}

const COLUMNS = `id, entity_id, fleet_id, name, topic, mqtt_login, mqtt_password_hash, enroll_status, is_online, lock, wipe`;

export class BrokerAgentRepository implements BrokerAgentStore {
  private readonly s;

  constructor(db: Db) {
    this.s = {
      // Sorted below rather than by ORDER BY: SQLite ran this query (every MQTT login) 4x slower so.
      byLogin: db.prepare(`SELECT ${COLUMNS} FROM agents WHERE mqtt_login = ?`),
      byId: db.prepare(`SELECT ${COLUMNS} FROM agents WHERE id = ?`),
      presence: db.prepare(`UPDATE agents SET is_online = ?, last_contact = ? WHERE id = ?`),
      touch: db.prepare(`UPDATE agents SET last_contact = ? WHERE id = ?`),
      report: db.prepare(`UPDATE agents SET last_report = ?, last_contact = ? WHERE id = ?`),
      online: db.prepare(`SELECT id FROM agents WHERE is_online = 1`),
      allOffline: db.prepare(`UPDATE agents SET is_online = 0 WHERE is_online = 1`),
      lock: db.prepare(`UPDATE agents SET lock = ?, updated_at = ? WHERE id = ?`),
      wipe: db.prepare(`UPDATE agents SET wipe = ?, updated_at = ? WHERE id = ?`),
      enrollStatus: db.prepare(`UPDATE agents SET enroll_status = ?, updated_at = ? WHERE id = ?`),
      fleet: db.prepare(`UPDATE agents SET fleet_id = ?, updated_at = ? WHERE id = ?`),
      connectable: db.prepare(
        `SELECT ${COLUMNS} FROM agents WHERE enroll_status IN ('${ENROLL_STATUS.enrolled}', '${ENROLL_STATUS.unenrolling}')`,
      ),
      pending: db.prepare(
        `SELECT ${COLUMNS} FROM agents WHERE enroll_status != '${ENROLL_STATUS.unenrolled}' AND (lock = 1 OR wipe = 1 OR enroll_status = '${ENROLL_STATUS.unenrolling}')`,
      ),
    };
  }

  byLogin(login: string): BrokerAgentRow[] {
    return (this.s.byLogin.all(login) as BrokerAgentRow[]).sort((a, b) => a.id - b.id);
  }

  byId(id: number): BrokerAgentRow | undefined {
    return this.s.byId.get(id) as BrokerAgentRow | undefined;
  }

  setPresence(id: number, online: boolean, at: string): void {
    this.s.presence.run(online ? 1 : 0, at, id);
  }

  touch(id: number, at: string): void {
    this.s.touch.run(at, id);
  }

  reported(id: number, at: string): void {
    this.s.report.run(at, at, id);
  }

  allOffline(): number[] {
    const ids = (this.s.online.all() as { id: number }[]).map((row) => row.id);
    if (ids.length > 0) this.s.allOffline.run();
    return ids;
  }

  setLock(id: number, lock: boolean, at: string): void {
    this.s.lock.run(lock ? 1 : 0, at, id);
  }

  setWipe(id: number, wipe: boolean, at: string): void {
    this.s.wipe.run(wipe ? 1 : 0, at, id);
  }

  setEnrollStatus(id: number, status: string, at: string): void {
    this.s.enrollStatus.run(status, at, id);
  }

  setFleet(id: number, fleetId: number, at: string): void {
    this.s.fleet.run(fleetId, at, id);
  }

  withPendingCommands(): BrokerAgentRow[] {
    return this.s.pending.all() as BrokerAgentRow[];
  }

  connectable(): BrokerAgentRow[] {
    return this.s.connectable.all() as BrokerAgentRow[];
  }
}
