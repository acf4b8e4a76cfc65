import { describe, expect, it } from 'vitest';
import {
  CONSOLE_CSP,
  isConsoleUrl,
  isExternalOpenable,
  isPermissionAllowed,
  pdfRequest,
  restoreBounds,
} from '../../../src-main/electron/policy.ts';

describe('the desktop shell rules', () => {
  it('keeps navigation on the console origin and opens only web and mail links outside', () => {
    const origin = 'http://127.0.0.1:8081';
    expect(isConsoleUrl('http://127.0.0.1:8081/invitations/3', origin)).toBe(true);
    expect(isConsoleUrl('http://127.0.0.1:8080/deeplink/', origin)).toBe(false);
    expect(isConsoleUrl('http://localhost:8081/', origin)).toBe(false);
    expect(isConsoleUrl('not a url', origin)).toBe(false);
    expect(isExternalOpenable('https://help.example.com')).toBe(true);
    expect(isExternalOpenable('mailto:help@example.com')).toBe(true);
    expect(isExternalOpenable('file:///etc/passwd')).toBe(false);
    expect(isExternalOpenable('javascript:alert(1)')).toBe(false);
    expect(isPermissionAllowed('clipboard-sanitized-write')).toBe(true);
    expect(isPermissionAllowed('media')).toBe(false);
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    expect(CONSOLE_CSP).not.toContain('unsafe-eval');
  });

  it('checks what the page asks the PDF export', () => {
    expect(pdfRequest({ paper: 'A4', suggestedName: '../../etc/x' })).toEqual({ paper: 'A4', name: '.._.._etc_x.pdf' });
    expect(pdfRequest({ paper: 'Letter' })).toEqual({ paper: 'Letter', name: 'invitations.pdf' });
    expect(() => pdfRequest({ paper: 'A3' })).toThrow(/A4 or Letter/);
    expect(() => pdfRequest(null)).toThrow();
  });

  it('restores the window where it was, unless that display is gone', () => {
    const primary = { x: 0, y: 0, width: 1920, height: 1040 };
    const second = { x: 1920, y: 0, width: 1280, height: 1000 };
    expect(restoreBounds({ x: 2000, y: 50, width: 1000, height: 700, maximized: true }, [primary, second], primary)).toEqual({
      x: 2000,
      y: 50,
      width: 1000,
      height: 700,
      maximized: true,
    });
    // The second monitor was unplugged: centered on the primary one.
    expect(restoreBounds({ x: 2000, y: 50, width: 1000, height: 700 }, [primary], primary)).toEqual({
      x: 320,
      y: 90,
      width: 1280,
      height: 860,
      maximized: false,
    });
    expect(restoreBounds(null, [primary], primary).width).toBe(1280);
    expect(restoreBounds({ x: 'a' }, [primary], primary).x).toBe(320);
    // A tiny saved size grows to the minimum; a small screen caps the default.
    expect(restoreBounds({ x: 10, y: 10, width: 100, height: 100 }, [primary], primary)).toMatchObject({
      width: 640,
      height: 480,
    });
    const small = { x: 0, y: 0, width: 1024, height: 700 };
    expect(restoreBounds(undefined, [small], small)).toMatchObject({ x: 0, y: 0, width: 1024, height: 700 });
  });
});
