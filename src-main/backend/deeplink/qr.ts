import QRCode from 'qrcode';

// Medium error correction survives print smudges and screen glare without making codes too dense.
const OPTIONS = { errorCorrectionLevel: 'M', margin: 2 } as const;

export function qrPng(text: string, width = 480): Promise<Buffer> {
  return QRCode.toBuffer(text, { ...OPTIONS, type: 'png', width });
}

export function qrSvg(text: string): Promise<string> {
  return QRCode.toString(text, { ...OPTIONS, type: 'svg' });
}

export async function qrDataUrl(text: string, width = 480): Promise<string> {
  return QRCode.toDataURL(text, { ...OPTIONS, width });
}
