// The live events are one typed stream (issue 22, item 4): `EventLog.record` takes only a type of the
// contract's ServerEvents map, with that type's data; readers narrow an event by its type and get
// that data. The `@ts-expect-error` lines are the proof: `npx tsc -p tsconfig.json` (stage 1 of
// `npm test`) fails if any of them stops being an error. The rest runs on a real SQLite file.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteSql } from '../../../src-main/backend/db/sqlite-sql.ts';
import { UnitOfWork } from '../../../src-main/backend/db/unit-of-work.ts';
import { EventLog } from '../../../src-main/backend/events/event-log.ts';
import { SqliteEventRepository } from '../../../src-main/backend/events/event-repository.ts';
import type { ServerEvent, StreamEvent } from '../../../src-shared/contract/index.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function eventLog() {
  const dir = mkdtempSync(join(tmpdir(), 'mdm-events-'));
  dirs.push(dir);
  const db = openSqliteSql(join(dir, 'db.sqlite'));
  return { db, events: new EventLog(new SqliteEventRepository(db), new UnitOfWork(db)) };
}

/** Never called: it only has to compile, each marked line being refused. */
export async function refusedAtCompileTime(events: EventLog, event: StreamEvent): Promise<void> {
  // @ts-expect-error a type that is not in the ServerEvents map
  await events.record('fleet.creatd', 'typo', {}, { fleet_id: 1, name: 'x', before: null, after: null });
  // @ts-expect-error the data of another type
  await events.record('fleet.created', 'wrong field', {}, { fleetId: 1 });
  // @ts-expect-error a field of the wrong type
  await events.record('fleet.created', 'wrong type', {}, { fleet_id: '1' });
  // @ts-expect-error data is required where the map gives a shape
  await events.record('fleet.created', 'no data');
  // @ts-expect-error no data where the map says null
  await events.record('agent.approved', 'data where none is', { agentId: 1 }, { id: 1 });
  await events.record('agent.approved', 'none is fine', { agentId: 1 });
  if (event.type === 'agent.ping_reply' && event.data) {
    const rtt: number = event.data.rtt_ms;
    // @ts-expect-error a ping reply's data has no such field
    void event.data.fleet_id;
    void rtt;
  }
  // @ts-expect-error not narrowed: the data of some event type, not a ping reply's
  void event.data?.rtt_ms;
}

describe('typed events', () => {
  it('stores and reads back each type with its data; a reader narrows by type', async () => {
    const { db, events } = eventLog();
    const seen: ServerEvent[] = [];
    events.subscribe((event) => seen.push(event));
    const fleet = await events.record(
      'fleet.created',
      'Fleet "Sales" created',
      { entityId: 1 },
      {
        fleet_id: 7,
        name: 'Sales',
        before: null,
        after: { name: 'Sales' },
      },
    );
    expect(fleet.data).toMatchObject({ fleet_id: 7, name: 'Sales' });
    await events.record('agent.ping_reply', 'answered', { agentId: 3 }, { payload: '!', rtt_ms: 12, transport: 'mqtt' });
    await events.record('server.started', 'up');
    const [latest] = await events.latest(1);
    expect(latest).toMatchObject({ type: 'server.started', data: null });
    const rtts = (await events.latest(10)).flatMap((event) =>
      event.type === 'agent.ping_reply' && event.data ? [event.data.rtt_ms] : [],
    );
    expect(rtts).toEqual([12]);
    expect(seen.map((event) => event.type)).toEqual(['fleet.created', 'agent.ping_reply', 'server.started']);
    expect(refusedAtCompileTime).toBeTypeOf('function');
    await db.close();
  });
});
