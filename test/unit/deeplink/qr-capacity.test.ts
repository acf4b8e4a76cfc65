import { randomBytes } from 'node:crypto';
import QRCode from 'qrcode';
import { describe, expect, it } from 'vitest';
import { deeplinkPageUrl, encodeDeeplinkFor, type AgentApp } from '../../../src-main/backend/deeplink/codec.ts';
import {
  INVITATION_TOKEN_HEX_LENGTH,
  USER_TOKEN_HEX_LENGTH,
  maxFieldLength,
  worstCaseQrTextBytes,
  type LinkInputs,
} from '../../../src-main/backend/deeplink/link-budget.ts';
import { QR_ERROR_CORRECTION, QR_MAX_BYTES, QrTooLongError, qrSvg } from '../../../src-main/backend/deeplink/qr.ts';

describe('QR code capacity', () => {
  it(`is ${QR_MAX_BYTES} bytes at level ${QR_ERROR_CORRECTION}, as the qrcode library itself draws them`, () => {
    // bytes outside the alphanumeric set, so the encoder must use byte mode
    expect(() => QRCode.create('~'.repeat(QR_MAX_BYTES), { errorCorrectionLevel: QR_ERROR_CORRECTION })).not.toThrow();
    expect(() => QRCode.create('~'.repeat(QR_MAX_BYTES + 1), { errorCorrectionLevel: QR_ERROR_CORRECTION })).toThrow(/too big/);
  });

  it('refuses a longer text with QrTooLongError, before drawing', async () => {
    await expect(qrSvg('~'.repeat(QR_MAX_BYTES + 1))).rejects.toBeInstanceOf(QrTooLongError);
    await expect(qrSvg('é'.repeat(1200))).rejects.toBeInstanceOf(QrTooLongError); // 2,400 UTF-8 bytes
  });
});

describe('the worst-case deeplink length', () => {
  const inputs: LinkInputs = {
    agentApp: 'spec',
    deeplinkBase: 'http://192.168.1.20:8080',
    apiUrl: 'http://192.168.1.20:8080/api',
    helpdeskName: 'IT "Help"; desk',
    helpdeskPhone: '+1 555 0100',
    helpdeskWebsite: 'https://help.example.com/?a=1&b=2',
    helpdeskEmail: 'help@example.com',
  };
  const actual = (userToken: string, invitationToken: string, fields = inputs) =>
    Buffer.byteLength(
      deeplinkPageUrl(
        fields.deeplinkBase,
        encodeDeeplinkFor(fields.agentApp, {
          backendUrl: fields.apiUrl,
          userToken,
          invitationToken,
          helpdeskName: fields.helpdeskName,
          helpdeskPhone: fields.helpdeskPhone,
          helpdeskWebsite: fields.helpdeskWebsite,
          helpdeskEmail: fields.helpdeskEmail,
        }),
      ),
    );

  for (const agentApp of ['spec', 'flyve'] as AgentApp[]) {
    it(`is never exceeded by real tokens, and random ones come close to it (${agentApp} encoding)`, () => {
      // the reference encoding cannot carry ";": its fields escape "\" instead
      const fields: LinkInputs = {
        ...inputs,
        agentApp,
        helpdeskName: agentApp === 'flyve' ? 'IT \\ "Help" desk' : inputs.helpdeskName,
      };
      const bound = worstCaseQrTextBytes(fields);
      let longest = 0;
      for (let i = 0; i < 3000; i++) {
        const length = actual(
          randomBytes(USER_TOKEN_HEX_LENGTH / 2).toString('hex'),
          randomBytes(INVITATION_TOKEN_HEX_LENGTH / 2).toString('hex'),
          fields,
        );
        expect(length).toBeLessThanOrEqual(bound);
        longest = Math.max(longest, length);
      }
      // random tokens come near the bound: it is not padded with slack
      expect(bound - longest).toBeLessThan(120);
    });
  }

  it('finds the longest a field may be: at that length it fits, one more does not', () => {
    const long = { ...inputs, helpdeskWebsite: `https://help.example.com/${'w'.repeat(3000)}` };
    const max = maxFieldLength(long, 'helpdeskWebsite');
    expect(max).toBeGreaterThan(1000);
    expect(max).toBeLessThan(3000);
    const at = (n: number) => worstCaseQrTextBytes({ ...long, helpdeskWebsite: long.helpdeskWebsite.slice(0, n) });
    expect(at(max)).toBeLessThanOrEqual(QR_MAX_BYTES);
    expect(at(max + 1)).toBeGreaterThan(QR_MAX_BYTES);
  });
});
