/**
 * Settings under which some invitation's QR code could not be drawn are refused, saying how many
 * characters are left; links that are too long anyway (settings saved by an older version, or a
 * crafted deeplink) get a 400 from the page and the QR routes, and emails go out without the image.
 */
import { readFileSync } from 'node:fs';
import PostalMime from 'postal-mime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeDeeplinkData } from '../../../src-main/backend/deeplink/codec.ts';
import { startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { decodeQrPng } from '../../helpers/qr.ts';
import { eventually } from '../../helpers/smtp.ts';

let t: TestBackend;
beforeAll(async () => {
  t = await startTestBackend();
});
afterAll(async () => {
  await t.stop();
});

const qrPng = async (id: number, size = 480) => {
  const response = await fetch(`${t.backend.info.admin_url}/api/invitations/${id}/qr.png?size=${size}`, {
    headers: { authorization: `Bearer ${t.backend.info.admin_token}` },
  });
  return { status: response.status, body: Buffer.from(await response.arrayBuffer()) };
};

describe('settings and the QR code capacity', () => {
  it('refuses a helpdesk website that would overflow a QR code, says how many characters are left, and accepts exactly that many', async () => {
    const website = `https://help.example.com/${'w'.repeat(2020)}`; // within the 2,048 the schema allows
    const refused = await t.admin('PATCH', '/settings', { helpdesk_website: website });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('ERROR_LINK_TOO_LONG');
    expect(refused.body.message).toMatch(/too long for a QR code/);
    const left = Number(/helpdesk_website has (\d+) characters left/.exec(refused.body.message)?.[1]);
    expect(left).toBeGreaterThan(1000);
    expect(left).toBeLessThan(website.length);
    expect((await t.admin('GET', '/settings')).body.helpdesk_website).toBe(''); // nothing saved

    expect((await t.admin('PATCH', '/settings', { helpdesk_website: website.slice(0, left + 1) })).status).toBe(400);
    const accepted = await t.admin('PATCH', '/settings', { helpdesk_website: website.slice(0, left) });
    expect(accepted.status).toBe(200);

    // At the limit, every invitation's QR code is drawn and reads back as its deeplink.
    for (let i = 0; i < 2; i++) {
      const { body: invitation } = await t.admin('POST', '/invitations', { email: `edge${i}@example.com`, send_email: false });
      const png = await qrPng(invitation.id, 2048); // a version-40 code: read back at full size
      expect(png.status).toBe(200);
      expect(decodeQrPng(png.body)).toBe(invitation.deeplink);
    }
    // With the website at its limit, a longer helpdesk name is refused in turn, naming that field.
    const name = await t.admin('PATCH', '/settings', { helpdesk_name: 'A helpdesk name that no longer fits' });
    expect(name.status).toBe(400);
    expect(name.body.message).toMatch(/helpdesk_name has \d+ characters left|leaving no characters for helpdesk_name/);
    await t.admin('PATCH', '/settings', { helpdesk_website: '' });
  });

  it('answers 400, not 500, for links too long for any QR code; the email goes out with the link alone', async () => {
    const { body: invitation } = await t.admin('POST', '/invitations', { email: 'legacy@example.com', send_email: false });
    // As an older version could have saved them, unchecked.
    await t.backend.services.settings.update({
      helpdesk_website: `https://help.example.com/${'w'.repeat(2020)}`,
      helpdesk_name: 'n'.repeat(200),
    });

    const png = await qrPng(invitation.id);
    expect(png.status).toBe(400);
    expect(JSON.parse(String(png.body))).toMatchObject({ error: 'ERROR_LINK_TOO_LONG' });
    const svg = await fetch(`${t.backend.info.admin_url}/api/invitations/${invitation.id}/qr.svg`, {
      headers: { authorization: `Bearer ${t.backend.info.admin_token}` },
    });
    expect(svg.status).toBe(400);

    const { body: view } = await t.admin('GET', `/invitations/${invitation.id}`);
    const page = await fetch(view.deeplink);
    expect(page.status).toBe(400);
    expect(await page.text()).toContain('too long to be shown as a QR code');

    const resent = await t.admin('POST', `/invitations/${invitation.id}/resend`);
    expect(resent.status).toBeLessThan(300);
    const delivered = await eventually(
      async () => {
        const { body } = await t.admin('GET', `/invitations/${invitation.id}`);
        return body.delivery && ['outbox', 'failed'].includes(body.delivery.state) ? body.delivery : null;
      },
      20_000,
      'the email of the too-long invitation',
    );
    expect(delivered.state).toBe('outbox');
    const mail = await PostalMime.parse(readFileSync(delivered.outbox_file as string));
    expect(mail.text).toContain(view.deeplink);
    expect(mail.attachments).toHaveLength(0);
    expect(mail.html).toContain(view.deeplink.replaceAll('&', '&amp;').slice(0, 60));
    expect(mail.html).not.toMatch(/<img[^>]*src=""/);

    const preview = await t.admin('POST', '/mail/preview', { invitation_id: invitation.id });
    expect(preview.status).toBe(200);
    await t.backend.services.settings.update({ helpdesk_website: '', helpdesk_name: '' });
  });

  it('answers a crafted oversized deeplink with the 400 page, without credentials', async () => {
    const data = encodeDeeplinkData({
      backendUrl: 'http://127.0.0.1:1/api',
      userToken: 'u'.repeat(40),
      invitationToken: 'i'.repeat(64),
      helpdeskName: 'n'.repeat(3000),
      helpdeskPhone: '',
      helpdeskWebsite: '',
      helpdeskEmail: '',
    });
    const response = await fetch(`${t.backend.info.deeplink_url}/deeplink/?data=${encodeURIComponent(data)}`);
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toContain('text/html');
    expect(await response.text()).toContain('too long to be shown as a QR code');
  });
});
