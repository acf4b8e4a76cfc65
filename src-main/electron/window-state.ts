import { app, screen, type BrowserWindow } from 'electron';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { restoreBounds, type WindowState } from './policy.ts';

const file = () => join(app.getPath('userData'), 'window-state.json');

/** The bounds to open the window with: last session's, when they still fit a display. */
export function loadWindowState(): WindowState {
  let saved: unknown = null;
  try {
    saved = JSON.parse(readFileSync(file(), 'utf8'));
  } catch {
    // first start, or an unreadable file: defaults
  }
  return restoreBounds(
    saved,
    screen.getAllDisplays().map((d) => d.workArea),
    screen.getPrimaryDisplay().workArea,
  );
}

/** Saves size, position and maximized state as they change (debounced) and on close. */
export function trackWindowState(window: BrowserWindow): void {
  let timer: NodeJS.Timeout | null = null;
  const save = () => {
    if (window.isDestroyed()) return;
    const state: WindowState = { ...window.getNormalBounds(), maximized: window.isMaximized() };
    try {
      writeFileSync(file(), JSON.stringify(state));
    } catch {
      // not worth interrupting anyone for
    }
  };
  const later = () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(save, 500);
  };
  window.on('resize', later);
  window.on('move', later);
  window.on('maximize', later);
  window.on('unmaximize', later);
  window.on('close', () => {
    if (timer) clearTimeout(timer);
    save();
  });
}
