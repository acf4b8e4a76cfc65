// The reports' SQL (src-main/backend/reports/repository.ts) on both engines of the SQL port: the
// same rows (fleets, devices with their inventories and presence, deployment and value-policy tasks
// with their history, events) give the same backfill, counts, samples, ranges and distributions
// on SQLite and on PostgreSQL (Debian's server, test/helpers/postgres.ts), each schema made by its
// own migrations.
import { afterAll, describe, expect, it } from 'vitest';
import { migrations } from '../../../src-main/backend/db/migrations.ts';
import { postgresMigrations } from '../../../src-main/backend/db/postgres-migrations.ts';
import type { Sql } from '../../../src-main/backend/db/sql.ts';
import { FigureRepository } from '../../../src-main/backend/reports/repository.ts';
import { testEngines } from '../../helpers/sql-engines.ts';

const AT = '2026-05-04T10:00:00.000Z';
const DAY1 = '2026-05-04';
const DAY2 = '2026-05-05';

/** Fleets 2 and 3; four devices (one unenrolled); a file deployed to fleet 2 (one task done on day 1, one failed on day 2); a value policy done; events. */
async function seed(sql: Sql): Promise<void> {
  await sql.run(
    `INSERT INTO fleets (id, entity_id, name, is_default, created_at) VALUES (2, 1, 'North', 0, ?), (3, 1, 'South', 0, ?)`,
    [AT, AT],
  );
  await sql.run(
    `INSERT INTO users (id, login, kind, user_token, default_profile_id, entity_id, created_at) VALUES (1, 'device', 'agent', 'tok', 3, 1, ?)`,
    [AT],
  );
  const devices: [number, number, string, string | null, string | null, string | null, string | null, number, string][] = [
    // id, fleet, created_at, manufacturer, model, os_name, os_version, is_online, enroll_status
    [1, 2, `${DAY1}T08:00:00.000Z`, 'Google', 'Pixel 6', 'Android', '13', 1, 'enrolled'],
    [2, 2, `${DAY1}T09:00:00.000Z`, 'motorola', 'moto g(8)', 'Android', '11', 0, 'enrolled'],
    [3, 3, `${DAY2}T01:00:00.000Z`, null, null, null, null, 1, 'enrolled'],
    [4, 3, `${DAY2}T02:00:00.000Z`, 'Google', 'Pixel 6', 'Android', '13', 0, 'unenrolled'],
  ];
  for (const [id, fleet, created, manufacturer, model, osName, osVersion, online, status] of devices) {
    await sql.run(`INSERT INTO computers (id, entity_id, name, serial, created_at, updated_at) VALUES (?, 1, ?, ?, ?, ?)`, [
      id,
      `SN${id}`,
      `SN${id}`,
      created,
      created,
    ]);
    await sql.run(
      `INSERT INTO agents (id, entity_id, computer_id, fleet_id, account_user_id, name, serial, version, type, topic, mqtt_login,
         created_at, updated_at, manufacturer, model, os_name, os_version, is_online, enroll_status)
       VALUES (?, 1, ?, ?, 1, ?, ?, '1.0.0', 'android', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        id,
        id,
        fleet,
        `SN${id}`,
        `SN${id}`,
        `/1/agent/SN${id}`,
        `SN${id}`,
        created,
        created,
        manufacturer,
        model,
        osName,
        osVersion,
        online,
        status,
      ],
    );
  }
  await sql.run(
    `INSERT INTO policy_assignments (id, entity_id, policy, value, item_name, fleet_id, target_name, topic, payload, created_at)
     VALUES (1, 1, 'deployFile', NULL, 'handbook.pdf', 2, 'North', 't', '{}', ?), (2, 1, 'passwordMinLength', '6', '', 3, 'South', 't', '{}', ?)`,
    [AT, AT],
  );
  const tasks: [number, number, number, string][] = [
    [1, 1, 1, 'done'],
    [2, 1, 2, 'failed'],
    [3, 2, 3, 'done'],
  ];
  for (const [id, assignment, agent, status] of tasks)
    await sql.run(
      `INSERT INTO policy_tasks (id, deployment_id, agent_id, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
      [id, assignment, agent, status, AT, AT],
    );
  const history: [number, string, string][] = [
    [1, 'pending', `${DAY1}T10:00:00.000Z`],
    [1, 'done', `${DAY1}T11:00:00.000Z`],
    [2, 'failed', `${DAY2}T03:00:00.000Z`],
    [3, 'done', `${DAY2}T04:00:00.000Z`],
  ];
  for (const [task, status, at] of history)
    await sql.run(`INSERT INTO task_history (task_id, status, source, at) VALUES (?, ?, 'mqtt', ?)`, [task, status, at]);
  await sql.run(
    `INSERT INTO events (id, at, type, agent_id, message, data) VALUES (1, ?, 'server.started', NULL, 'started', NULL)`,
    [AT],
  );
}

const byKey = (rows: { day: string; key: string; value: number }[]) => rows.map((row) => `${row.day} ${row.key}=${row.value}`);

describe.each(testEngines('reports'))('the daily figures on $name', (engine) => {
  afterAll(() => engine.cleanup());

  it('backfills, counts, samples and reads back the same figures', async () => {
    const sql = await engine.open();
    try {
      for (const migration of engine.name === 'postgres' ? postgresMigrations : migrations) await sql.exec(migration.sql);
      await seed(sql);
      const figures = new FigureRepository(sql);
      expect(await figures.cursor()).toBeUndefined();
      await sql.transaction(() => figures.backfill(AT));
      expect(await figures.cursor()).toEqual({ event_id: 1, backfilled_at: AT, sampled_at: null });
      const everything = JSON.stringify([2, 3]);
      expect(byKey(await figures.range('enrolled', DAY1, DAY2, null))).toEqual([`${DAY1} =2`, `${DAY2} =2`]);
      expect(byKey(await figures.range('enrolled', DAY1, DAY2, JSON.stringify([3])))).toEqual([`${DAY2} =2`]);
      // The value policy's task is not a deployment.
      expect(byKey(await figures.range('deploy', DAY1, DAY2, everything))).toEqual([`${DAY1} done=1`, `${DAY2} failed=1`]);

      // Counted as they happen: one more on day 2 in fleet 3, twice.
      await figures.add(DAY2, 3, 'enrolled', '');
      await figures.add(DAY2, 3, 'enrolled', '', 2);
      expect(byKey(await figures.range('enrolled', DAY2, DAY2, null))).toEqual([`${DAY2} =5`]);
      expect(await figures.fleetOfAgent(3)).toBe(3);
      expect(await figures.fleetOfAgent(99)).toBeUndefined();
      expect(await figures.fleetOfDeploymentTask(2)).toBe(2);
      expect(await figures.fleetOfDeploymentTask(3)).toBeUndefined(); // a value policy's task

      // Events after the cursor, of the counted types only, oldest first; the cursor only moves on.
      await sql.run(
        `INSERT INTO events (id, at, type, agent_id, message, data) VALUES
           (2, ?, 'agent.enrolled', 3, 'enrolled', NULL), (3, ?, 'agent.online', 3, 'online', NULL),
           (4, ?, 'task.status', 2, 'failed', '{"task_id":2,"status":"failed"}')`,
        [AT, AT, AT],
      );
      expect(await figures.lastEventId()).toBe(4);
      expect((await figures.countedEvents(1, 4, 10)).map((event) => [event.id, event.type])).toEqual([
        [2, 'agent.enrolled'],
        [4, 'task.status'],
      ]);
      expect((await figures.countedEvents(1, 4, 1)).map((event) => event.id)).toEqual([2]);
      await figures.advance(4);
      await figures.advance(2);
      expect((await figures.cursor())?.event_id).toBe(4);

      // A sample at 10:xx on day 2, then one at 11:xx with device 1 gone offline.
      await sql.transaction(() => figures.sample(DAY2, '10', `${DAY2}T10:05:00.000Z`));
      await sql.run(`UPDATE agents SET is_online = 0 WHERE id = 1`);
      await sql.transaction(() => figures.sample(DAY2, '11', `${DAY2}T11:05:00.000Z`));
      expect((await figures.cursor())?.sampled_at).toBe(`${DAY2}T11:05:00.000Z`);
      expect(byKey(await figures.range('online', DAY2, DAY2, null))).toEqual([`${DAY2} 10=2`, `${DAY2} 11=1`]);
      expect(byKey(await figures.range('online', DAY2, DAY2, JSON.stringify([2])))).toEqual([`${DAY2} 10=1`, `${DAY2} 11=0`]);
      expect(byKey(await figures.range('devices', DAY2, DAY2, null))).toEqual([`${DAY2} =3`]);
      // Device 1 done, device 2 failed (fleet 2's file); device 3 done (its value policy). The unenrolled one is not counted.
      expect(byKey(await figures.range('compliance', DAY2, DAY2, null))).toEqual([`${DAY2} done=2`, `${DAY2} failed=1`]);
      expect(byKey(await figures.range('os', DAY2, DAY2, null))).toEqual([
        `${DAY2} Android 11=1`,
        `${DAY2} Android 13=1`,
        `${DAY2} No inventory yet=1`,
      ]);
      expect(await figures.current('model', null)).toEqual([
        { key: 'Google Pixel 6', devices: 1 },
        { key: 'No inventory yet', devices: 1 },
        { key: 'motorola moto g(8)', devices: 1 },
      ]);
      expect(await figures.current('os', JSON.stringify([2]))).toEqual([
        { key: 'Android 11', devices: 1 },
        { key: 'Android 13', devices: 1 },
      ]);
      expect(await figures.current('os', JSON.stringify([]))).toEqual([]);
    } finally {
      await sql.close();
    }
  });
});
