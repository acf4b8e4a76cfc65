import type { Db } from '../db/database.ts';

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

/** enroll_status values; `unenrolling` agents still connect, to receive the Unenroll command. */
export const ENROLL = { enrolled: 'enrolled', unenrolling: 'unenrolling', unenrolled: 'unenrolled', pendingApproval: 'pending_approval' } as const;
export const MAY_CONNECT: readonly string[] = [ENROLL.enrolled, ENROLL.unenrolling];

const COLUMNS = `id, entity_id, fleet_id, name, topic, mqtt_login, mqtt_password_hash, enroll_status, is_online, lock, wipe`;

/** The SQL of the broker: credentials, presence and command flags of agents. */
export class BrokerAgentStore {
  private readonly statements;

  constructor(db: Db) {
    this.statements = {
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
      connectable: db.prepare(`SELECT ${COLUMNS} FROM agents WHERE enroll_status IN ('${ENROLL.enrolled}', '${ENROLL.unenrolling}')`),
      pending: db.prepare(
        `SELECT ${COLUMNS} FROM agents WHERE enroll_status != '${ENROLL.unenrolled}' AND (lock = 1 OR wipe = 1 OR enroll_status = '${ENROLL.unenrolling}')`,
      ),
    };
  }

  /** The agents with this MQTT login (one per entity at most), oldest first. */
  byLogin(login: string): BrokerAgentRow[] {
    return (this.statements.byLogin.all(login) as BrokerAgentRow[]).sort((a, b) => a.id - b.id);
  }

  byId(id: number): BrokerAgentRow | undefined {
    return this.statements.byId.get(id) as BrokerAgentRow | undefined;
  }

  setPresence(id: number, online: boolean, at: string): void {
    this.statements.presence.run(online ? 1 : 0, at, id);
  }

  touch(id: number, at: string): void {
    this.statements.touch.run(at, id);
  }

  reported(id: number, at: string): void {
    this.statements.report.run(at, at, id);
  }

  /** Marks every agent offline; returns the ids that were online. */
  allOffline(): number[] {
    const ids = (this.statements.online.all() as { id: number }[]).map((row) => row.id);
    if (ids.length > 0) this.statements.allOffline.run();
    return ids;
  }

  setLock(id: number, lock: boolean, at: string): void {
    this.statements.lock.run(lock ? 1 : 0, at, id);
  }

  setWipe(id: number, wipe: boolean, at: string): void {
    this.statements.wipe.run(wipe ? 1 : 0, at, id);
  }

  setEnrollStatus(id: number, status: string, at: string): void {
    this.statements.enrollStatus.run(status, at, id);
  }

  /** Agents whose record holds a command they may not have received yet (locked, wiped, unenrolling). */
  withPendingCommands(): BrokerAgentRow[] {
    return this.statements.pending.all() as BrokerAgentRow[];
  }

  /** Every agent that may hold an MQTT account (external brokers are reconciled against them). */
  connectable(): BrokerAgentRow[] {
    return this.statements.connectable.all() as BrokerAgentRow[];
  }

  setFleet(id: number, fleetId: number, at: string): void {
    this.statements.fleet.run(fleetId, at, id);
  }
}
