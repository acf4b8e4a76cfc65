// The --where language over real HTTP and SQLite (issue 25, item 2): GET /api/agents?where= selects
// by fleet, type, model, OS version (as versions), last contact, online, enrollment status,
// compliance, installed app and its version, and free text; a typo is a 400 naming the column,
// never a 500; a scoped token never sees another fleet's devices; saved views list live counts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrokerAgentRepository } from '../../../src-main/backend/agents/broker-repository.ts';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { runCli } from '../../helpers/cli.ts';
import { withBearer } from '../../helpers/console-session.ts';
import { seedDevices } from '../../helpers/seed-devices.ts';

let t: TestBackend;
/** Each seeded device by serial: its id. */
const id: Record<string, number> = {};

/** A FusionInventory report as the Flyve agents send it, with what the language reads. */
const inventory = (model: string, os: string, apps: [string, string][]) => `<?xml version="1.0" encoding="UTF-8"?>
<REQUEST><CONTENT>
  <BIOS><SMANUFACTURER>samsung</SMANUFACTURER><SMODEL>${model}</SMODEL></BIOS>
  <OPERATINGSYSTEM><NAME>Android</NAME><VERSION>${os}</VERSION></OPERATINGSYSTEM>
  ${apps.map(([pkg, version]) => `<SOFTWARES><NAME>${pkg}</NAME><COMMENTS>${pkg}</COMMENTS><VERSION>${version}</VERSION></SOFTWARES>`).join('\n  ')}
</CONTENT><QUERY>INVENTORY</QUERY></REQUEST>`;

beforeAll(async () => {
  t = await startTestBackend();
  // W000000…W000011: every third an iPhone, by sevens over Warehouse then Office.
  await seedDevices(t.dataDir, { count: 12, fleets: ['Warehouse', 'Office'], prefix: 'W' });
  for (const agent of (await t.admin('GET', '/agents')).body.items as { id: number; serial: string }[])
    id[agent.serial] = agent.id;
  const reports = t.backend.services.reports;
  const scanner = 'com.example.scanner';
  await reports.inventory(id.W000001!, inventory('Galaxy Tab A', '9', [[scanner, '2.2.0']]), 'http');
  await reports.inventory(id.W000002!, inventory('Galaxy S10', '10', [[scanner, '2.10']]), 'http');
  await reports.inventory(id.W000004!, inventory('Pixel 6', '10.1', [[scanner, '2.3']]), 'http');
  await reports.inventory(id.W000005!, inventory('moto g(8)', '8.1.0_r3', [['com.other.app', '1.0']]), 'http');
  await reports.inventory(id.W000008!, inventory('Galaxy A52', '13', []), 'http');
  // Presence: all offline, seen a minute ago, but W000001 ten days ago and W000002 online now.
  const presence = new BrokerAgentRepository(t.sql);
  const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
  for (const agentId of Object.values(id)) await presence.setPresence(agentId, false, ago(60_000));
  await presence.setPresence(id.W000001!, false, ago(10 * 86_400_000));
  await presence.setPresence(id.W000002!, true, ago(0));
});
afterAll(async () => {
  await t.stop();
});

const serials = async (where: string): Promise<string[]> => {
  const response = await t.admin('GET', `/agents?where=${encodeURIComponent(where)}`);
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return (response.body.items as { serial: string }[]).map((a) => a.serial).sort();
};

describe('GET /api/agents?where=', () => {
  it('compares OS and app versions as versions, never as strings', async () => {
    expect(await serials('os<10')).toEqual(['W000001', 'W000005']); // 9 and 8.1, not "10.1" < "9"
    expect(await serials('os>=10')).toEqual(['W000002', 'W000004', 'W000008']);
    expect(await serials('os=10')).toEqual(['W000002']);
    expect(await serials('os>10 os<13')).toEqual(['W000004']);
    expect(await serials('app=com.example.scanner app_version<2.3')).toEqual(['W000001']); // 2.2.0; 2.10 is newer
    expect(await serials('app=com.example.scanner app_version>=2.3')).toEqual(['W000002', 'W000004']);
    expect(await serials('app=com.example.scanner')).toEqual(['W000001', 'W000002', 'W000004']);
    expect(await serials('app!=com.example.scanner type=android')).toEqual([
      'W000005',
      'W000007',
      'W000008',
      'W000010',
      'W000011',
    ]);
    expect(await serials('app~scan')).toEqual(['W000001', 'W000002', 'W000004']);
  });

  it('selects by fleet (name or id), type, model, last contact, online, status, compliance and free text', async () => {
    const fleets = (await t.admin('GET', '/fleets')).body.items as { id: number; name: string }[];
    const office = fleets.find((f) => f.name === 'Office')!.id;
    expect(await serials('fleet=warehouse')).toEqual([
      'W000000',
      'W000001',
      'W000002',
      'W000003',
      'W000004',
      'W000005',
      'W000006',
    ]);
    expect(await serials(`fleet=${office}`)).toEqual(['W000007', 'W000008', 'W000009', 'W000010', 'W000011']);
    expect(await serials(`fleet!=${office} type=apple`)).toEqual(['W000000', 'W000003', 'W000006']);
    expect(await serials('model~"galaxy s"')).toEqual(['W000002']);
    expect(await serials('model~Galaxy OR model="Pixel 6"')).toEqual(['W000001', 'W000002', 'W000004', 'W000008']);
    expect(await serials('last_contact>7d')).toEqual(['W000001']);
    expect(await serials('last_contact<2h online=no fleet=Office')).toEqual([
      'W000007',
      'W000008',
      'W000009',
      'W000010',
      'W000011',
    ]);
    expect(await serials('online=yes')).toEqual(['W000002']);
    expect(await serials('status!=enrolled')).toEqual([]);
    expect(await serials('compliance=none fleet=Office')).toEqual(['W000007', 'W000008', 'W000009', 'W000010', 'W000011']);
    expect(await serials('compliance=failed')).toEqual([]);
    expect(await serials('W00001')).toEqual(['W000010', 'W000011']);
    expect(await serials('"w000009"')).toEqual(['W000009']);
    // LIKE's wildcards are text: nothing has a % in its name.
    expect(await serials('"%"')).toEqual([]);
    expect(await serials('(os<10 OR online=yes) fleet=Warehouse')).toEqual(['W000001', 'W000002', 'W000005']);
  });

  it('answers a mistake with a 400 naming its column and what was expected, never a 500', async () => {
    for (const [where, message] of [
      ['os<ten', 'where: at column 4: os: expected an OS version like 10 or 10.1, not "ten"'],
      ['osversion<10', 'where: at column 1: unknown field "osversion"'],
      ['last_contact>7 days', 'where: at column 14: last_contact: expected a duration like 7d, 12h or 30m (or never), not "7"'],
      ['model~"Galaxy', 'where: at column 7: this quote is never closed: expected a closing "'],
      ['=Warehouse', 'where: at column 1: expected a field before "="'],
      ['app_version<2', 'where: at column 1: app_version needs an app=PACKAGE term'],
    ] as const) {
      const response = await t.admin('GET', `/agents?where=${encodeURIComponent(where)}`);
      expect(response.status, where).toBe(400);
      expect(response.body.error).toBe('ERROR_BAD_WHERE');
      expect(response.body.message.startsWith(message), response.body.message).toBe(true);
    }
    // SQL in an expression is only ever text to look for: nothing matches, the devices are all there.
    expect(await serials("'; DROP TABLE agents; --")).toEqual([]);
    expect(await serials('name="x\' OR 1=1 --"')).toEqual([]);
    expect(await serials('')).toHaveLength(12);
    expect((await t.admin('GET', `/agents?where=${'x'.repeat(2001)}`)).status).toBe(400);
    expect((await t.admin('GET', '/agents?fleet=Nowhere')).body).toMatchObject({ error: 'ERROR_UNKNOWN_FLEET' });
    expect((await t.admin('GET', '/agents?fleet=Office')).body.items).toHaveLength(5);
  });

  it('keeps a scoped token within its fleets: another fleet’s devices never match', async () => {
    const fleets = (await t.admin('GET', '/fleets')).body.items as { id: number; name: string }[];
    const office = fleets.find((f) => f.name === 'Office')!.id;
    const token = (await t.admin('POST', '/tokens', { name: 'office desk', role: 'operator', fleet_ids: [office] })).body
      .token as string;
    const seen = await withBearer(t.backend.info.admin_url, token, `/agents?where=${encodeURIComponent('os<=13')}`);
    expect(seen.status).toBe(200);
    expect((seen.body as { items: { serial: string }[] }).items.map((a) => a.serial)).toEqual(['W000008']);
    const warehouse = await withBearer(t.backend.info.admin_url, token, `/agents?where=${encodeURIComponent('fleet=Warehouse')}`);
    expect((warehouse.body as { items: unknown[] }).items).toEqual([]);
  });
});

describe('saved views', () => {
  it('are saved, listed with live counts, renamed, refused when the name is taken or the expression wrong, and deleted; each change audited', async () => {
    const created = await t.admin('POST', '/views', { name: 'Old Android', where: 'type=android os<10' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'Old Android', where: 'type=android os<10', count: 2, assignments: 0 });
    expect((await t.admin('POST', '/views', { name: 'old android', where: 'os<9' })).status).toBe(409);
    const bad = await t.admin('POST', '/views', { name: 'Typo', where: 'os<<9' });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toMatch(/^where: at column 4: /);
    expect((await t.admin('POST', '/views', { name: '  ', where: '' })).status).toBe(400);

    // The count is live: a device whose inventory says Android 12 now leaves the view.
    await t.backend.services.reports.inventory(id.W000005!, inventory('moto g(8)', '12', []), 'http');
    expect((await t.admin('GET', '/views')).body.items).toEqual([expect.objectContaining({ name: 'Old Android', count: 1 })]);
    expect(
      (await t.admin('GET', `/agents?view=${encodeURIComponent('old android')}`)).body.items.map((a: any) => a.serial),
    ).toEqual(['W000001']);
    expect((await t.admin('GET', `/agents?view=${created.body.id}&where=online=yes`)).body.items).toEqual([]);
    expect((await t.admin('GET', '/agents?view=Nope')).body).toMatchObject({
      error: 'ERROR_UNKNOWN_VIEW',
      message: 'Unknown view "Nope"',
    });

    const renamed = await t.admin('PATCH', `/views/${created.body.id}`, { name: 'Legacy', where: 'os<13' });
    expect(renamed.body).toMatchObject({ name: 'Legacy', where: 'os<13', count: 4 });
    expect((await t.admin('PATCH', `/views/${created.body.id}`, { where: 'os<' })).status).toBe(400);
    expect((await t.admin('DELETE', `/views/${created.body.id}`)).status).toBe(204);
    expect((await t.admin('GET', '/views')).body.items).toEqual([]);
    expect((await t.admin('DELETE', `/views/${created.body.id}`)).status).toBe(404);

    const audit = (await t.admin('GET', '/audit?limit=20')).body.items as {
      action: string;
      target_kind: string;
      target_name: string;
    }[];
    expect(audit.filter((entry) => entry.target_kind === 'view').map((entry) => entry.action)).toEqual([
      'view.deleted',
      'view.updated',
      'view.created',
    ]);
  });
});

describe('the CLI', () => {
  it('devices --where/--view/--fleet, views with counts, view add/edit/rm, each with --json; a typo is refused with its column', async () => {
    const cli = (...args: string[]) => runCli(t.dataDir, args);
    const listed = await cli('devices', '--where', 'os>=10 fleet=Warehouse', '--json');
    expect(listed.code, listed.stderr).toBe(0);
    // W000005 runs Android 12 since the views' test.
    expect((JSON.parse(listed.stdout) as { serial: string }[]).map((a) => a.serial).sort()).toEqual([
      'W000002',
      'W000004',
      'W000005',
    ]);
    const human = await cli('devices', '--where', 'model~pixel');
    expect(human.stdout).toMatch(/^#\d+ {2}W000004 {2}android .* fleet Warehouse {2}Android 10\.1 {2}Pixel 6 /);

    const typo = await cli('devices', '--where', 'os<<10');
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('where: at column 4: os: expected an OS version like 10 or 10.1, not "<10"');

    const added = await cli('view', 'add', 'Scanner outdated', '--where', 'app=com.example.scanner app_version<2.3', '--json');
    expect(added.code, added.stderr).toBe(0);
    expect(JSON.parse(added.stdout)).toMatchObject({ name: 'Scanner outdated', count: 1 });
    expect((await cli('views')).stdout).toMatch(
      /^#\d+ {2}Scanner outdated {2}1 device {2}app=com\.example\.scanner app_version<2\.3$/m,
    );
    const members = await cli('devices', '--view', 'scanner outdated', '--json');
    expect((JSON.parse(members.stdout) as { serial: string }[]).map((a) => a.serial)).toEqual(['W000001']);
    expect((await cli('devices', '--view', 'scanner outdated', '--fleet', 'Office', '--json')).stdout.trim()).toBe('[]');
    expect((await cli('view', 'edit', 'Scanner outdated', '--where', 'app=com.example.scanner app_version<=2.3')).stdout).toMatch(
      /2 devices/,
    );
    const unknown = await cli('devices', '--view', 'Nope');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('Unknown view "Nope"');
    const removed = await cli('view', 'rm', 'Scanner outdated', '--json');
    expect(JSON.parse(removed.stdout)).toMatchObject({ name: 'Scanner outdated' });
    expect((await cli('views', '--json')).stdout.trim()).toBe('[]');
  }, 180_000);
});
