import jsQRModule from 'jsqr';
import { PNG } from 'pngjs';

// jsqr is CommonJS with an `exports.default`: under NodeNext the default import is the module.
const jsQR = ((jsQRModule as unknown as { default?: unknown }).default ?? jsQRModule) as unknown as (
  data: Uint8ClampedArray,
  width: number,
  height: number,
) => { data: string } | null;

/** Decodes the QR code in a PNG image; null when none is found. */
export function decodeQrPng(png: Buffer): string | null {
  const image = PNG.sync.read(png);
  return jsQR(new Uint8ClampedArray(image.data), image.width, image.height)?.data ?? null;
}
