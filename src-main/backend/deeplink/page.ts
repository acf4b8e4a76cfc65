import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import {
  appLinkSchemeFor,
  appLinkUrl,
  canonicalBase64,
  decodeDeeplinkData,
  DeeplinkDataError,
  deeplinkEncodingOf,
  deeplinkPageUrl,
  type DeeplinkFields,
} from './codec.ts';
import { escapeHtml } from '../util/html.ts';
import { QrTooLongError, qrSvg } from './qr.ts';

export function isPhone(userAgent: string | undefined): boolean {
  return /Android|iPhone|iPad|iPod/i.test(userAgent ?? '');
}

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>${escapeHtml(title)}</title>
<style>
  :root { color-scheme: light dark; font-family: system-ui, sans-serif; }
  body { margin: 0; display: grid; place-items: center; min-height: 100vh; background: Canvas; color: CanvasText; }
  main { max-width: 32rem; padding: 2rem; text-align: center; }
  .qr svg { width: min(80vw, 320px); height: auto; background: #fff; padding: 8px; border-radius: 8px; }
  .button { display: inline-block; padding: 1rem 2rem; border-radius: .5rem; background: #1c64f2; color: #fff;
            font-size: 1.25rem; text-decoration: none; margin: 1.5rem 0; }
  dl { display: grid; grid-template-columns: auto 1fr; gap: .25rem 1rem; text-align: left; }
  dt { font-weight: 600; }
  .error { color: #c81e1e; }
</style></head>
<body><main>${body}</main></body></html>`;
}

function helpdeskBlock(fields: DeeplinkFields): string {
  const rows: [string, string][] = [];
  if (fields.helpdeskName) rows.push(['Helpdesk', escapeHtml(fields.helpdeskName)]);
  if (fields.helpdeskPhone) {
    rows.push([
      'Phone',
      `<a href="tel:${escapeHtml(fields.helpdeskPhone.replace(/[^\d+]/g, ''))}">${escapeHtml(fields.helpdeskPhone)}</a>`,
    ]);
  }
  if (fields.helpdeskWebsite) {
    const site = escapeHtml(fields.helpdeskWebsite);
    // Only http(s) gets a link: a javascript: or data: "website" stays inert text.
    rows.push([
      'Website',
      /^https?:\/\//i.test(fields.helpdeskWebsite) ? `<a href="${site}" rel="noopener noreferrer">${site}</a>` : site,
    ]);
  }
  if (fields.helpdeskEmail) {
    const email = escapeHtml(fields.helpdeskEmail);
    rows.push(['Email', `<a href="mailto:${email}">${email}</a>`]);
  }
  if (rows.length === 0) return '';
  return `<h2>Need help?</h2><dl>${rows.map(([k, v]) => `<dt>${k}</dt><dd>${v}</dd>`).join('')}</dl>`;
}

export interface DeeplinkPageOptions {
  /** The base this page is served under, to rebuild the URL the QR code encodes. */
  deeplinkBase: () => string;
  appLinkScheme: () => string;
  /** Where the invitation of a link stands; null when this server does not know it (another server's link). */
  invitationState?: (
    invitationToken: string,
  ) => Promise<{ status: 'pending' | 'done' | 'expired' | 'revoked'; expiresAt: string } | null>;
}

/** A used, expired or withdrawn invitation: the page says so instead of offering to enroll. */
function notUsableBody(
  state: { status: 'done' | 'expired' | 'revoked'; expiresAt: string },
  help: string,
): { title: string; html: string } {
  const expired = new Date(state.expiresAt).toUTCString().replace(/ \d\d:\d\d:\d\d GMT$/, '');
  const { title, text } = {
    done: {
      title: 'This invitation has already been used',
      text: 'A device has enrolled with it, and it cannot enroll another one. If you need to enroll a new device, ask your administrator for a new invitation.',
    },
    expired: {
      title: 'This invitation has expired',
      text: `It could be used until ${escapeHtml(expired)}. Ask your administrator for a new invitation.`,
    },
    revoked: {
      title: 'This invitation was withdrawn',
      text: 'Your administrator cancelled it. Ask them for a new invitation if you still need to enroll a device.',
    },
  }[state.status];
  return { title, html: `<h1>${title}</h1><p>${text}</p>${help}` };
}

/** GET /deeplink/?data=… — the deeplink microservice, served by the backend itself. */
export const deeplinkPageRoutes: FastifyPluginAsyncTypebox<DeeplinkPageOptions> = async (app, options) => {
  const headers = {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; img-src data:",
    'x-content-type-options': 'nosniff',
  };
  const badData = (message: string) =>
    layout(
      'Invalid enrollment link',
      `<h1>Invalid enrollment link</h1>
      <p class="error">${escapeHtml(message)}</p>
      <p>Ask your administrator for a new invitation.</p>`,
    );

  // Query validation failures (e.g. `data` given twice) get the same readable page, not JSON.
  app.setErrorHandler((error: { validation?: unknown }, request, reply) => {
    if (error.validation)
      return reply.code(400).headers(headers).send(badData('This link cannot be used: the data parameter is malformed.'));
    request.log.error(error);
    return reply.code(500).headers(headers).send(layout('Error', '<h1>Something went wrong</h1>'));
  });

  app.get('/deeplink/', {
    schema: { querystring: Type.Object({ data: Type.Optional(Type.String({ maxLength: 16384 })) }) },
    handler: async (request, reply) => {
      const { data } = request.query;
      let fields: DeeplinkFields;
      try {
        fields = decodeDeeplinkData(data);
      } catch (error) {
        const message = error instanceof DeeplinkDataError ? error.message : 'the data could not be read';
        return reply
          .code(400)
          .headers(headers)
          .send(badData(`This link cannot be used: ${message}.`));
      }
      // Re-encode so both the QR code and the button carry canonical data whatever form arrived.
      const canonical = canonicalBase64(data!);
      const help = helpdeskBlock(fields);
      const state = (await options.invitationState?.(fields.invitationToken)) ?? null;
      if (state && state.status !== 'pending') {
        const { title, html } = notUsableBody({ status: state.status, expiresAt: state.expiresAt }, help);
        return reply.code(410).headers(headers).send(layout(title, html));
      }
      if (isPhone(request.headers['user-agent'])) {
        // Data in the reference encoding is for a Flyve agent, which registers flyve://.
        const link = escapeHtml(appLinkUrl(appLinkSchemeFor(deeplinkEncodingOf(canonical), options.appLinkScheme()), canonical));
        return reply.headers(headers).send(
          layout(
            'Enroll this device',
            `<h1>Enroll this device</h1>
          <p>Tap the button to open the MDM agent and start enrollment.</p>
          <a class="button" href="${link}">Enroll this device</a>
          <p>If nothing happens, install the MDM agent app first, then come back to this page.</p>${help}`,
          ),
        );
      }
      let svg: string;
      try {
        svg = await qrSvg(deeplinkPageUrl(options.deeplinkBase(), canonical));
      } catch (error) {
        if (!(error instanceof QrTooLongError)) throw error;
        return reply
          .code(400)
          .headers(headers)
          .send(badData('This link cannot be used: it is too long to be shown as a QR code.'));
      }
      return reply.headers(headers).send(
        layout(
          'Enroll your device',
          `<h1>Enroll your device</h1>
        <p>Open the MDM agent on the device to enroll and scan this code.</p>
        <div class="qr" role="img" aria-label="Enrollment QR code">${svg}</div>${help}`,
        ),
      );
    },
  });
};
