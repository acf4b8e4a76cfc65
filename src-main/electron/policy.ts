// The shell's security rules as plain functions (no electron import), so they are unit-tested in Node.

/** The console's Content-Security-Policy (the server's own), applied by the shell to any document without one. */
export { CONSOLE_CSP } from '../backend/admin-api/console-static.ts';

/** Whether the window may navigate to `url`: only the console's own origin. */
export function isConsoleUrl(url: string, consoleOrigin: string): boolean {
  try {
    return new URL(url).origin === consoleOrigin;
  } catch {
    return false;
  }
}

/** Links the system browser (or mail client) may open: http(s) and mailto, nothing else. */
export function isExternalOpenable(url: string): boolean {
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' || parsed.protocol === 'mailto:';
  } catch {
    return false;
  }
}

/** Permissions the console may use: writing to the clipboard (copy buttons). Everything else is denied. */
export function isPermissionAllowed(permission: string): boolean {
  return permission === 'clipboard-sanitized-write';
}

export type PaperSize = 'A4' | 'Letter';

/** Validates what the renderer asks the PDF export; throws on anything unexpected. */
export function pdfRequest(input: unknown): { paper: PaperSize; name: string } {
  const { paper, suggestedName } = (input ?? {}) as { paper?: unknown; suggestedName?: unknown };
  if (paper !== 'A4' && paper !== 'Letter') throw new Error('paper must be A4 or Letter');
  let name = typeof suggestedName === 'string' ? suggestedName : 'invitations.pdf';
  name =
    name
      // eslint-disable-next-line no-control-regex -- control characters are exactly what a file name may not hold
      .replace(/[\\/:*?"<>|\u0000-\u001f]/g, '_')
      .slice(0, 120)
      .trim() || 'invitations.pdf';
  if (!name.toLowerCase().endsWith('.pdf')) name += '.pdf';
  return { paper, name };
}

export interface Rectangle {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface WindowState extends Rectangle {
  maximized: boolean;
}

export const DEFAULT_SIZE = { width: 1280, height: 860 } as const;
const MIN_VISIBLE = 80;

/**
 * The window bounds to restore: the saved ones when a display still shows enough of them (a
 * monitor may have been unplugged), else the default size centered on the primary work area.
 */
export function restoreBounds(saved: unknown, workAreas: Rectangle[], primary: Rectangle): WindowState {
  const fallback: WindowState = {
    width: Math.min(DEFAULT_SIZE.width, primary.width),
    height: Math.min(DEFAULT_SIZE.height, primary.height),
    x: primary.x + Math.max(0, Math.round((primary.width - Math.min(DEFAULT_SIZE.width, primary.width)) / 2)),
    y: primary.y + Math.max(0, Math.round((primary.height - Math.min(DEFAULT_SIZE.height, primary.height)) / 2)),
    maximized: false,
  };
  const state = saved as Partial<WindowState> | null;
  if (!state || ![state.x, state.y, state.width, state.height].every((n) => typeof n === 'number' && Number.isFinite(n)))
    return fallback;
  const bounds = { x: state.x!, y: state.y!, width: Math.max(640, state.width!), height: Math.max(480, state.height!) };
  const visible = workAreas.some((area) => {
    const overlapX = Math.min(bounds.x + bounds.width, area.x + area.width) - Math.max(bounds.x, area.x);
    const overlapY = Math.min(bounds.y + bounds.height, area.y + area.height) - Math.max(bounds.y, area.y);
    // The title bar must be reachable: the top strip of the window on a display.
    return overlapX >= MIN_VISIBLE && overlapY >= 40 && bounds.y >= area.y - 10 && bounds.y < area.y + area.height - 40;
  });
  if (!visible) return { ...fallback, maximized: Boolean(state.maximized) };
  return { ...bounds, maximized: Boolean(state.maximized) };
}
