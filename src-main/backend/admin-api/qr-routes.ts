import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { qrPng, qrSvg } from '../deeplink/qr.ts';

const Id = Type.Object({ id: Type.Integer({ minimum: 1 }) });

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
        .send(await qrPng(deeplinkOf(id), width));
    },
  );

  app.get(`${base}/:id/qr.svg`, { schema: { params: Id } }, async (request, reply) => {
    const { id } = request.params as { id: number };
    return reply
      .type('image/svg+xml')
      .header('content-disposition', `inline; filename="${fileName}-${id}.svg"`)
      .send(await qrSvg(deeplinkOf(id)));
  });
}
