import { describe, expect, it } from 'vitest';
import { DEFAULT_GENERAL_SETTINGS, type AgentSummary as Agent } from '../../../src-shared/contract/index.ts';
import { matchPath } from '../../../src-renderer/lib/router.tsx';
import { mailPatch } from '../../../src-renderer/features/mail-settings.tsx';
import { funnelOf } from '../../../src-renderer/lib/dashboard.ts';
import { changedIds, enrollStatusOf, matchesSearch, searchTerms } from '../../../src-renderer/lib/devices.ts';
import { countOf, formatBytes, fullName, relativeTime } from '../../../src-renderer/lib/format.ts';
import { shortFingerprint } from '../../../src-renderer/lib/hash.ts';
import {
  cardSize,
  defaultPaper,
  pageRule,
  paginate,
  PAPERS,
  parsePrintQuery,
  printQuery,
} from '../../../src-renderer/lib/print-layout.ts';
import { appliedNote, settingsErrors, settingsPatch, type GeneralSettings } from '../../../src-renderer/lib/settings.ts';
import { isLoopback, isValidHost } from '../../../src-shared/contract/rules.ts';

describe('formatting', () => {
  const now = Date.parse('2026-06-01T12:00:00Z');
  it('says how long ago or ahead, in words', () => {
    expect(relativeTime(null, now)).toBe('never');
    expect(relativeTime('garbage', now)).toBe('—');
    expect(relativeTime('2026-06-01T11:59:40Z', now)).toBe('just now');
    expect(relativeTime('2026-06-01T11:55:00Z', now)).toBe('5 minutes ago');
    expect(relativeTime('2026-06-01T09:00:00Z', now)).toBe('3 hours ago');
    expect(relativeTime('2026-06-08T12:00:00Z', now)).toBe('in 7 days');
    expect(relativeTime('2026-05-31T12:00:00Z', now)).toBe('yesterday');
    expect(relativeTime('2026-03-01T12:00:00Z', now)).toBe('3 months ago');
    // An event newer than the last clock tick is past all the same: never "in a few seconds".
    expect(relativeTime('2026-06-01T12:00:20Z', now, { past: true })).toBe('just now');
    expect(relativeTime('2026-06-01T12:03:00Z', now, { past: true })).toBe('just now');
    expect(relativeTime('2026-06-01T11:55:00Z', now, { past: true })).toBe('5 minutes ago');
  });
  it('writes sizes and names', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(3 * 1024 * 1024)).toBe('3.00 MB');
    expect(formatBytes(150 * 1024)).toBe('150 KB');
    expect(formatBytes(-1)).toBe('—');
    expect(fullName({ firstname: 'Ada', lastname: null })).toBe('Ada');
    expect(shortFingerprint('a')).toBe(shortFingerprint('a'));
    expect(shortFingerprint('a')).not.toBe(shortFingerprint('b'));
  });
});

describe('print sheets', () => {
  it('lays out 6 cards a page on A4 and Letter', () => {
    expect(paginate([1, 2, 3, 4, 5, 6, 7], PAPERS.a4)).toEqual([[1, 2, 3, 4, 5, 6], [7]]);
    expect(paginate([], PAPERS.letter)).toEqual([]);
    const a4 = cardSize(PAPERS.a4);
    expect(a4.widthMm).toBeCloseTo(92);
    expect(a4.heightMm).toBeCloseTo(88.33, 1);
    expect(cardSize(PAPERS.letter).heightMm).toBeCloseTo(82.47, 1);
    expect(pageRule(PAPERS.letter)).toBe('@page { size: letter portrait; margin: 10mm; }');
  });
  it('reads and writes the print address', () => {
    expect(parsePrintQuery('?ids=3,1,3,x,-2,0&paper=letter')).toEqual({ ids: [3, 1], paper: 'letter', all: false });
    expect(parsePrintQuery('?paper=tabloid')).toEqual({ ids: [], paper: null, all: false });
    expect(printQuery([1, 2], 'a4')).toBe('?ids=1,2&paper=a4');
    expect(printQuery([1, 2], 'a4', { all: true })).toBe('?ids=1,2&paper=a4&all=1');
    expect(parsePrintQuery(printQuery([4], undefined, { all: true }))).toEqual({ ids: [4], paper: null, all: true });
    expect(defaultPaper('en-US')).toBe('letter');
    expect(defaultPaper('fr-CA')).toBe('letter');
    expect(defaultPaper('en-GB')).toBe('a4');
    expect(defaultPaper('de')).toBe('a4');
  });
});

describe('settings', () => {
  // Valid as they stand: a fresh install's settings.
  const base: GeneralSettings = { ...DEFAULT_GENERAL_SETTINGS };
  it('refuses a ";" in the helpdesk fields only while the agent app is Flyve MDM', () => {
    expect(settingsErrors({ ...base, helpdesk_name: 'IT; floor 2' })).toEqual({});
    expect(settingsErrors({ ...base, agent_app: 'flyve', helpdesk_name: 'IT; floor 2', helpdesk_phone: '+33 1' })).toEqual({
      helpdesk_name: expect.stringContaining('No ";"'),
    });
  });
  it('validates hosts, URLs, schemes, addresses and lifetimes', () => {
    expect(settingsErrors(base)).toEqual({});
    expect(isValidHost('192.168.1.20')).toBe(true);
    expect(isValidHost('mdm.example.lan')).toBe(true);
    expect(isValidHost('fe80::1')).toBe(true);
    expect(isValidHost('300.1.1.1')).toBe(false);
    expect(isValidHost('http://x')).toBe(false);
    expect(isLoopback('127.0.1.1')).toBe(true);
    expect(isLoopback('localhost')).toBe(true);
    expect(isLoopback('10.0.0.1')).toBe(false);
    expect(
      Object.keys(
        settingsErrors({
          ...base,
          public_host: 'http://host:8080',
          deeplink_base_url: 'enroll.example.com',
          app_link_scheme: 'https',
          helpdesk_email: 'nope',
          helpdesk_website: 'not a site',
          invitation_lifetime_days: 181,
          android_bugcollector_url: 'ftp://x',
        }),
      ).sort(),
    ).toEqual([
      'android_bugcollector_url',
      'app_link_scheme',
      'deeplink_base_url',
      'helpdesk_email',
      'helpdesk_website',
      'invitation_lifetime_days',
      'public_host',
    ]);
    expect(settingsErrors({ ...base, deeplink_base_url: 'https://enroll.example.com/x?y' }).deeplink_base_url).toMatch(
      /without \?/,
    );
    expect(settingsErrors({ ...base, helpdesk_website: 'help.example.com' })).toEqual({});
  });
  it('sends only what changed, cleaned, and says what applies at once', () => {
    const patch = settingsPatch(base, {
      ...base,
      helpdesk_name: ' Desk ',
      deeplink_base_url: 'https://e.example.com/',
      android_bugcollector_passwd: ' secret ',
    });
    expect(patch).toEqual({
      helpdesk_name: 'Desk',
      deeplink_base_url: 'https://e.example.com',
      android_bugcollector_passwd: ' secret ',
    });
    expect(settingsPatch(base, { ...base })).toEqual({});
    expect(appliedNote({ public_host: 'x' })).toMatch(/QR codes and deeplinks/);
    expect(appliedNote({ invitation_lifetime_days: 3 })).toMatch(/existing ones keep theirs/);
    expect(appliedNote({})).toBe('Applied now, no restart needed.');
  });
  it('sends mail settings that changed, and the password only when typed', () => {
    const before = {
      smtp_host: '',
      smtp_port: 0,
      smtp_security: 'auto',
      smtp_user: '',
      smtp_reject_unauthorized: true,
      smtp_max_connections: 3,
      mail_from_address: '',
      mail_from_name: 'MDM Console',
      mail_send_on_create: true,
      mail_inviter: '',
      mail_agent_app_url: '',
      mail_subject_template: '',
      mail_html_template: '',
      mail_text_template: '',
    } as const;
    expect(mailPatch(before, { ...before, smtp_password: '' })).toEqual({});
    expect(
      mailPatch(before, { ...before, smtp_host: ' smtp.example.com ', mail_text_template: ' {{name}} ', smtp_password: 'pw' }),
    ).toEqual({
      smtp_host: 'smtp.example.com',
      mail_text_template: ' {{name}} ',
      smtp_password: 'pw',
    });
  });
});

describe('devices', () => {
  const agent = (patch: Partial<Agent>): Agent => ({
    id: 1,
    name: 'R58ABC',
    serial: 'R58ABC',
    uuid: 'u-1',
    type: 'android',
    version: '1.2.0',
    enroll_status: 'enrolled',
    is_online: false,
    last_contact: null,
    last_report: null,
    lock: 0,
    wipe: 0,
    fleet_id: 1,
    fleet: 'Sales',
    email: 'ada@example.com',
    firstname: 'Ada',
    lastname: 'Lovelace',
    computer_id: 1,
    invitation_id: 1,
    enrollment_code_id: null,
    enrollment_code: null,
    topic: '',
    entity_id: 1,
    created_at: '',
    updated_at: '',
    model: null,
    manufacturer: null,
    os_name: null,
    os_version: null,
    ...patch,
  });
  it('searches every word across the fields', () => {
    expect(matchesSearch(agent({}), searchTerms('  ada   sales '))).toBe(true);
    expect(matchesSearch(agent({}), searchTerms('r58abc lovelace'))).toBe(true);
    expect(matchesSearch(agent({}), searchTerms('ada apple'))).toBe(false);
    expect(matchesSearch(agent({}), [])).toBe(true);
  });
  it('finds new and changed rows to flash, never on the first load', () => {
    const before = [agent({ id: 1 }), agent({ id: 2 })];
    expect(changedIds(undefined, before)).toEqual([]);
    expect(
      changedIds(before, [agent({ id: 3 }), agent({ id: 1, is_online: true }), agent({ id: 2, last_contact: 'x' })]),
    ).toEqual([3, 1]);
    expect(enrollStatusOf('enrolled').label).toBe('Enrolled');
    expect(enrollStatusOf('quarantined').label).toBe('Quarantined');
  });
});

describe('dashboard and routing', () => {
  it('builds the ways in → enrolled → online funnel, invitations and codes both, never widening', () => {
    const counts = { invitations: 10, enrolled: 4, online: 3, code_devices: 0, code_enrolled: 0, pending_approval: 0 };
    expect(funnelOf(counts).map((s) => [s.label, s.value, s.rate])).toEqual([
      ['Invited', 10, ''],
      ['Enrolled', 4, '40% of invited'],
      ['Online', 3, '75% of enrolled'],
    ]);
    // What a new admin met: 4 devices by invitation and 2 by a code; the funnel said 4, Devices 6.
    const both = funnelOf({ invitations: 8, enrolled: 6, online: 5, code_devices: 3, code_enrolled: 2, pending_approval: 1 });
    expect(both.map((s) => [s.label, s.value, s.rate])).toEqual([
      ['Invited or with a code', 11, ''],
      ['Enrolled', 6, '55% of those'],
      ['Online', 5, '83% of enrolled'],
    ]);
    expect(both.map((s) => s.means)).toEqual([
      '8 invitations sent, 3 devices came with an enrollment code',
      'devices enrolled now: 4 with an invitation, 2 with a code; 1 more waits for approval',
      'enrolled devices connected to the broker right now',
    ]);
    expect(funnelOf({ ...counts, invitations: 0, enrolled: 0, online: 0 })[1]!.rate).toBe('—');
    expect(funnelOf({ ...counts, invitations: 2, enrolled: 5, online: 9 }).map((s) => s.value)).toEqual([5, 5, 5]);
  });
  it('counts with the noun in the right number ("1 device", never "1 devices")', () => {
    expect(countOf(1, 'device')).toBe('1 device');
    expect(countOf(0, 'device')).toBe('0 devices');
    expect(countOf(1200, 'device')).toBe(`${(1200).toLocaleString()} devices`);
    expect(countOf(1, 'more waits', 'more wait')).toBe('1 more waits');
  });
  it('matches console paths', () => {
    expect(matchPath('/invitations/:id', '/invitations/12')).toEqual({ id: '12' });
    expect(matchPath('/invitations/:id', '/invitations/12/')).toEqual({ id: '12' });
    expect(matchPath('/invitations/:id', '/invitations')).toBeNull();
    expect(matchPath('/a.b', '/aXb')).toBeNull();
    expect(matchPath('/files', '/files')).toEqual({});
  });
});
