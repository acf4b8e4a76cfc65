import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { QrTooLongError, qrPng, qrSvg } from '../deeplink/qr.ts';
import { ApiError } from '../errors.ts';

const Id = Type.Object({ id: Type.Integer({ minimum: 1 }) });

/** A link too long for a QR code is the admin's to fix (a 400 naming where), not a 500. */
async function orLinkTooLong<T>(drawing: Promise<T>): Promise<T> {
  try {
    return await drawing;
  } catch (error) {
    if (error instanceof QrTooLongError) {
      throw new ApiError(400, 'ERROR_LINK_TOO_LONG', `${error.message}: shorten the helpdesk fields or the deeplink base in Settings.`);
    }
    throw error;
  }
}

/**
 * `GET <base>/:id/qr.png?size=` and `<base>/:id/qr.svg`: the QR code of whatever a device enrolls
 * with (invitations, enrollment codes), drawn from its deeplink page URL.
 */
export function qrRoutes(app: FastifyInstance, base: string, fileName: string, deeplinkOf: (id: number) => string): void {
  app.get(
    `${base}/:id/qr.png`,
    { schema: { params: Id, querystring: Type.Object({ size: Type.Integer({ minimum: 128, maximum: 2048, default: 480 }) }) } },
    async (request, reply) => {
      const { id } = request.params as { id: number };
      const width = (request.query as { size: number }).size;
      return reply
        .type('image/png')
        .header('content-disposition', `inline; filename="${fileName}-${id}.png"`)
        .send(await orLinkTooLong(qrPng(deeplinkOf(id), width)));
    },
  );

  app.get(`${base}/:id/qr.svg`, { schema: { params: Id } }, async (request, reply) => {
    const { id } = request.params as { id: number };
    return reply
      .type('image/svg+xml')
      .header('content-disposition', `inline; filename="${fileName}-${id}.svg"`)
      .send(await orLinkTooLong(qrSvg(deeplinkOf(id))));
  });
}
