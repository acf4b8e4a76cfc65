import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { IdParams } from '../../../src-shared/contract/index.ts';
import { QrTooLongError, qrPng, qrSvg } from '../deeplink/qr.ts';
import { ApiError } from '../errors.ts';

const QrSize = Type.Object({ size: Type.Integer({ minimum: 128, maximum: 2048, default: 480 }) });

/** A link too long for a QR code is the admin's to fix (a 400 naming where), not a 500. */
async function orLinkTooLong<T>(drawing: Promise<T>): Promise<T> {
  try {
    return await drawing;
  } catch (error) {
    if (error instanceof QrTooLongError) {
      throw new ApiError(
        400,
        'ERROR_LINK_TOO_LONG',
        `${error.message}: shorten the helpdesk fields or the deeplink base in Settings.`,
      );
    }
    throw error;
  }
}

/**
 * `GET <base>/:id/qr.png?size=` and `<base>/:id/qr.svg`: the QR code of whatever a device enrolls
 * with (invitations, enrollment codes), drawn from its deeplink page URL.
 */
export function qrRoutes(plain: FastifyInstance, base: string, fileName: string, deeplinkOf: (id: number) => string): void {
  const app = plain.withTypeProvider<TypeBoxTypeProvider>();
  app.get(`${base}/:id/qr.png`, { schema: { params: IdParams, querystring: QrSize } }, async (request, reply) => {
    const { id } = request.params;
    const width = request.query.size;
    return reply
      .type('image/png')
      .header('content-disposition', `inline; filename="${fileName}-${id}.png"`)
      .send(await orLinkTooLong(qrPng(deeplinkOf(id), width)));
  });

  app.get(`${base}/:id/qr.svg`, { schema: { params: IdParams } }, async (request, reply) => {
    const { id } = request.params;
    return reply
      .type('image/svg+xml')
      .header('content-disposition', `inline; filename="${fileName}-${id}.svg"`)
      .send(await orLinkTooLong(qrSvg(deeplinkOf(id))));
  });
}
