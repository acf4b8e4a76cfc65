import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { migrate, openDatabase } from '../../../src-main/backend/db/database.ts';
import { migrations } from '../../../src-main/backend/db/migrations.ts';

const dirs: string[] = [];
const tempFile = () => {
  const dir = mkdtempSync(join(tmpdir(), 'mdm-migrate-'));
  dirs.push(dir);
  return join(dir, 'db.sqlite');
};
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const latest = Math.max(...migrations.map((m) => m.version));

describe('migrations', () => {
  it('bring a new file to the latest version with WAL and foreign keys on', () => {
    const db = openDatabase(tempFile());
    expect(db.pragma('user_version', { simple: true })).toBe(latest);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(statSync(db.name).mode & 0o777).toBe(0o600);
    const tables = (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).all() as { name: string }[]).map(
      (t) => t.name,
    );
    for (const table of [
      'entities',
      'users',
      'profiles',
      'profile_assignments',
      'sessions',
      'invitations',
      'invitation_log',
      'fleets',
      'computers',
      'agents',
      'files',
      'packages',
      'events',
      'settings',
    ]) {
      expect(tables).toContain(table);
    }
    db.close();
  });

  it('are idempotent: running them twice changes nothing', () => {
    const file = tempFile();
    openDatabase(file).close();
    const db = openDatabase(file);
    expect(migrate(db)).toEqual([]);
    expect((db.prepare('SELECT count(*) AS n FROM fleets').get() as { n: number }).n).toBe(1);
    db.close();
  });

  it('upgrade a database made by an older version and keep its data', () => {
    const file = tempFile();
    const old = openDatabase(
      file,
      migrations.filter((m) => m.version === 1),
    );
    expect(old.pragma('user_version', { simple: true })).toBe(1);
    old.prepare(`INSERT INTO fleets (entity_id, name, created_at) VALUES (1, 'Sales', '2026-01-01T00:00:00Z')`).run();
    old.close();
    const db = openDatabase(file);
    expect(db.pragma('user_version', { simple: true })).toBe(latest);
    expect(db.prepare(`SELECT name FROM fleets WHERE name = 'Sales'`).get()).toEqual({ name: 'Sales' });
    db.close();
  });

  it('give colliding MQTT logins of an older database to the oldest agent only, and keep logins unique', () => {
    const file = tempFile();
    const old = openDatabase(
      file,
      migrations.filter((m) => m.version <= 2),
    );
    const now = '2026-01-01T00:00:00Z';
    const agent = (login: string, n: number) => {
      old
        .prepare(
          `INSERT INTO users (id, login, kind, user_token, default_profile_id, entity_id, created_at) VALUES (?, ?, 'agent', ?, 3, 1, ?)`,
        )
        .run(n, `agent:${n}`, `token${n}`, now);
      old
        .prepare(`INSERT INTO computers (id, entity_id, name, created_at, updated_at) VALUES (?, 1, ?, ?, ?)`)
        .run(n, login, now, now);
      old
        .prepare(
          `INSERT INTO agents (id, entity_id, computer_id, fleet_id, account_user_id, name, serial, uuid, version, type, topic, mqtt_login, mqtt_password_hash, created_at, updated_at)
         VALUES (?, 1, ?, 1, ?, ?, ?, ?, '1.0', 'android', ?, ?, 'sha256$x$y', ?, ?)`,
        )
        .run(n, n, n, login, n === 1 ? null : login, n === 1 ? login : null, `/1/agent/${login}`, login, now, now);
    };
    agent('SHARED-ID-1', 1); // uuid only
    agent('SHARED-ID-1', 2); // serial: the same login and topic, so it received the first one's commands
    agent('OTHER', 3);
    old.close();
    const db = openDatabase(file);
    const rows = db.prepare(`SELECT id, mqtt_login, topic, mqtt_password_hash FROM agents ORDER BY id`).all();
    expect(rows).toEqual([
      { id: 1, mqtt_login: 'SHARED-ID-1', topic: '/1/agent/SHARED-ID-1', mqtt_password_hash: 'sha256$x$y' },
      { id: 2, mqtt_login: 'SHARED-ID-1#2', topic: '/1/agent/SHARED-ID-1#2', mqtt_password_hash: null },
      { id: 3, mqtt_login: 'OTHER', topic: '/1/agent/OTHER', mqtt_password_hash: 'sha256$x$y' },
    ]);
    expect(db.prepare(`SELECT agent_id, type FROM events WHERE type = 'agent.login_collision'`).all()).toEqual([
      { agent_id: 2, type: 'agent.login_collision' },
    ]);
    expect(() => db.prepare(`UPDATE agents SET mqtt_login = 'OTHER' WHERE id = 1`).run()).toThrow(/UNIQUE/);
    db.close();
  });

  it('rebuild the deployments of an older database as policy assignments, keeping every task and its history', () => {
    const file = tempFile();
    const old = openDatabase(
      file,
      migrations.filter((m) => m.version <= 11),
    );
    const now = '2026-01-01T00:00:00Z';
    old
      .prepare(
        `INSERT INTO users (id, login, kind, user_token, default_profile_id, entity_id, created_at) VALUES (9, 'agent:9', 'agent', 't9', 3, 1, ?)`,
      )
      .run(now);
    old.prepare(`INSERT INTO computers (id, entity_id, name, created_at, updated_at) VALUES (9, 1, 'SN9', ?, ?)`).run(now, now);
    old
      .prepare(
        `INSERT INTO agents (id, entity_id, computer_id, fleet_id, account_user_id, name, serial, version, type, topic, mqtt_login, created_at, updated_at)
         VALUES (9, 1, 9, 1, 9, 'SN9', 'SN9', '1.0', 'android', '/1/agent/SN9', 'SN9', ?, ?)`,
      )
      .run(now, now);
    old
      .prepare(
        `INSERT INTO deployments (id, entity_id, policy, item_kind, item_id, item_name, fleet_id, target_name, topic, payload, created_at)
         VALUES (5, 1, 'deployApp', 'package', 3, 'app.apk', 1, 'fleet "Default fleet"', '/1/fleet/1/Policy/deployApp/Task/5', '{"deployApp":"org.x","id":3,"versionCode":1,"taskId":5}', ?)`,
      )
      .run(now);
    old
      .prepare(
        `INSERT INTO deployment_tasks (id, deployment_id, agent_id, status, created_at, updated_at) VALUES (7, 5, 9, 'done', ?, ?)`,
      )
      .run(now, now);
    old
      .prepare(
        `INSERT INTO task_history (task_id, status, source, at) VALUES (7, 'pending', 'server', ?), (7, 'done', 'mqtt', ?)`,
      )
      .run(now, now);
    old.close();

    const db = openDatabase(file);
    expect(db.prepare(`SELECT id, policy, value, item_name, payload FROM policy_assignments`).all()).toEqual([
      {
        id: 5,
        policy: 'deployApp',
        value: null,
        item_name: 'app.apk',
        payload: '{"deployApp":"org.x","id":3,"versionCode":1,"taskId":5}',
      },
    ]);
    expect(db.prepare(`SELECT id, deployment_id, status FROM policy_tasks`).all()).toEqual([
      { id: 7, deployment_id: 5, status: 'done' },
    ]);
    expect(db.prepare(`SELECT status, source FROM task_history WHERE task_id = 7 ORDER BY id`).all()).toEqual([
      { status: 'pending', source: 'server' },
      { status: 'done', source: 'mqtt' },
    ]);
    expect(db.pragma('foreign_key_check')).toEqual([]);
    expect(
      db.prepare(`SELECT name FROM sqlite_master WHERE name LIKE 'deployment%' OR name LIKE 'policy%' ORDER BY name`).all(),
    ).toEqual(
      [
        'policy_assignments',
        'policy_assignments_agent',
        'policy_assignments_fleet',
        'policy_assignments_view', // version 23: the device-level assignments carrying a view's
        'policy_tasks',
        'policy_tasks_agent',
      ].map((name) => ({ name })),
    );
    // (Version 17 renamed the tables: the rows, checks and foreign keys went with them.)
    // The new statuses and a value policy are taken; the foreign keys still cascade from the renamed tables.
    db.prepare(`UPDATE policy_tasks SET status = 'overriden' WHERE id = 7`).run();
    db.prepare(
      `INSERT INTO policy_assignments (id, entity_id, policy, value, item_name, fleet_id, target_name, topic, payload, created_at)
       VALUES (6, 1, 'disableCamera', 'true', 'true', 1, 'fleet', 't', '{}', ?)`,
    ).run(now);
    expect(() => db.prepare(`UPDATE policy_tasks SET status = 'bogus' WHERE id = 7`).run()).toThrow(/CHECK/);
    db.prepare(`DELETE FROM policy_assignments WHERE id = 5`).run();
    expect(db.prepare(`SELECT count(*) AS n FROM task_history`).get()).toEqual({ n: 0 });
    db.close();
  });

  it('roll back a failing migration whole and refuse a newer database', () => {
    const file = tempFile();
    const broken = [
      ...migrations,
      { version: latest + 1, name: 'broken', sql: `CREATE TABLE half (id INTEGER); INSERT INTO nowhere VALUES (1);` },
    ];
    expect(() => openDatabase(file, broken)).toThrow();
    const db = openDatabase(file);
    expect(db.pragma('user_version', { simple: true })).toBe(latest);
    expect(db.prepare(`SELECT name FROM sqlite_master WHERE name = 'half'`).get()).toBeUndefined();
    db.pragma(`user_version = ${latest + 5}`);
    db.close();
    expect(() => openDatabase(file)).toThrow(/written by a newer version of MDM Console \(database schema/);
  });

  it('keep the event history append-only and enforce one default fleet per entity', () => {
    const db = openDatabase(tempFile());
    db.prepare(`INSERT INTO events (at, type, message) VALUES ('now', 't', 'm')`).run();
    expect(() => db.prepare(`UPDATE events SET message = 'x'`).run()).toThrow(/append-only/);
    expect(() => db.prepare(`DELETE FROM events`).run()).toThrow(/append-only/);
    expect(() =>
      db.prepare(`INSERT INTO fleets (entity_id, name, is_default, created_at) VALUES (1, 'Second', 1, 'now')`).run(),
    ).toThrow();
    expect(() =>
      db
        .prepare(
          `INSERT INTO users (login, kind, user_token, default_profile_id, entity_id, created_at) VALUES ('A@x.org', 'person', 't1', 1, 1, 'now'), ('a@X.org', 'person', 't2', 1, 1, 'now')`,
        )
        .run(),
    ).toThrow(/UNIQUE/);
    db.close();
  });
});
