import { QrTooLongError, qrPng, qrSvg } from '../deeplink/qr.ts';
import { ApiError } from '../errors.ts';
import { adminRoute, type RouteScope } from '../http/route-table.ts';

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
export function qrRoutes(
  app: RouteScope,
  names: { png: 'invitations.qrPng' | 'codes.qrPng'; svg: 'invitations.qrSvg' | 'codes.qrSvg' },
  fileName: string,
  deeplinkOf: (id: number) => Promise<string>,
): void {
  adminRoute(app, names.png, async (request, reply) => {
    const { id } = request.params;
    const width = request.query.size;
    return reply
      .type('image/png')
      .header('content-disposition', `inline; filename="${fileName}-${id}.png"`)
      .send(await orLinkTooLong(qrPng(await deeplinkOf(id), width)));
  });

  adminRoute(app, names.svg, async (request, reply) => {
    const { id } = request.params;
    return reply
      .type('image/svg+xml')
      .header('content-disposition', `inline; filename="${fileName}-${id}.svg"`)
      .send(await orLinkTooLong(qrSvg(await deeplinkOf(id))));
  });
}
