import type QRCodeModule from 'qrcode';

// Loaded on first use: most runs of the server draw no QR code, and qrcode costs ~10 MB of memory
// and start-up time to load.
let loading: Promise<typeof QRCodeModule> | null = null;
const qrcode = () => (loading ??= import('qrcode').then((module) => module.default));

// Medium error correction survives print smudges and screen glare without making codes too dense.
const OPTIONS = { errorCorrectionLevel: 'M', margin: 2 } as const;

export async function qrPng(text: string, width = 480): Promise<Buffer> {
  return (await qrcode()).toBuffer(text, { ...OPTIONS, type: 'png', width });
}

export async function qrSvg(text: string): Promise<string> {
  return (await qrcode()).toString(text, { ...OPTIONS, type: 'svg' });
}

export async function qrDataUrl(text: string, width = 480): Promise<string> {
  return (await qrcode()).toDataURL(text, { ...OPTIONS, width });
}
