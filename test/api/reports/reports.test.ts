// Reports (issue 25, item 4): the daily figures the server keeps as it runs, over real HTTP, MQTT
// and SQLite. Devices enroll through the real agent API, connect to the broker, and report their
// tasks as a device does (PUT PluginMdmTaskstatus); the reports' clock is driven across midnight
// (UTC) so what happened before and after it lands on its own day. A scoped token sees its
// fleets' figures only; a restart counts nothing twice; the first start backfills what the rows tell.
import type { MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentCall, startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { runCli } from '../../helpers/cli.ts';
import { parseCsv } from '../../helpers/csv.ts';
import { closeClients, connectAgent, enrollAgent, eventually, type EnrolledAgent } from '../../helpers/mqtt.ts';

const DAY1 = '2026-03-09';
const DAY2 = '2026-03-10';
let clock = Date.parse(`${DAY1}T23:40:00.000Z`);
let t: TestBackend;
const fleet = { north: 0, south: 0 };
const devices: Record<string, EnrolledAgent> = {};
let fileDeployment = 0;
let northLink: MqttClient;
let southLink: MqttClient;

/** A FusionInventory report naming the device's model and OS, sent at enrollment (base64). */
const inventory = (manufacturer: string, model: string, version: string) =>
  Buffer.from(
    `<REQUEST><CONTENT><BIOS><SMODEL>${model}</SMODEL><SMANUFACTURER>${manufacturer}</SMANUFACTURER></BIOS><OPERATINGSYSTEM><NAME>Android</NAME><VERSION>${version}</VERSION></OPERATINGSYSTEM></CONTENT></REQUEST>`,
  ).toString('base64');

const enroll = (name: string, fleetName: string, manufacturer: string, model: string, version: string) =>
  enrollAgent(t, {
    fleet: fleetName,
    serial: `REPORT-${name}`,
    extra: { inventory: inventory(manufacturer, model, version) },
  }).then((agent) => (devices[name] = agent));

/** The device reports its task's status over the agent API, with its own session. */
async function report(device: EnrolledAgent, assignmentId: number, status: 'done' | 'failed') {
  const taskId = t.db
    .prepare(`SELECT id FROM policy_tasks WHERE agent_id = ? AND deployment_id = ?`)
    .pluck()
    .get(device.id, assignmentId) as number;
  const session = (await agentCall(t.apiUrl, 'GET', `initSession?user_token=${device.record.api_token}`)).body.session_token;
  const put = await agentCall(t.apiUrl, 'PUT', `PluginMdmTaskstatus/${taskId}?session_token=${session}`, {
    body: { input: { status, ...(status === 'failed' ? { reason: 'no space left' } : {}) } },
  });
  expect(put.status).toBe(200);
}

const get = async (path: string, bearer = t.backend.info.admin_token) => {
  const response = await fetch(`${t.backend.info.admin_url}/api${path}`, { headers: { authorization: `Bearer ${bearer}` } });
  return { status: response.status, body: (await response.json()) as any };
};
const values = (body: any) => Object.fromEntries(body.points.map((point: any) => [point.day, point.values]));

beforeAll(async () => {
  t = await startTestBackend({ now: () => clock, reportSampleEveryMs: 24 * 60 * 60 * 1000 });
  fleet.north = (await t.admin('POST', '/fleets', { name: 'North' })).body.id;
  fleet.south = (await t.admin('POST', '/fleets', { name: 'South' })).body.id;

  // Day 1, before midnight: three devices enroll, two connect.
  await enroll('n1', 'North', 'Google', 'Pixel 6', '13');
  await enroll('n2', 'North', 'motorola', 'moto g(8)', '11');
  await enroll('s1', 'South', 'Google', 'Pixel 6', '13');
  northLink = await connectAgent(t, devices.n1!);
  southLink = await connectAgent(t, devices.s1!);
  await eventually(async () => (await t.admin('GET', '/status')).body.counts.online === 2);

  // A file deployed to North: one device installs it today; a value policy on South, done (not a deployment).
  const upload = await fetch(`${t.backend.info.admin_url}/api/files?name=handbook.pdf`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.backend.info.admin_token}`, 'content-type': 'application/octet-stream' },
    body: Buffer.from('the handbook'),
  });
  const file = (await upload.json()) as { id: number };
  const deployed = await t.admin('POST', '/deployments', { kind: 'file', item_id: file.id, fleet_id: fleet.north });
  expect(deployed.status).toBe(201);
  fileDeployment = deployed.body.id;
  const policy = await t.admin('POST', '/policy-assignments', { policy: 'passwordMinLength', value: 6, fleet_id: fleet.south });
  expect(policy.status).toBe(201);
  await report(devices.n1!, fileDeployment, 'done');
  await report(devices.s1!, policy.body.id, 'done');
  await t.backend.services.figures.sample();

  // Day 2, after midnight: the other North device fails the install, one more device enrolls in
  // South (it gets the policy, pending), and the first North device disconnects.
  clock = Date.parse(`${DAY2}T00:20:00.000Z`);
  await report(devices.n2!, fileDeployment, 'failed');
  await enroll('s2', 'South', 'samsung', 'SM-G973F', '12');
  northLink.end(true);
  await eventually(async () => (await t.admin('GET', '/status')).body.counts.online === 1);
  await t.backend.services.figures.sample();
  // An hour later the South device goes offline too: the day's peak stays the 00:00 hour's.
  clock = Date.parse(`${DAY2}T01:30:00.000Z`);
  southLink.end(true);
  await eventually(async () => (await t.admin('GET', '/status')).body.counts.online === 0);
  await t.backend.services.figures.sample();
});

afterAll(async () => {
  await closeClients();
  await t?.stop();
});

describe('the daily figures across midnight (UTC)', () => {
  it('enrollments: three on the first day, one on the second', async () => {
    const { status, body } = await get('/reports/enrollments?days=3');
    expect(status).toBe(200);
    expect(body).toMatchObject({
      report: 'enrollments',
      from: '2026-03-08',
      to: DAY2,
      days: 3,
      time_zone: 'UTC',
      fleet_id: null,
    });
    expect(values(body)).toEqual({ '2026-03-08': { enrolled: 0 }, [DAY1]: { enrolled: 3 }, [DAY2]: { enrolled: 1 } });
    const north = await get(`/reports/enrollments?days=2&fleet_id=${fleet.north}`);
    expect(values(north.body)).toEqual({ [DAY1]: { enrolled: 2 }, [DAY2]: { enrolled: 0 } });
  });

  it('deployments: the install that succeeded on day 1 and the one that failed on day 2; the value policy is not one', async () => {
    const { body } = await get('/reports/deployments?days=2');
    expect(body.series.map((s: any) => s.key)).toEqual(['done', 'failed']);
    expect(values(body)).toEqual({ [DAY1]: { done: 1, failed: 0 }, [DAY2]: { done: 0, failed: 1 } });
  });

  it('devices online: each day its busiest hour, its last sample, and the devices; a day without a sample is null', async () => {
    const { body } = await get('/reports/online?days=3');
    expect(values(body)).toEqual({
      '2026-03-08': { peak: null, latest: null, devices: null },
      [DAY1]: { peak: 2, latest: 2, devices: 3 },
      [DAY2]: { peak: 1, latest: 0, devices: 4 },
    });
    expect(body.sampled_at).toBe(`${DAY2}T01:30:00.000Z`);
    const south = await get(`/reports/online?days=2&fleet_id=${fleet.south}`);
    expect(values(south.body)).toEqual({
      [DAY1]: { peak: 1, latest: 1, devices: 1 },
      [DAY2]: { peak: 1, latest: 0, devices: 2 },
    });
  });

  it('compliance per day and per fleet: done, pending, failed, none', async () => {
    const all = await get('/reports/compliance?days=2');
    expect(values(all.body)).toEqual({
      [DAY1]: { done: 2, pending: 1, failed: 0, none: 0 },
      [DAY2]: { done: 2, pending: 1, failed: 1, none: 0 },
    });
    const north = await get(`/reports/compliance?days=2&fleet_id=${fleet.north}`);
    expect(values(north.body)).toEqual({
      [DAY1]: { done: 1, pending: 1, failed: 0, none: 0 },
      [DAY2]: { done: 1, pending: 0, failed: 1, none: 0 },
    });
  });

  it('OS versions and models: now, from the inventories, and each day as sampled', async () => {
    const os = (await get('/reports/os?days=2')).body;
    expect(os.current).toEqual([
      { key: 'Android 13', devices: 2 },
      { key: 'Android 11', devices: 1 },
      { key: 'Android 12', devices: 1 },
    ]);
    expect(values(os)).toEqual({
      [DAY1]: { 'Android 13': 2, 'Android 11': 1, 'Android 12': 0 },
      [DAY2]: { 'Android 13': 2, 'Android 11': 1, 'Android 12': 1 },
    });
    const models = (await get(`/reports/models?days=1&fleet_id=${fleet.south}`)).body;
    expect(models.current).toEqual([
      { key: 'Google Pixel 6', devices: 1 },
      { key: 'samsung SM-G973F', devices: 1 },
    ]);
  });
});

describe('scope and bad input', () => {
  it("a token scoped to South sees South's figures only, and North answers 404", async () => {
    const created = await t.admin('POST', '/tokens', { name: 'south reports', role: 'observer', fleet_ids: [fleet.south] });
    expect(created.status).toBe(201);
    const token = created.body.token as string;
    const enrollments = await get('/reports/enrollments?days=2', token);
    expect(enrollments.status).toBe(200);
    expect(values(enrollments.body)).toEqual({ [DAY1]: { enrolled: 1 }, [DAY2]: { enrolled: 1 } });
    expect(values((await get('/reports/deployments?days=2', token)).body)).toEqual({
      [DAY1]: { done: 0, failed: 0 },
      [DAY2]: { done: 0, failed: 0 },
    });
    expect((await get('/reports/models?days=2', token)).body.current).toHaveLength(2);
    expect((await get(`/reports/online?fleet_id=${fleet.north}`, token)).status).toBe(404);
  });

  it('an unknown report, a bad range or an unknown fleet is a clear 4xx, never a 500', async () => {
    expect((await get('/reports/weather')).status).toBe(400);
    expect((await get('/reports/online?days=0')).status).toBe(400);
    expect((await get('/reports/online?days=367')).status).toBe(400);
    expect((await get('/reports/online?days=abc')).status).toBe(400);
    const unknown = await get('/reports/online?fleet_id=9999');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ message: expect.stringMatching(/Fleet not found/) });
  });
});

describe('the CLI: report', () => {
  // Each command is a Node process of its own: seconds apiece on a busy machine.
  it('prints a report as a table, CSV or JSON, by fleet name, and refuses bad input clearly', { timeout: 120_000 }, async () => {
    const table = await runCli(t.dataDir, ['report', 'deployments', '--days', '2']);
    expect(table.code).toBe(0);
    expect(table.stdout.split('\n')).toEqual([
      `Deployments: ${DAY1} to ${DAY2} (UTC)`,
      'day         Succeeded  Failed',
      `${DAY1}          1       0`,
      `${DAY2}          0       1`,
      '',
    ]);
    const csv = await runCli(t.dataDir, ['report', 'compliance', '--days', '3', '--fleet', 'North', '--csv']);
    expect(csv.code).toBe(0);
    expect(parseCsv(csv.stdout)).toEqual([
      ['day', 'Compliant', 'Pending', 'Failing', 'No policy'],
      ['2026-03-08', '', '', '', ''],
      [DAY1, '1', '1', '0', '0'],
      [DAY2, '1', '0', '1', '0'],
    ]);
    const json = JSON.parse((await runCli(t.dataDir, ['report', 'os', '--days', '1', '--json'])).stdout);
    expect(json).toMatchObject({
      report: 'os',
      days: 1,
      from: DAY2,
      to: DAY2,
      current: [{ key: 'Android 13', devices: 2 }, {}, {}],
    });
    const models = await runCli(t.dataDir, ['report', 'models', '--days', '1', '--fleet', String(fleet.south)]);
    expect(models.stdout).toContain('Now:\n  Google Pixel 6: 1\n  samsung SM-G973F: 1');

    const refusals = [
      [['report'], /which report\? one of enrollments, online, compliance, os, models, deployments/],
      [['report', 'weather'], /no report "weather"/],
      [['report', 'online', '--days', '0'], /--days takes 1 to 366, not "0"/],
      [['report', 'online', '--days', 'week'], /--days takes 1 to 366, not "week"/],
      [['report', 'online', '--fleet', 'Nowhere'], /No fleet "Nowhere"/],
      [['report', 'online', '--json', '--csv'], /--json or --csv, not both/],
    ] as const;
    const refused = await Promise.all(refusals.map(([args]) => runCli(t.dataDir, [...args])));
    refusals.forEach(([args, message], index) => {
      expect(refused[index]!.code, args.join(' ')).not.toBe(0);
      expect(refused[index]!.stderr).toMatch(message);
      expect(refused[index]!.stderr).not.toMatch(/\n\s+at /); // no stack trace
    });
  });
});

describe('restarts', () => {
  it('a restart counts nothing twice; events recorded while the figures did not listen are counted at the next start', async () => {
    const before = values((await get('/reports/enrollments?days=2')).body);
    // The figures stop following (as in a crash between a commit and its count); a device enrolls.
    t.backend.services.figures.close();
    await enroll('s3', 'South', 'Google', 'Pixel 7', '14');
    const realDay = new Date().toISOString().slice(0, 10);
    const dataDir = t.dataDir;
    await t.backend.close();
    t = await startTestBackend({ dataDir, now: () => clock, reportSampleEveryMs: 24 * 60 * 60 * 1000 });
    const rows = t.db
      .prepare(`SELECT day, sum(value) AS n FROM daily_figures WHERE metric = 'enrolled' GROUP BY day ORDER BY day`)
      .all() as { day: string; n: number }[];
    const expected = new Map([
      [DAY1, before[DAY1].enrolled],
      [DAY2, before[DAY2].enrolled],
    ]);
    // Counted on the day its event was recorded (the real clock's: the events' own), once.
    expected.set(realDay, (expected.get(realDay) ?? 0) + 1);
    expect(new Map(rows.map((row) => [row.day, row.n]))).toEqual(expected);
  });

  it('the first start backfills from the rows: devices by the day they enrolled, deployment tasks by the day they reported', async () => {
    const realDay = new Date().toISOString().slice(0, 10);
    t.db.exec(`DELETE FROM daily_figures; DELETE FROM report_cursor;`);
    const dataDir = t.dataDir;
    await t.backend.close();
    t = await startTestBackend({ dataDir, now: () => clock, reportSampleEveryMs: 24 * 60 * 60 * 1000 });
    const counted = (metric: string) =>
      t.db
        .prepare(`SELECT day, key, sum(value) AS n FROM daily_figures WHERE metric = ? GROUP BY day, key ORDER BY day, key`)
        .all(metric);
    // The rows' own times are the real clock's: every device and task report of this test is of today.
    expect(counted('enrolled')).toEqual([{ day: realDay, key: '', n: 5 }]);
    expect(counted('deploy')).toEqual([
      { day: realDay, key: 'done', n: 1 },
      { day: realDay, key: 'failed', n: 1 },
    ]);
  });
});

describe('the timer', () => {
  it('samples on its own, at start and then every sampleEveryMs', async () => {
    const own = await startTestBackend({ reportSampleEveryMs: 50 });
    try {
      const sampledAt = async () => (await own.admin('GET', '/reports/online?days=1')).body.sampled_at as string | null;
      const first = await sampledAt();
      expect(first).not.toBeNull(); // the start's own sample
      await eventually(async () => ((await sampledAt()) ?? '') > first!);
    } finally {
      await own.stop();
    }
  });
});
