import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeDeeplinkData } from '../../../src-main/backend/deeplink/codec.ts';
import { enrollByHand, startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { decodeQrPng } from '../../helpers/qr.ts';

let t: TestBackend;
let deeplinkUrl: string;
const ANDROID = 'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 Chrome/126.0 Mobile Safari/537.36';
const IPHONE = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148';
const DESKTOP = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/126.0 Safari/537.36';

beforeAll(async () => {
  t = await startTestBackend();
  deeplinkUrl = t.backend.info.deeplink_url;
  await t.admin('PATCH', '/settings', {
    helpdesk_name: 'IT <b>Desk</b>',
    helpdesk_phone: '+1 555 0100',
    helpdesk_website: 'https://help.example.com/?a=1&b=2',
    helpdesk_email: 'help@example.com',
    app_link_scheme: 'mdmtest',
  });
});
afterAll(async () => {
  await t.stop();
});

const page = async (query: string, userAgent = DESKTOP) => {
  const response = await fetch(`${deeplinkUrl}/deeplink/${query}`, { headers: { 'user-agent': userAgent } });
  return { status: response.status, html: await response.text(), type: response.headers.get('content-type') };
};

describe('the deeplink page', () => {
  it('shows desktop browsers the helpdesk and a QR code of the page itself', async () => {
    const { body: invitation } = await t.admin('POST', '/invitations', { email: 'page@example.com' });
    const url = new URL(invitation.deeplink);
    expect(url.origin).toBe(deeplinkUrl);
    const { status, html, type } = await page(url.search);
    expect(status).toBe(200);
    expect(type).toContain('text/html');
    expect(html).toContain('IT &#60;b&#62;Desk&#60;/b&#62;');
    expect(html).not.toContain('<b>Desk</b>');
    expect(html).toContain('<a href="https://help.example.com/?a=1&#38;b=2"');
    expect(html).toContain('<svg');
    expect(html).not.toContain('Enroll this device</a>');
  });

  it('gives Android and iOS browsers a button carrying the app link', async () => {
    const { body: invitation } = await t.admin('POST', '/invitations', { email: 'phone@example.com' });
    for (const agent of [ANDROID, IPHONE]) {
      const { status, html } = await page(new URL(invitation.deeplink).search, agent);
      expect(status).toBe(200);
      const href = /<a class="button" href="([^"]+)">Enroll this device<\/a>/.exec(html)?.[1];
      expect(href).toBe(invitation.app_link.replaceAll('&', '&#38;'));
      expect(href).toMatch(/^mdmtest:\/\/register\?data=/);
    }
  });

  it('escapes every decoded field and links a website only when it is http(s)', async () => {
    const data = encodeDeeplinkData({
      backendUrl: 'http://h/api',
      userToken: 'u',
      invitationToken: 'i',
      helpdeskName: '<script>alert(1)</script>',
      helpdeskPhone: '"><img src=x onerror=alert(1)>',
      helpdeskWebsite: 'javascript:alert(1)',
      helpdeskEmail: 'a@b.c"onmouseover="x',
    });
    const { status, html } = await page(`?data=${encodeURIComponent(data)}`);
    expect(status).toBe(200);
    expect(html).not.toContain('<script>alert');
    expect(html).not.toContain('<img src=x');
    expect(html).not.toContain('href="javascript:');
    expect(html).not.toMatch(/"onmouseover=/);
    expect(html).toContain('javascript:alert(1)'); // shown as text
  });

  it('reads legacy separators, base64url and + read as space', async () => {
    const legacy = Buffer.from('http://h/api\\;ut\\;it\\;Legacy Desk\\;\\;\\;').toString('base64');
    expect((await page(`?data=${encodeURIComponent(legacy)}`)).html).toContain('Legacy Desk');
    const data = encodeDeeplinkData({
      backendUrl: 'http://h/api',
      userToken: 'u',
      invitationToken: 'i',
      helpdeskName: '>>>???',
      helpdeskPhone: '',
      helpdeskWebsite: '',
      helpdeskEmail: '',
    });
    const url = data.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    expect((await page(`?data=${url}`)).status).toBe(200);
    expect((await page(`?data=${data}`)).status).toBe(200); // raw '+' arrives as a space
  });

  it.each([
    ['no data', ''],
    ['empty data', '?data='],
    ['garbage', '?data=%25%25%25'],
    ['too few fields', `?data=${Buffer.from('just-one-field').toString('base64')}`],
    ['array data', '?data=a&data=b'],
  ])('answers %s with a clear 400 page', async (_name, query) => {
    const { status, html, type } = await page(query);
    expect(status).toBe(400);
    expect(type).toContain('text/html');
    expect(html).toContain('Invalid enrollment link');
  });

  it('says so when the invitation was used, revoked or has expired, instead of offering to enroll', async () => {
    const { body: used } = await t.admin('POST', '/invitations', { email: 'used-page@example.com', send_email: false });
    const before = await page(new URL(used.deeplink).search);
    expect(before.status).toBe(200);
    expect(before.html).toContain('Enroll your device');
    await enrollByHand(t.apiUrl, used, { serial: 'PAGE-USED-1' });
    for (const agent of [DESKTOP, ANDROID]) {
      const after = await page(new URL(used.deeplink).search, agent);
      expect(after.status).toBe(410);
      expect(after.html).toContain('<h1>This invitation has already been used</h1>');
      expect(after.html).not.toMatch(/Enroll (your|this) device/);
      expect(after.html).not.toContain('<svg');
      expect(after.html).toContain('help@example.com');
    }

    const { body: revoked } = await t.admin('POST', '/invitations', { email: 'revoked-page@example.com', send_email: false });
    await t.admin('POST', `/invitations/${revoked.id}/revoke`);
    const withdrawn = await page(new URL(revoked.deeplink).search);
    expect(withdrawn.status).toBe(410);
    expect(withdrawn.html).toContain('This invitation was withdrawn');

    const { body: old } = await t.admin('POST', '/invitations', { email: 'expired-page@example.com', send_email: false });
    await t.backend.services.repositories.invitations.setExpiry(old.id, '2020-01-02T00:00:00.000Z');
    const expired = await page(new URL(old.deeplink).search);
    expect(expired.status).toBe(410);
    expect(expired.html).toContain('This invitation has expired');
    expect(expired.html).toContain('2 Jan 2020');
  });

  it('serves a QR code (PNG and SVG) that decodes back to the deeplink', async () => {
    const { body: invitation } = await t.admin('POST', '/invitations', { email: 'qr@example.com' });
    const response = await fetch(`${t.backend.info.admin_url}/api/invitations/${invitation.id}/qr.png`, {
      headers: { authorization: `Bearer ${t.backend.info.admin_token}` },
    });
    expect(response.headers.get('content-type')).toBe('image/png');
    expect(decodeQrPng(Buffer.from(await response.arrayBuffer()))).toBe(invitation.deeplink);
    const svg = await fetch(`${t.backend.info.admin_url}/api/invitations/${invitation.id}/qr.svg`, {
      headers: { authorization: `Bearer ${t.backend.info.admin_token}` },
    });
    expect(svg.headers.get('content-type')).toContain('image/svg+xml');
    expect(await svg.text()).toMatch(/^<svg/);
  });
});
