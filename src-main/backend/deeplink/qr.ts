import type QRCodeModule from 'qrcode';

// Loaded on first use: most runs of the server draw no QR code, and qrcode costs ~10 MB of memory
// and start-up time to load.
let loading: Promise<typeof QRCodeModule> | null = null;
const qrcode = () => (loading ??= import('qrcode').then((module) => module.default));

// Medium error correction survives print smudges and screen glare without making codes too dense.
export const QR_ERROR_CORRECTION = 'M';
const OPTIONS = { errorCorrectionLevel: QR_ERROR_CORRECTION, margin: 2 } as const;

/**
 * What the largest QR code (version 40) holds at level M in byte mode: 2,331 bytes. The encoder
 * may pack some texts tighter (mixed segments) but never fails below this, so it is the bound
 * settings are checked against. test/unit/deeplink/qr-capacity.test.ts checks it against `qrcode` itself.
 */
export const QR_MAX_BYTES = 2331;

/** The text does not fit any QR code; callers answer 400 (pages) or leave the image out (email). */
export class QrTooLongError extends Error {
  readonly bytes: number;
  constructor(bytes: number) {
    super(`The link is ${bytes} bytes long: a QR code holds at most ${QR_MAX_BYTES}`);
    this.name = 'QrTooLongError';
    this.bytes = bytes;
  }
}

async function draw<T>(text: string, render: (lib: typeof QRCodeModule) => Promise<T>): Promise<T> {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > QR_MAX_BYTES) throw new QrTooLongError(bytes);
  try {
    return await render(await qrcode());
  } catch (error) {
    // qrcode's own refusal ("The amount of data is too big…"), should its packing ever differ.
    if (error instanceof Error && /too big/i.test(error.message)) throw new QrTooLongError(bytes);
    throw error;
  }
}

export async function qrPng(text: string, width = 480): Promise<Buffer> {
  return draw(text, (lib) => lib.toBuffer(text, { ...OPTIONS, type: 'png', width }));
}

export async function qrSvg(text: string): Promise<string> {
  return draw(text, (lib) => lib.toString(text, { ...OPTIONS, type: 'svg' }));
}

export async function qrDataUrl(text: string, width = 480): Promise<string> {
  return draw(text, (lib) => lib.toDataURL(text, { ...OPTIONS, width }));
}
