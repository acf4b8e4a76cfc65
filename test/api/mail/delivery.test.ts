import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeDeeplink } from '../../../src-main/device/deeplink.ts';
import { enrollByHand, startTestBackend, type TestBackend } from '../../helpers/backend.ts';
import { decodeQrPng } from '../../helpers/qr.ts';
import { asBuffer, eventually, startTestSmtp, type ReceivedMail, type TestSmtp } from '../../helpers/smtp.ts';
import type { Invitation } from '../../../src-shared/contract/index.ts';

// The invitation email against a real SMTP server on loopback, parsed the way a mail client would.

let smtp: TestSmtp;
let t: TestBackend;
let counter = 0;

beforeAll(async () => {
  smtp = await startTestSmtp();
  // As `serve --smtp-url` does.
  t = await startTestBackend({ smtpUrl: smtp.url(), mailFrom: 'IT Desk <it@example.org>' });
});
afterAll(async () => {
  await t?.stop();
  await smtp?.close();
});

async function invite(extra: Record<string, unknown> = {}): Promise<Invitation> {
  counter += 1;
  const { status, body } = await t.admin('POST', '/invitations', { email: `person${counter}@example.com`, ...extra });
  expect(status, JSON.stringify(body)).toBe(201);
  return body;
}

async function mailFor(id: number): Promise<ReceivedMail> {
  return eventually(() => smtp.received.find((m) => m.invitationId === id), 20_000, `the email of invitation ${id}`);
}

async function deliveryState(id: number, state: string): Promise<Invitation> {
  return eventually(
    async () => {
      const { body } = await t.admin('GET', `/invitations/${id}`);
      return body.delivery?.state === state ? (body as Invitation) : null;
    },
    20_000,
    `invitation ${id} delivery ${state}`,
  );
}

function links(html: string): string[] {
  return [...html.matchAll(/href="([^"]*)"/g)].map((m) => m[1]!.replace(/&#38;/g, '&'));
}

describe('sending on create', () => {
  it('delivers an HTML+text email with the deeplink, the QR code inline and attached, and reads sent', async () => {
    const created = await invite({ firstname: 'Ada', lastname: 'Lovelace' });
    expect(created.delivery).toMatchObject({ state: 'queued', attempts: 0, error: null });

    const mail = await mailFor(created.id);
    const { parsed } = mail;
    expect(mail.envelope.to).toEqual([created.email]);
    expect(parsed.to?.map((a) => ('address' in a ? a.address : ''))).toEqual([created.email]);
    expect(parsed.from).toMatchObject({ address: 'it@example.org', name: 'IT Desk' });
    expect(parsed.subject).toMatch(/invites you to enroll your device/);

    // The deeplink: the button and the plain link in HTML, the link in text — all the invitation's own.
    expect(links(parsed.html!)).toContain(created.deeplink);
    expect(parsed.html).toContain(`>${created.deeplink}</a>`);
    expect(parsed.text).toContain(created.deeplink);
    expect(parsed.html).toContain('Hello Ada Lovelace');
    expect(parsed.text).toMatch(/expires on .*\d{4}/);

    // The QR code: inline (cid, referenced by the HTML) and attached as a PNG file; both decode to the deeplink.
    const inline = parsed.attachments.find((a) => a.disposition === 'inline');
    const attached = parsed.attachments.find((a) => a.disposition === 'attachment');
    expect(inline?.mimeType).toBe('image/png');
    expect(inline?.contentId).toBe(`<qr-${created.id}@mdm-console>`);
    expect(parsed.html).toContain(`src="cid:qr-${created.id}@mdm-console"`);
    expect(attached).toMatchObject({ mimeType: 'image/png', filename: 'enrollment-qr.png' });
    expect(decodeQrPng(asBuffer(attached!.content))).toBe(created.deeplink);
    expect(decodeQrPng(asBuffer(inline!.content))).toBe(created.deeplink);

    const sent = await deliveryState(created.id, 'sent');
    expect(sent.delivery).toMatchObject({ attempts: 1, error: null });
    expect(sent.delivery!.response).toMatch(/^250 /);
    expect(sent.delivery!.sent_at).not.toBeNull();
    expect(parsed.messageId).toBe(sent.delivery!.message_id);
    // Sending changed nothing of the invitation.
    expect(sent).toMatchObject({ status: 'pending', invitation_token: created.invitation_token, expires_at: created.expires_at });
  });

  it('carries a deeplink that works: the page opens and its data enrolls a device', async () => {
    const created = await invite({ firstname: 'Grace' });
    const mail = await mailFor(created.id);
    const link = links(mail.parsed.html!).find((href) => href.includes('/deeplink/?data='))!;
    const page = await fetch(link);
    expect(page.status).toBe(200);
    const data = decodeDeeplink(link);
    expect(data).toMatchObject({
      backendUrl: t.apiUrl,
      userToken: created.user_token,
      invitationToken: created.invitation_token,
    });
    const { created: agent } = await enrollByHand(data.backendUrl, {
      user_token: data.userToken,
      invitation_token: data.invitationToken,
      email: created.email,
    });
    expect(agent.status).toBe(201);
  });

  it('escapes what the admin typed in the HTML part', async () => {
    const created = await invite({ firstname: '<img src=x onerror=alert(1)>', lastname: 'Smith & "Co"' });
    const { parsed } = await mailFor(created.id);
    expect(parsed.html).not.toContain('<img src=x');
    expect(parsed.html).toContain('&#60;img src=x onerror=alert(1)&#62; Smith &#38; &#34;Co&#34;');
    expect(parsed.text).toContain('<img src=x onerror=alert(1)> Smith & "Co"');
  });
});

describe('switching it off, resending', () => {
  it('sends nothing with send_email false; resend later keeps the token and the expiry', async () => {
    const quiet = await invite({ send_email: false });
    expect(quiet.delivery).toBeNull();
    // FIFO queue: once a later invitation's email has arrived, the quiet one would have too.
    const loud = await invite();
    await mailFor(loud.id);
    expect(smtp.received.some((m) => m.invitationId === quiet.id)).toBe(false);
    expect((await t.admin('GET', `/invitations/${quiet.id}`)).body.delivery).toBeNull();

    const resent = await t.admin('POST', `/invitations/${quiet.id}/resend`);
    expect(resent.status).toBe(202);
    expect(resent.body.delivery.state).toBe('queued');
    const mail = await mailFor(quiet.id);
    expect(mail.parsed.text).toContain(quiet.deeplink);
    const after = await deliveryState(quiet.id, 'sent');
    expect(after).toMatchObject({
      invitation_token: quiet.invitation_token,
      expires_at: quiet.expires_at,
      deeplink: quiet.deeplink,
    });

    // Resending a sent one sends it again, same link.
    await t.admin('POST', `/invitations/${quiet.id}/resend`);
    await eventually(() => smtp.received.filter((m) => m.invitationId === quiet.id).length === 2, 20_000, 'the second copy');
    const copies = smtp.received.filter((m) => m.invitationId === quiet.id);
    expect(copies[1]!.parsed.text).toContain(quiet.deeplink);
    expect((await deliveryState(quiet.id, 'sent')).delivery!.attempts).toBe(2);
  });

  it('refuses to resend an invitation that can no longer be used', async () => {
    const created = await invite({ send_email: false });
    await t.admin('POST', `/invitations/${created.id}/revoke`);
    const resent = await t.admin('POST', `/invitations/${created.id}/resend`);
    expect(resent.status).toBe(409);
    expect(resent.body.message).toMatch(/revoked/);
    expect((await t.admin('POST', '/invitations/999999/resend')).status).toBe(404);
  });

  it('does not send a queued email whose invitation was revoked meanwhile', async () => {
    // Queued and revoked in the same tick, before the worker (a later tick) can take it.
    const { services } = t.backend;
    const { rows } = await services.invitations.create([{ email: 'revoked-early@example.com' }], { send: true });
    await services.invitations.revoke(rows[0]!.id);
    const failed = await deliveryState(rows[0]!.id, 'failed');
    expect(failed.delivery!.error).toBe('Not sent: it was revoked');
    expect(smtp.received.some((m) => m.invitationId === rows[0]!.id)).toBe(false);
  });
});

describe('bulk', () => {
  it('sends 200 invitations through the pool: each arrives exactly once, the batch reports progress', async () => {
    const before = smtp.received.length;
    const rows = Array.from({ length: 200 }, (_, i) => ({ email: `bulk${i}@example.net`, firstname: `Bulk ${i}` }));
    const { status, body } = await t.admin('POST', '/invitations/bulk', { invitations: rows });
    expect(status).toBe(201);
    expect(body.items).toHaveLength(200);
    expect(body.mail.queued).toBe(200);
    const batch = body.mail.batch_id as string;
    expect(body.items.every((i: Invitation) => i.delivery?.state === 'queued' && i.delivery.batch_id === batch)).toBe(true);

    const done = await eventually(
      async () => {
        const progress = (await t.admin('GET', `/mail/batches/${batch}`)).body;
        return progress.done ? progress : null;
      },
      60_000,
      'the batch to finish',
    );
    expect(done).toMatchObject({ total: 200, sent: 200, failed: 0, queued: 0, sending: 0, finished: 200 });
    await smtp.waitFor(before + 200, 20_000);

    const ids = new Set<number>(body.items.map((i: Invitation) => i.id));
    const arrived = smtp.received.filter((m) => m.invitationId !== null && ids.has(m.invitationId));
    expect(arrived).toHaveLength(200);
    expect(new Set(arrived.map((m) => m.invitationId)).size).toBe(200);
    const byId = new Map<number, Invitation>(body.items.map((i: Invitation) => [i.id, i]));
    for (const mail of arrived) {
      const invitation = byId.get(mail.invitationId!)!;
      expect(mail.envelope.to).toEqual([invitation.email]);
      expect(mail.parsed.text).toContain(invitation.deeplink);
    }
    // Bounded: never more connections than smtp_max_connections (default 3).
    expect(smtp.maxConcurrentSessions()).toBeLessThanOrEqual(3);
    expect((await t.admin('GET', '/mail/batches/not-a-batch')).status).toBe(404);
  });

  it('creates bulk invitations without email when asked', async () => {
    const { status, body } = await t.admin('POST', '/invitations/bulk', {
      invitations: [{ email: 'quiet1@example.net' }, { email: 'quiet2@example.net' }],
      send_email: false,
    });
    expect(status).toBe(201);
    expect(body.mail).toEqual({ batch_id: null, queued: 0 });
    expect(body.items.map((i: Invitation) => i.delivery)).toEqual([null, null]);
  });
});

describe('mail status', () => {
  it('says where mail goes (never the password) and counts the queue', async () => {
    const { body } = await t.admin('GET', '/mail/status');
    expect(body.transport).toMatchObject({
      kind: 'smtp',
      source: 'command line',
      host: '127.0.0.1',
      port: smtp.port,
      from: 'IT Desk <it@example.org>',
    });
    expect(body.counts.sent).toBeGreaterThan(200);
  });
});
