// The exports (issue 25, item 3): devices (with the inventory's columns and compliance),
// invitations, codes and their uses, and each device's deployment and policy results, as CSV and
// JSON lines, with their lists' filters and the caller's fleet scope. Each export's rows are checked
// against its list API. Real HTTP, SQLite and MQTT: simulated devices enroll, obey a package
// deployment and a policy, and send their inventories; more devices are seeded straight into the tables.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevice, type SimulatedDevice } from '../../../src-main/device/device.ts';
import { dialectOf } from '../../../src-main/device/dialect.ts';
import { simulateEnrollment } from '../../../src-main/device/simulate.ts';
import { adminRoutes } from '../../../src-shared/contract/admin-routes.ts';
import type {
  AgentDetail,
  AgentSummary,
  DeviceCompliance,
  DeviceTask,
  EnrollmentCode,
  Invitation,
  Job,
  JobDetail,
} from '../../../src-shared/contract/index.ts';
import { verificationText } from '../../../src-shared/contract/index.ts';
import { matchesSearch, searchTerms } from '../../../src-renderer/lib/devices.ts';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { sameOriginJson, sessionCookieOf, withSession } from '../../helpers/console-session.ts';
import { parseCsv } from '../../helpers/csv.ts';
import { callFrom } from '../../helpers/from-address.ts';
import { eventually } from '../../helpers/mqtt.ts';
import { seedDevices } from '../../helpers/seed-devices.ts';

const APK = readFileSync(fileURLToPath(new URL('../../fixtures/field-app.apk', import.meta.url)));
/** A fleet whose name a spreadsheet would run as a formula. */
const FORMULA_FLEET = '=HYPERLINK("http://evil.example","Sales")';

let t: TestBackend;
let adminUrl: string;
const devices: SimulatedDevice[] = [];
const fleet = { warehouse: 0, sales: 0 };
let deployment: { id: number };
let policy: { id: number };
let code: EnrollmentCode;
let operator: string; // a console session's cookie: an operator scoped to the Warehouse fleet

const owner = () => ({ authorization: `Bearer ${t.backend.info.admin_token}` });
const get = (path: string, headers: Record<string, string> = owner()) => fetch(`${adminUrl}/api/${path}`, { headers });
const list = async <T>(path: string): Promise<T> => (await t.admin('GET', path)).body as T;
const jsonLines = (text: string) =>
  text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
/** CSV rows as objects by the header's names. */
const csvRecords = (text: string) => {
  const [header = [], ...rows] = parseCsv(text);
  return { header, rows: rows.map((cells) => Object.fromEntries(header.map((name, i) => [name, cells[i]]))) };
};
const exportJson = async (path: string, headers?: Record<string, string>) => {
  const response = await get(`${path}${path.includes('?') ? '&' : '?'}format=jsonl`, headers);
  expect(response.status, await response.clone().text()).toBe(200);
  return jsonLines(await response.text());
};
/** What a JSON value reads as in a CSV cell (before the formula guard). */
const cellOf = (value: unknown) =>
  value === null || value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);

async function phone(fleetName: string, options: { flyve?: boolean } = {}): Promise<SimulatedDevice> {
  const email = `phone${devices.length + 1}@example.com`;
  const { body } = await t.admin('POST', '/invitations', { email, fleet: fleetName, send_email: false });
  const started = await startDevice({
    deeplink: body.deeplink,
    email,
    ...(options.flyve ? { dialect: dialectOf('flyve', 'http') } : {}),
    chunkSize: 16_384,
    mqtt: { backoff: { initialMs: 100, maxMs: 1000 } },
  });
  devices.push(started);
  return started;
}

beforeAll(async () => {
  t = await startTestBackend();
  adminUrl = t.backend.info.admin_url;
  fleet.warehouse = (await t.admin('POST', '/fleets', { name: 'Warehouse' })).body.id;
  fleet.sales = (await t.admin('POST', '/fleets', { name: FORMULA_FLEET })).body.id;

  // Three phones that connect, obey and report their inventory; 40 more seeded (never connected).
  const [one, two, three] = [await phone('Warehouse'), await phone('Warehouse', { flyve: true }), await phone(FORMULA_FLEET)];
  await seedDevices(t.sql, { count: 40, fleets: ['Warehouse', FORMULA_FLEET], prefix: 'EXP' });
  // One seeded device unenrolled: it has no compliance (as in the compliance list).
  await t.sql.run(`UPDATE agents SET enroll_status = 'unenrolled' WHERE serial = 'EXP000005'`);

  // A package deployed to the Warehouse (the phones install it, the seeded devices never answer);
  // a policy on the other fleet.
  const upload = await fetch(`${adminUrl}/api/packages?name=field-app.apk`, {
    method: 'POST',
    headers: { ...owner(), 'content-type': 'application/octet-stream' },
    body: APK,
  });
  expect(upload.status).toBe(201);
  const item = (await upload.json()) as { id: number };
  deployment = (await t.admin('POST', '/deployments', { kind: 'package', item_id: item.id, fleet: 'Warehouse' })).body;
  policy = (await t.admin('POST', '/policy-assignments', { policy: 'disableCamera', value: true, fleet: FORMULA_FLEET })).body;
  await eventually(async () => {
    const tasks = (await list<{ tasks: DeviceTask[] }>(`/deployments/${deployment.id}`)).tasks;
    return [one, two].every((p) =>
      tasks.some((task) => task.agent_id === Number(p!.enrollment.agentId) && task.status === 'done'),
    );
  });
  for (const p of [one, two, three])
    expect((await t.admin('POST', `/agents/${p!.enrollment.agentId}/commands`, { command: 'inventory' })).status).toBe(202);
  await eventually(async () => {
    const tasks = (await list<{ tasks: DeviceTask[] }>(`/deployments/${deployment.id}`)).tasks;
    return tasks.filter((task) => task.verification?.state === 'verified').length === 2;
  });

  // Invitations (one revoked, one with names a spreadsheet would run), and codes: one used, one refused.
  await t.admin('POST', '/invitations', {
    email: 'ines@example.com',
    firstname: '@SUM(A1)',
    lastname: '-2+3',
    send_email: false,
  });
  const revoked = await t.admin('POST', '/invitations', { email: 'rev@example.com', fleet: 'Warehouse', send_email: false });
  await t.admin('POST', `/invitations/${revoked.body.id}/revoke`);
  code = (await t.admin('POST', '/codes', { name: '+front door', fleet: 'Warehouse', domains: ['example.com'] })).body;
  await t.admin('POST', '/codes', { name: 'Sales desk', fleet: FORMULA_FLEET });
  const used = await simulateEnrollment({
    deeplink: code.deeplink,
    email: 'walk-in@example.com',
    firstname: null,
    lastname: null,
    type: 'android',
  });
  expect(used.ok, used.log.join('\n')).toBe(true);
  const refused = await simulateEnrollment({
    deeplink: code.deeplink,
    email: 'x@elsewhere.test',
    firstname: null,
    lastname: null,
    type: 'android',
  });
  expect(refused.ok).toBe(false);

  // Olga, an operator who sees the Warehouse only, signs in from her set-up link.
  const invited = await t.admin('POST', '/accounts', {
    email: 'olga@example.org',
    role: 'operator',
    fleet_ids: [fleet.warehouse],
    no_email: true,
  });
  expect(invited.status, JSON.stringify(invited.body)).toBe(201);
  const token = new URL(invited.body.setup_url as string).searchParams.get('token');
  const accepted = await callFrom(
    '127.0.0.1',
    `${adminUrl}/auth/invitation`,
    sameOriginJson({ token, password: 'helpdesk horse battery' }),
  );
  expect(accepted.status).toBe(200);
  operator = sessionCookieOf(accepted)!;
}, 120_000);

afterAll(async () => {
  await Promise.all(devices.map((device) => device.stop()));
  await t?.stop();
});

/** The devices table's row of each device, its compliance and (for those that sent one) its inventory: what the export must hold. */
async function devicesAsListed() {
  const agents = (await list<{ items: AgentSummary[] }>('/agents')).items.sort((a, b) => a.id - b.id);
  const compliance = new Map((await list<{ items: DeviceCompliance[] }>('/compliance')).items.map((c) => [c.agent_id, c]));
  const inventories = new Map<number, AgentDetail['inventory']>();
  for (const agent of agents)
    if (agent.last_report) inventories.set(agent.id, (await list<AgentDetail>(`/agents/${agent.id}`)).inventory);
  return agents.map((agent) => {
    const inventory = inventories.get(agent.id) ?? null;
    const c = compliance.get(agent.id) ?? null;
    const total = (key: 'total_mb' | 'free_mb') =>
      inventory && inventory.storage.some((drive) => drive[key] !== null)
        ? inventory.storage.reduce((sum, drive) => sum + (drive[key] ?? 0), 0)
        : null;
    return {
      agent,
      compliance: c,
      inventory,
      expected: {
        id: agent.id,
        name: agent.name,
        type: agent.type,
        serial: agent.serial,
        uuid: agent.uuid,
        manufacturer: agent.manufacturer,
        model: agent.model,
        os_name: agent.os_name,
        os_version: agent.os_version,
        imei: inventory?.imei ?? null,
        battery_level: inventory?.battery?.level ?? null,
        battery_health: inventory?.battery?.health ?? null,
        battery_status: inventory?.battery?.status ?? null,
        storage: inventory?.storage ?? null,
        storage_total_mb: total('total_mb'),
        storage_free_mb: total('free_mb'),
        memory_mb: inventory?.memory_mb ?? null,
        installed_apps: inventory?.applications.length ?? null,
        inventory_at: inventory?.received_at ?? null,
        agent_version: agent.version,
        fleet: agent.fleet,
        fleet_id: agent.fleet_id,
        user_email: agent.email,
        user_name: [agent.firstname, agent.lastname].filter(Boolean).join(' ') || null,
        enroll_status: agent.enroll_status,
        enrolled_at: agent.created_at,
        enrolled_with:
          agent.enrollment_code !== null
            ? `code ${agent.enrollment_code}`
            : agent.invitation_id !== null
              ? `invitation ${agent.invitation_id}`
              : null,
        last_contact: agent.last_contact,
        online: agent.is_online,
        locked: agent.lock === 1,
        compliance: c?.state ?? null,
        compliance_summary: c?.summary ?? null,
      },
    };
  });
}

describe('the devices export', () => {
  it('holds every device of the list, by id, with the inventory’s columns and compliance, in CSV and JSON lines', async () => {
    const listed = await devicesAsListed();
    expect(listed).toHaveLength(44);
    // The phones' inventories are there to be exported: model, OS, apps, storage.
    const phones = listed.filter((d) => d.inventory !== null);
    expect(phones).toHaveLength(3);
    expect(phones.every((d) => d.inventory!.applications.length > 0 && d.agent.model !== null)).toBe(true);
    // Compliance as the list counts it: the phones compliant, seeded devices waiting, the unenrolled one none.
    expect(new Set(listed.map((d) => d.expected.compliance))).toEqual(new Set(['compliant', 'pending', null]));

    const response = await get('agents/export?format=jsonl');
    expect(response.headers.get('content-type')).toBe('application/x-ndjson; charset=utf-8');
    expect(response.headers.get('content-disposition')).toMatch(
      /^attachment; filename="devices-\d{4}-\d{2}-\d{2}-\d{4}\.jsonl"$/,
    );
    expect(jsonLines(await response.text())).toEqual(listed.map((d) => d.expected));

    const csv = await get('agents/export');
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(csv.headers.get('content-disposition')).toMatch(/^attachment; filename="devices-\d{4}-\d{2}-\d{2}-\d{4}\.csv"$/);
    const { header, rows } = csvRecords(await csv.text());
    expect(header).toEqual(Object.keys(listed[0]!.expected));
    expect(rows).toHaveLength(listed.length);
    rows.forEach((row, i) => {
      const { expected, inventory } = listed[i]!;
      for (const [name, value] of Object.entries(expected)) {
        if (name === 'storage') continue;
        const cell = cellOf(value);
        expect(row[name], `${name} of ${expected.name}`).toBe(/^[=+\-@]/.test(cell) ? `'${cell}` : cell);
      }
      // Storage as one line of text: each drive, free of total.
      expect(row.storage).toBe(
        inventory
          ? inventory.storage.map((d) => `${d.name}: ${d.free_mb ?? '?'} of ${d.total_mb ?? '?'} MB free`).join('; ')
          : '',
      );
    });
  });

  it('takes the table’s filters: fleet, status, type, online, compliance and its search, as the console applies them', async () => {
    const listed = await devicesAsListed();
    const cases: [string, (d: (typeof listed)[number]) => boolean][] = [
      ['fleet=warehouse', (d) => d.agent.fleet.toLowerCase() === 'warehouse'],
      [`fleet_id=${fleet.sales}`, (d) => d.agent.fleet_id === fleet.sales],
      ['status=unenrolled', (d) => d.agent.enroll_status === 'unenrolled'],
      ['type=apple&online=true', (d) => d.agent.type === 'apple' && d.agent.is_online],
      ['online=false&fleet=Warehouse', (d) => !d.agent.is_online && d.agent.fleet === 'Warehouse'],
      ['compliance=pending', (d) => d.compliance?.state === 'pending'],
      ['compliance=compliant', (d) => d.compliance?.state === 'compliant'],
      ['q=EXP00001', (d) => matchesSearch(d.agent, searchTerms('EXP00001'))],
      ['q=ada%20warehouse', (d) => matchesSearch(d.agent, searchTerms('ada warehouse'))],
      ['q=%20PHONE1@%20', (d) => matchesSearch(d.agent, searchTerms(' PHONE1@ '))],
      ['q=100%25', () => false],
      ['q=_', (d) => matchesSearch(d.agent, searchTerms('_'))],
    ];
    for (const [query, keep] of cases) {
      const expected = listed.filter(keep).map((d) => d.agent.id);
      const ids = (await exportJson(`agents/export?${query}`)).map((row) => row.id);
      expect(ids, query).toEqual(expected);
      if (!['q=100%25', 'q=_'].includes(query)) expect(expected.length, query).toBeGreaterThan(0);
    }
  });

  it('takes the device list’s where, view and fleet, as GET /api/agents does, with the table’s filters on top', async () => {
    const listedBy = async (query: string) =>
      (await list<{ items: AgentSummary[] }>(`/agents?${query}`)).items.map((a) => a.id).sort((a, b) => a - b);
    expect((await t.admin('POST', '/views', { name: 'Field app', where: 'app=org.example.fieldapp' })).status).toBe(201);
    const cases = [
      'where=app%3Dorg.example.fieldapp',
      'where=os%3E%3D1',
      `where=${encodeURIComponent('fleet=Warehouse online=no')}`,
      `where=${encodeURIComponent('compliance=pending OR status=unenrolled')}`,
      `where=${encodeURIComponent('"phone1@"')}`,
      'view=field%20app',
      'fleet=WAREHOUSE',
      `fleet=${fleet.sales}&where=${encodeURIComponent('last_contact<1d')}`,
    ];
    for (const query of cases) {
      const expected = await listedBy(query);
      expect(expected.length, query).toBeGreaterThan(0);
      expect(
        (await exportJson(`agents/export?${query}`)).map((row) => row.id),
        query,
      ).toEqual(expected);
    }
    expect(await listedBy('view=Field%20app')).toHaveLength(2);
    // The table's filters narrow the selection further.
    const warehouse = (await list<{ items: AgentSummary[] }>('/agents?fleet=Warehouse')).items;
    const apple = warehouse
      .filter((a) => a.type === 'apple')
      .map((a) => a.id)
      .sort((a, b) => a - b);
    expect((await exportJson('agents/export?fleet=Warehouse&type=apple')).map((row) => row.id)).toEqual(apple);
  });

  it('refuses what it cannot read with a 400, never a 500', async () => {
    const refusals: [string, string][] = [
      ['format=xml', 'ERROR_BAD_REQUEST'],
      ['online=perhaps', 'ERROR_BAD_REQUEST'],
      ['compliance=good', 'ERROR_BAD_REQUEST'],
      ['fleet_id=0', 'ERROR_BAD_REQUEST'],
      ['type=windows', 'ERROR_BAD_REQUEST'],
      ['limit=5', 'ERROR_BAD_REQUEST'],
      ['fleet=', 'ERROR_BAD_REQUEST'],
      ['where=os%3C%3C10', 'ERROR_BAD_WHERE'],
      ['view=nowhere', 'ERROR_UNKNOWN_VIEW'],
      ['fleet=Nowhere', 'ERROR_UNKNOWN_FLEET'],
    ];
    for (const [query, error] of refusals) {
      const response = await get(`agents/export?${query}`);
      expect(response.status, query).toBe(400);
      expect(((await response.json()) as { error: string }).error, query).toBe(error);
    }
  });
});

describe('the other exports against their lists', () => {
  it('invitations: the list’s rows and filters, no token or link', async () => {
    const all = (await list<{ items: Invitation[] }>('/invitations')).items;
    expect(all.length).toBeGreaterThan(4);
    const rows = await exportJson('invitations/export');
    expect(rows.map((row) => row.id)).toEqual(all.map((i) => i.id));
    rows.forEach((row, i) => {
      const invitation = all[i]!;
      expect(row).toEqual({
        id: invitation.id,
        email: invitation.email,
        firstname: invitation.firstname,
        lastname: invitation.lastname,
        status: invitation.status,
        fleet: invitation.fleet,
        fleet_id: invitation.fleet_id,
        created_at: invitation.created_at,
        expires_at: invitation.expires_at,
        used_at: invitation.used_at,
        last_used_at: invitation.last_used_at,
        revoked_at: invitation.revoked_at,
        device_id: invitation.agent?.id ?? null,
        device: invitation.agent?.name ?? null,
        device_serial: invitation.agent?.serial ?? null,
        refused_attempts: invitation.refused_attempts,
        email_state: invitation.delivery?.state ?? null,
        email_sent_at: invitation.delivery?.sent_at ?? null,
        email_error: invitation.delivery?.error ?? null,
      });
    });
    const csv = await (await get('invitations/export?format=csv')).text();
    for (const invitation of all) expect(csv).not.toContain(invitation.user_token);
    for (const query of ['status=revoked', 'status=done', 'status=pending', 'q=INES', `fleet_id=${fleet.warehouse}`]) {
      const listedIds = (await list<{ items: Invitation[] }>(`/invitations?${query}`)).items.map((i) => i.id);
      expect(
        (await exportJson(`invitations/export?${query}`)).map((row) => row.id),
        query,
      ).toEqual(listedIds);
      expect(listedIds.length, query).toBeGreaterThan(0);
    }
  });

  it('codes and their uses: the list’s codes, and each code’s log of uses and refusals', async () => {
    const codes = (await list<{ items: EnrollmentCode[] }>('/codes')).items;
    const rows = await exportJson('codes/export');
    expect(
      rows.map((row) => [row.id, row.name, row.status, row.fleet, row.uses, row.pending_approval, row.refused_attempts]),
    ).toEqual(codes.map((c) => [c.id, c.name, c.status, c.fleet, c.uses, c.pending_approval, c.refused_attempts]));
    expect(rows.find((row) => row.id === code.id)).toMatchObject({ domains: ['example.com'], devices: 1, uses: 1 });
    const csv = await (await get('codes/export')).text();
    for (const c of codes) expect(csv).not.toContain(c.token);

    const log = (await list<{ log: Record<string, unknown>[] }>(`/codes/${code.id}`)).log;
    expect(log.map((entry) => entry.outcome)).toEqual(['refused', 'used']);
    const uses = await exportJson(`code-uses/export?code_id=${code.id}`);
    expect(uses).toEqual(
      log.map((entry) => ({
        id: entry.id,
        at: entry.at,
        code_id: code.id,
        code_name: code.name,
        outcome: entry.outcome,
        error: entry.code,
        message: entry.message,
        email: entry.email,
        serial: entry.serial,
        uuid: entry.uuid,
        remote_addr: entry.remote_addr,
        device_id: entry.agent_id,
        device: entry.agent_name,
        enroll_status: entry.enroll_status,
      })),
    );
    expect((await exportJson('code-uses/export?outcome=used')).map((row) => row.email)).toEqual(['walk-in@example.com']);
  });

  it('results: each device’s task of an assignment with its status and the install verified by the inventory', async () => {
    for (const assignment of [deployment, policy]) {
      const tasks = (await list<{ tasks: DeviceTask[] }>(`/policy-assignments/${assignment.id}`)).tasks;
      const rows = await exportJson(`policy-results/export?assignment_id=${assignment.id}`);
      expect(rows.map((row) => [row.task_id, row.device_id, row.device, row.status, row.status_text, row.reason])).toEqual(
        tasks.map((task) => [task.id, task.agent_id, task.agent_name, task.status, task.status_text, task.reason]),
      );
      rows.forEach((row, i) => {
        const verification = tasks[i]!.verification ?? null;
        expect([row.verification, row.verification_detail]).toEqual([verification?.state ?? null, verification?.detail ?? null]);
      });
    }
    const verified = await exportJson(`policy-results/export?assignment_id=${deployment.id}&status=done`);
    expect(verified.map((row) => row.verification)).toEqual(['verified', 'verified']);
    expect(verified[0]).toMatchObject({ policy: 'deployApp', target: 'fleet "Warehouse"', assignment_state: 'active' });
    const csv = csvRecords(await (await get(`policy-results/export?assignment_id=${deployment.id}&status=done`)).text());
    expect(csv.rows.map((row) => row.verification)).toEqual([
      verificationText({ state: 'verified', detail: '', inventory_at: null }),
      'verified',
    ]);
    // By kind, and one device's tasks of every assignment.
    expect(new Set((await exportJson('policy-results/export?kind=value')).map((row) => row.policy))).toEqual(
      new Set(['disableCamera']),
    );
    const phone = Number(devices[0]!.enrollment.agentId);
    const ofPhone = (await list<{ items: DeviceTask[] }>(`/agents/${phone}/tasks`)).items
      .map((task) => task.id)
      .sort((a, b) => a - b);
    expect((await exportJson(`policy-results/export?agent_id=${phone}`)).map((row) => row.task_id)).toEqual(ofPhone);
  });
});

describe('the bulk jobs’ exports', () => {
  it('jobs and each device’s result, as GET /api/jobs and GET /api/jobs/:id list them; a scoped operator’s, their fleets’ only', async () => {
    const ping = (await t.admin('POST', '/jobs', { action: 'ping', selection: { filter: { fleet: 'Warehouse' } } })).body as Job;
    const lock = (
      await t.admin('POST', '/jobs', { action: 'lock', selection: { ids: [Number(devices[2]!.enrollment.agentId)] } })
    ).body as Job;
    for (const job of [ping, lock]) await eventually(async () => (await list<Job>(`/jobs/${job.id}`)).state !== 'running');
    // The ping's answers keep arriving after the job has sent it (written a group at a time), and
    // change its counts and results: the lists and the exports are compared once they have settled
    // (two reads 250 ms apart the same).
    for (let last = '', now = '-'; now !== last;) {
      last = now;
      await new Promise((resolve) => setTimeout(resolve, 250));
      now = JSON.stringify(await list<JobDetail>(`/jobs/${ping.id}`));
    }

    const jobs = (await list<{ items: Job[] }>('/jobs')).items;
    expect(jobs.map((job) => job.id)).toEqual([lock.id, ping.id]);
    const rows = await exportJson('jobs/export');
    expect(rows).toEqual(
      jobs.map((job) => ({
        id: job.id,
        action: job.action,
        state: job.state,
        selection: job.selection,
        params: job.params,
        total: job.total,
        processed: job.processed,
        ...job.counts,
        actor: job.actor,
        error: job.error,
        created_at: job.created_at,
        finished_at: job.finished_at,
      })),
    );
    for (const job of jobs) {
      const results = (await list<JobDetail>(`/jobs/${job.id}`)).results;
      expect(results.length).toBeGreaterThan(0);
      expect(await exportJson(`job-results/export?job_id=${job.id}`), `job ${job.id}`).toEqual(
        results.map((r) => ({
          job_id: job.id,
          action: job.action,
          device_id: r.agent_id,
          device: r.name,
          fleet_id: r.fleet_id,
          fleet: r.fleet_id === fleet.warehouse ? 'Warehouse' : r.fleet_id === fleet.sales ? FORMULA_FLEET : null,
          status: r.status,
          reason: r.reason,
          at: r.at,
          answered_at: r.answered_at,
        })),
      );
    }
    // Every job's results: the newest job's first; one status only.
    const all = await exportJson('job-results/export');
    expect(all.map((row) => row.job_id)).toEqual([lock.id, ...Array<number>(all.length - 1).fill(ping.id)]);
    const offline = await exportJson(`job-results/export?job_id=${ping.id}&status=offline`);
    expect(offline.length).toBeGreaterThan(0);
    expect(offline.every((row) => row.status === 'offline')).toBe(true);

    // Olga sees the Warehouse's job and its devices' results, not the lock of a Sales phone.
    const asOlga = async (path: string) => jsonLines((await withSession(adminUrl, operator, 'GET', `${path}format=jsonl`)).text);
    expect((await asOlga('/jobs/export?')).map((row) => row.id)).toEqual([ping.id]);
    const theirs = await asOlga('/job-results/export?');
    expect(theirs.length).toBe(all.length - 1);
    expect(theirs.every((row) => row.job_id === ping.id && row.fleet === 'Warehouse')).toBe(true);
    expect(await asOlga(`/job-results/export?job_id=${lock.id}&`)).toEqual([]);
  });
});

describe('every export, within the caller’s fleets and the list’s permission', () => {
  it('each export route needs its list’s permission', () => {
    expect(adminRoutes['agents.export'].permission).toBe(adminRoutes['agents.list'].permission);
    expect(adminRoutes['invitations.export'].permission).toBe(adminRoutes['invitations.list'].permission);
    expect(adminRoutes['codes.export'].permission).toBe(adminRoutes['codes.list'].permission);
    expect(adminRoutes['codes.exportUses'].permission).toBe(adminRoutes['codes.get'].permission);
    expect(adminRoutes['policies.exportResults'].permission).toBe(adminRoutes['policies.get'].permission);
    expect(adminRoutes['jobs.export'].permission).toBe(adminRoutes['jobs.list'].permission);
    expect(adminRoutes['jobs.exportResults'].permission).toBe(adminRoutes['jobs.get'].permission);
  });

  it('a scoped operator exports their fleets’ rows only, as their lists show them', async () => {
    const as = async (path: string) => {
      const response = await withSession(adminUrl, operator, 'GET', path);
      expect(response.status, path).toBe(200);
      return response.body as { items: { id: number }[] };
    };
    const exportAs = async (path: string) => {
      const response = await withSession(adminUrl, operator, 'GET', `${path}${path.includes('?') ? '&' : '?'}format=jsonl`);
      expect(response.status, path).toBe(200);
      return jsonLines(response.text);
    };
    const deviceRows = await exportAs('/agents/export');
    expect(deviceRows.length).toBeGreaterThan(3);
    expect(deviceRows.every((row) => row.fleet === 'Warehouse')).toBe(true);
    expect(deviceRows.map((row) => row.id)).toEqual((await as('/agents')).items.map((a) => a.id).sort((a, b) => a - b));
    // Asking for another fleet's devices gives none, not an error that says they exist.
    expect(await exportAs(`/agents/export?fleet_id=${fleet.sales}`)).toEqual([]);

    const invitations = await exportAs('/invitations/export');
    expect(invitations.map((row) => row.id)).toEqual((await as('/invitations')).items.map((i) => i.id));
    expect(invitations.every((row) => row.fleet === 'Warehouse')).toBe(true);
    const codes = await exportAs('/codes/export');
    expect(codes.map((row) => row.name)).toEqual(['+front door']);
    expect((await exportAs('/code-uses/export')).every((row) => row.code_name === '+front door')).toBe(true);
    const results = await exportAs('/policy-results/export');
    expect(new Set(results.map((row) => row.assignment_id))).toEqual(new Set([deployment.id]));
  });
});

describe('CSV a spreadsheet opens safely', () => {
  it('prefixes cells starting with = + - @ with a quote, and quotes commas, quotes and line breaks', async () => {
    const devicesCsv = await (await get(`agents/export?fleet_id=${fleet.sales}`)).text();
    // The fleet's name is quoted (its comma and quotes) and defused.
    expect(devicesCsv).toContain(`"'=HYPERLINK(""http://evil.example"",""Sales"")"`);
    expect(new Set(csvRecords(devicesCsv).rows.map((row) => row.fleet))).toEqual(new Set([`'${FORMULA_FLEET}`]));
    const invitation = csvRecords(await (await get('invitations/export?q=ines')).text()).rows;
    expect(invitation.map((row) => [row.firstname, row.lastname])).toEqual([["'@SUM(A1)", "'-2+3"]]);
    const codes = csvRecords(await (await get('codes/export')).text()).rows;
    expect(codes.map((row) => row.name)).toContain("'+front door");
    // JSON lines carry the values as they are.
    expect((await exportJson('codes/export')).map((row) => row.name)).toContain('+front door');
  });
});
