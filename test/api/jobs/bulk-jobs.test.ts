// Bulk jobs (issue 25, item 1) over real HTTP, MQTT and SQLite: one request acts on a selection of
// devices — exactly those, in the caller's fleets — records each device's result (sent, answered,
// offline, refused) and one audit entry; destructive actions need the count the caller saw.
import type { MqttClient } from 'mqtt';
import { describe, expect, it } from 'vitest';
import type { TestBackend } from '../../helpers/backend.ts';
import {
  agentRow,
  connectAgent,
  enrollAgent,
  eventually,
  inbox,
  nextEvent,
  ofAgent,
  useBrokerBackend,
  type EnrolledAgent,
} from '../../helpers/mqtt.ts';

let t: TestBackend;
const fleet = { warehouse: 0, field: 0 };

useBrokerBackend(async (backend) => {
  t = backend;
  fleet.warehouse = (await t.admin('POST', '/fleets', { name: 'Warehouse' })).body.id;
  fleet.field = (await t.admin('POST', '/fleets', { name: 'Field' })).body.id;
});

type Box = ReturnType<typeof inbox>;
interface Device {
  agent: EnrolledAgent;
  client: MqttClient | null;
  box: Box | null;
}

/** Enrolls a device in `fleetName`; connected and subscribed to its topic unless `offline`. */
async function device(fleetName: string, { offline = false } = {}): Promise<Device> {
  const agent = await enrollAgent(t, { fleet: fleetName });
  if (offline) return { agent, client: null, box: null };
  const online = nextEvent(t, ofAgent(agent.id, 'agent.online'));
  const client = await connectAgent(t, agent);
  const box = inbox(client);
  await client.subscribeAsync({ [`${agent.topic}/#`]: { qos: 1 } });
  await online;
  return { agent, client, box };
}

const job = (id: number) => t.admin('GET', `/jobs/${id}`);
/** The job once it has acted on every device, as the API shows it. */
const finished = (id: number) =>
  eventually(async () => {
    const answer = await job(id);
    return answer.body.state === 'done' ? answer.body : false;
  });
const resultOf = (detail: { results: { agent_id: number; status: string }[] }, agentId: number) =>
  detail.results.find((result) => result.agent_id === agentId);
const auditAfter = (id: number) =>
  t.db.prepare('SELECT action, target_kind, target_id, message FROM audit_log WHERE id > ? ORDER BY id').all(id) as {
    action: string;
    target_kind: string | null;
    target_id: number | null;
    message: string;
  }[];
const lastAuditId = () => (t.db.prepare('SELECT coalesce(max(id), 0) AS id FROM audit_log').get() as { id: number }).id;

/** Proves a message did NOT reach `box`: a ping sent after it arrives, and nothing matching came before. */
async function neverGot(target: Device, match: (m: { topic: string; text: string }) => boolean) {
  expect((await t.admin('POST', `/agents/${target.agent.id}/commands`, { command: 'ping' })).status).toBe(202);
  await target.box!.next((m) => m.topic.endsWith('/Command/Ping'));
  expect(target.box!.messages.filter(match)).toEqual([]);
}

describe('a bulk lock of a filtered selection', () => {
  let jobId = 0;
  let asleep: Device;

  it('is one request answered at once with the job, which reaches exactly the selected devices and records each result', async () => {
    const inWarehouse = [await device('Warehouse'), await device('Warehouse'), await device('Warehouse')];
    asleep = await device('Warehouse', { offline: true });
    const inField = [await device('Field'), await device('Field')];
    const before = lastAuditId();
    const started = await t.admin('POST', '/jobs', { action: 'lock', selection: { filter: { fleet: 'Warehouse' } } });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ action: 'lock', total: 4, selection: 'fleet Warehouse' });
    jobId = started.body.id;

    for (const { box } of inWarehouse) await box!.next((m) => m.topic.endsWith('/Command/Lock') && m.text === '{"lock":"now"}');
    const detail = await finished(jobId);
    expect(detail.counts).toMatchObject({ sent: 3, offline: 1, refused: 0, failed: 0 });
    expect(detail.processed).toBe(4);
    for (const { agent } of inWarehouse) expect(resultOf(detail, agent.id)).toMatchObject({ status: 'sent', reason: null });
    expect(resultOf(detail, asleep.agent.id)).toMatchObject({
      status: 'offline',
      reason: expect.stringMatching(/kept until it connects/),
    });
    expect(detail.results).toHaveLength(4);
    // The records hold the lock, as a single Lock leaves them (and only the selected ones).
    for (const { agent } of [...inWarehouse, asleep]) expect((await agentRow(t, agent.id)).lock).toBe(1);
    for (const { agent } of inField) expect((await agentRow(t, agent.id)).lock).toBe(0);
    for (const other of inField) await neverGot(other, (m) => m.topic.endsWith('/Command/Lock'));

    // One audit entry for the job, naming the action, the selection and the count; none per device.
    const entries = auditAfter(before).filter((entry) => entry.target_kind !== 'agent' || entry.action !== 'agent.command');
    expect(auditAfter(before).filter((entry) => entry.action === 'agent.command')).toEqual([
      // the two single pings of neverGot
      expect.objectContaining({ target_id: inField[0]!.agent.id }),
      expect.objectContaining({ target_id: inField[1]!.agent.id }),
    ]);
    expect(entries.filter((entry) => entry.action.startsWith('job.'))).toEqual([
      {
        action: 'job.started',
        target_kind: 'job',
        target_id: jobId,
        message: `Lock: 4 devices (fleet Warehouse), job #${jobId}`,
      },
    ]);

    // An answer turns a result to answered; the offline device gets the lock when it connects.
    // The reference agent answers a Lock with a Status/Ping.
    const [first] = inWarehouse;
    await first!.client!.publishAsync(`${first!.agent.topic}/Status/Ping`, '!', { qos: 1 });
    await eventually(async () => resultOf((await job(jobId)).body, first!.agent.id)?.status === 'answered');

    const client = await connectAgent(t, asleep.agent);
    const box = inbox(client);
    await client.subscribeAsync({ [`${asleep.agent.topic}/#`]: { qos: 1 } });
    const retained = await box.next((m) => m.topic.endsWith('/Command/Lock'));
    expect(retained).toMatchObject({ text: '{"lock":"now"}', retain: true });
    expect((await job(jobId)).body.counts).toMatchObject({ sent: 2, answered: 1, offline: 1 });
  });

  it('the jobs history lists it with its counts; a result filter narrows the detail', async () => {
    const list = await t.admin('GET', '/jobs');
    expect(list.status).toBe(200);
    expect(list.body.items[0]).toMatchObject({ id: jobId, action: 'lock', state: 'done', total: 4 });
    const offline = await t.admin('GET', `/jobs/${jobId}?status=offline`);
    expect(offline.body.results.map((r: { agent_id: number }) => r.agent_id)).toEqual([asleep.agent.id]);
    expect((await t.admin('GET', '/jobs/999999')).status).toBe(404);
  });
});

describe('a bulk ping by ids', () => {
  it('sends to the connected ones, records offline ones as offline (not sent), and their replies as answered', async () => {
    const awake = [await device('Field'), await device('Field')];
    const away = await device('Field', { offline: true });
    const started = await t.admin('POST', '/jobs', {
      action: 'ping',
      selection: { ids: [...awake.map((d) => d.agent.id), away.agent.id, 987654] },
    });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ total: 4, selection: '4 devices chosen' });
    for (const { client, box, agent } of awake) {
      await box!.next((m) => m.topic.endsWith('/Command/Ping'));
      await client!.publishAsync(`${agent.topic}/Status/Ping`, '!', { qos: 1 });
    }
    const detail = await eventually(async () => {
      const answer = (await job(started.body.id)).body;
      return answer.state === 'done' && answer.counts.answered === 2 ? answer : false;
    });
    expect(resultOf(detail, away.agent.id)).toMatchObject({ status: 'offline', reason: expect.stringMatching(/not sent/) });
    expect(resultOf(detail, 987654)).toMatchObject({ status: 'refused', reason: 'No such device in the fleets you may act on' });
    for (const { agent } of awake)
      expect(resultOf(detail, agent.id)).toMatchObject({ status: 'answered', answered_at: expect.any(String) });
  });

  it('an unenrolled device is refused with its reason, the others still go', async () => {
    const gone = await device('Field');
    const kept = await device('Field');
    t.db.prepare(`UPDATE agents SET enroll_status = 'unenrolled' WHERE id = ?`).run(gone.agent.id);
    const started = await t.admin('POST', '/jobs', { action: 'inventory', selection: { ids: [gone.agent.id, kept.agent.id] } });
    await kept.box!.next((m) => m.topic.endsWith('/Command/Inventory'));
    const detail = await finished(started.body.id);
    expect(resultOf(detail, gone.agent.id)).toMatchObject({ status: 'refused', reason: expect.stringMatching(/is unenrolled/) });
    expect(resultOf(detail, kept.agent.id)).toMatchObject({ status: 'sent' });
    t.db.prepare(`UPDATE agents SET enroll_status = 'enrolled' WHERE id = ?`).run(gone.agent.id);
    await neverGot(gone, (m) => m.topic.endsWith('/Command/Inventory'));
  });
});

describe('the filter language and saved views', () => {
  it('a where expression or a view selects what GET /api/agents?where= lists, the table filters on top', async () => {
    const a = await device('Field');
    const b = await device('Field');
    const c = await device('Warehouse');
    const where = `serial=${a.agent.serial} OR serial=${b.agent.serial} OR serial=${c.agent.serial}`;
    const listed = await t.admin('GET', `/agents?where=${encodeURIComponent(where)}`);
    expect(listed.body.items).toHaveLength(3);
    const started = await t.admin('POST', '/jobs', { action: 'ping', selection: { filter: { where, fleet: 'Field' } } });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ total: 2, selection: `fleet Field, where ${where}` });
    for (const { box } of [a, b]) await box!.next((m) => m.topic.endsWith('/Command/Ping'));
    const detail = await finished(started.body.id);
    expect(detail.results.map((r: { agent_id: number }) => r.agent_id).sort()).toEqual([a.agent.id, b.agent.id].sort());

    expect((await t.admin('POST', '/views', { name: 'Bulk trio', where })).status).toBe(201);
    const byView = await t.admin('POST', '/jobs', { action: 'ping', selection: { filter: { view: 'Bulk trio' } } });
    expect(byView.body).toMatchObject({ total: 3, selection: 'view "Bulk trio"' });
    const bad = await t.admin('POST', '/jobs', { action: 'ping', selection: { filter: { where: 'os<<10' } } });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: 'ERROR_BAD_WHERE' });
    expect((await t.admin('POST', '/jobs', { action: 'ping', selection: { filter: { view: 'No such view' } } })).status).toBe(
      400,
    );
  });
});

describe('scope: a scoped operator', () => {
  it('acts on the devices of their fleets only, whatever the selection says', async () => {
    const mine = await device('Warehouse');
    const theirs = await device('Field');
    const created = await t.admin('POST', '/tokens', { name: 'helpdesk', role: 'operator', fleet_ids: [fleet.warehouse] });
    expect(created.status).toBe(201);
    const asOperator = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${t.backend.info.admin_url}/api${path}`, {
        method,
        headers: {
          authorization: `Bearer ${created.body.token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as any };
    };

    // "Every device" is every device of Warehouse.
    const all = await asOperator('POST', '/jobs', { action: 'ping', selection: { filter: {} } });
    expect(all.status).toBe(202);
    await mine.box!.next((m) => m.topic.endsWith('/Command/Ping'));
    // Naming another fleet's device by id: refused as if it did not exist, and never sent.
    const byId = await asOperator('POST', '/jobs', { action: 'lock', selection: { ids: [mine.agent.id, theirs.agent.id] } });
    expect(byId.status).toBe(202);
    const detail = await eventually(async () => {
      const answer = await asOperator('GET', `/jobs/${byId.body.id}`);
      return answer.body.state === 'done' ? answer.body : false;
    });
    expect(resultOf(detail, theirs.agent.id)).toMatchObject({
      status: 'refused',
      reason: 'No such device in the fleets you may act on',
    });
    expect((await agentRow(t, theirs.agent.id)).lock).toBe(0);
    await neverGot(theirs, (m) => m.topic.endsWith('/Command/Lock'));
    expect(theirs.box!.messages.filter((m) => m.topic.endsWith('/Command/Ping'))).toHaveLength(1); // neverGot's own

    // A fleet they may not see is unknown; an unscoped job of every fleet is not in their history.
    expect((await asOperator('POST', '/jobs', { action: 'ping', selection: { filter: { fleet: 'Field' } } })).status).toBe(400);
    const everywhere = await t.admin('POST', '/jobs', { action: 'ping', selection: { ids: [theirs.agent.id] } });
    const history = await asOperator('GET', '/jobs');
    expect(history.body.items.map((item: { id: number }) => item.id)).not.toContain(everywhere.body.id);
    expect((await asOperator('GET', `/jobs/${everywhere.body.id}`)).status).toBe(404);
    // Permissions are the single-device routes': an operator may not delete or move.
    expect(
      (await asOperator('POST', '/jobs', { action: 'delete', selection: { ids: [mine.agent.id] }, expected_count: 1 })).status,
    ).toBe(403);
    expect(
      (await asOperator('POST', '/jobs', { action: 'move', selection: { ids: [mine.agent.id] }, fleet: 'Warehouse' })).status,
    ).toBe(403);
  });
});

describe('destructive actions', () => {
  it('need the expected count: missing, 400; different, 409 and nothing done; the same, done', async () => {
    const doomed = [await device('Field'), await device('Field')];
    const ids = doomed.map((d) => d.agent.id);
    const before = lastAuditId();
    const missing = await t.admin('POST', '/jobs', { action: 'delete', selection: { ids } });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ error: 'ERROR_COUNT_REQUIRED', message: expect.stringMatching(/expected_count: 2/) });
    const wrong = await t.admin('POST', '/jobs', { action: 'delete', selection: { ids }, expected_count: 3 });
    expect(wrong.status).toBe(409);
    expect(wrong.body).toMatchObject({
      error: 'ERROR_COUNT_MISMATCH',
      message: 'The selection now holds 2 devices, not 3: nothing was done. Look at it again and confirm the new count.',
    });
    for (const id of ids) expect(await agentRow(t, id)).toBeDefined();
    expect(auditAfter(before)).toEqual([]);

    const done = await t.admin('POST', '/jobs', { action: 'delete', selection: { ids }, expected_count: 2 });
    expect(done.status).toBe(202);
    const detail = await finished(done.body.id);
    expect(detail.counts).toMatchObject({ done: 2 });
    for (const id of ids) expect(await t.backend.services.agentRepository.byId(id)).toBeUndefined();
    // One audit entry: the deletions it made are the job's.
    expect(auditAfter(before).map((entry) => entry.action)).toEqual(['job.started']);
  });

  it('a filter selection is counted as the server resolves it', async () => {
    const moved = await device('Field');
    const count = (await t.admin('GET', '/agents')).body.items.filter((a: { fleet: string }) => a.fleet === 'Field').length;
    const wrong = await t.admin('POST', '/jobs', {
      action: 'unenroll',
      selection: { filter: { fleet: 'Field' } },
      expected_count: count + 1,
    });
    expect(wrong.status).toBe(409);
    expect((await agentRow(t, moved.agent.id)).enroll_status).toBe('enrolled');
  });
});

describe('bad requests get a clear 400, never a 500', () => {
  it.each([
    [{ action: 'lock', selection: {} }],
    [{ action: 'lock', selection: { ids: [] } }],
    [{ action: 'lock', selection: { ids: [1], filter: {} } }],
    [{ action: 'explode', selection: { ids: [1] } }],
    [{ action: 'move', selection: { ids: [1] } }],
    [{ action: 'lock', selection: { ids: [1] }, fleet: 'Field' }],
    [{ action: 'assign_policy', selection: { ids: [1] }, policy: 'noSuchPolicy', value: 1 }],
    [{ action: 'lock', selection: { filter: { fleet: 'No such fleet' } } }],
    [{ action: 'lock', selection: { filter: { colour: 'red' } } }],
  ])('%j', async (body) => {
    const answer = await t.admin('POST', '/jobs', body);
    expect(answer.status).toBe(400);
    expect(answer.body.message).toEqual(expect.any(String));
  });

  it('an empty selection is a 409 that says so', async () => {
    const answer = await t.admin('POST', '/jobs', {
      action: 'ping',
      selection: { filter: { search: 'no device is called this' } },
    });
    expect(answer.status).toBe(409);
    expect(answer.body).toMatchObject({ error: 'ERROR_EMPTY_SELECTION' });
  });
});

describe('move and policies', () => {
  it('move: each device moved and told (Command/Subscribe); one already there is done, said so', async () => {
    const a = await device('Field');
    const b = await device('Warehouse');
    const started = await t.admin('POST', '/jobs', {
      action: 'move',
      selection: { ids: [a.agent.id, b.agent.id] },
      fleet: 'Warehouse',
    });
    expect(started.status).toBe(202);
    expect(started.body.params).toEqual({ fleet_id: fleet.warehouse, fleet: 'Warehouse' });
    const detail = await finished(started.body.id);
    expect(resultOf(detail, a.agent.id)).toMatchObject({ status: 'done', reason: null });
    expect(resultOf(detail, b.agent.id)).toMatchObject({ status: 'done', reason: 'Already in that fleet' });
    expect((await agentRow(t, a.agent.id)).fleet_id).toBe(fleet.warehouse);
    await a.box!.next((m) => m.topic.endsWith('/Command/Subscribe') && m.text.includes(`/fleet/${fleet.warehouse}`));
  });

  it('assign_policy: one device assignment each; a value the policy does not take is one 400', async () => {
    const a = await device('Field');
    const bad = await t.admin('POST', '/jobs', {
      action: 'assign_policy',
      selection: { ids: [a.agent.id] },
      policy: 'disableCamera',
      value: 'yes',
    });
    expect(bad.status).toBe(400);
    const started = await t.admin('POST', '/jobs', {
      action: 'assign_policy',
      selection: { ids: [a.agent.id] },
      policy: 'disableCamera',
      value: true,
    });
    expect(started.status).toBe(202);
    expect((await finished(started.body.id)).counts).toMatchObject({ done: 1 });
    const policies = (await t.admin('GET', `/agents/${a.agent.id}/policies`)).body.items;
    expect(policies).toEqual([expect.objectContaining({ policy: 'disableCamera', value: true, source: 'device' })]);
    // The same again: refused for that device with the reason, as the single route says it.
    const again = await t.admin('POST', '/jobs', {
      action: 'assign_policy',
      selection: { ids: [a.agent.id] },
      policy: 'disableCamera',
      value: true,
    });
    expect(resultOf(await finished(again.body.id), a.agent.id)).toMatchObject({
      status: 'refused',
      reason: expect.stringMatching(/already set/),
    });
  });
});
