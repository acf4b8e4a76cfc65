/**
 * What the Electron shell's preload exposes (contextBridge, see src-main/electron/preload.ts).
 * Absent in a browser: the console works the same, minus what only the desktop can do.
 */
export interface DesktopBridge {
  readonly isDesktop: true;
  /** Prints the current page to a PDF file the user picks; null when they cancelled. */
  savePdf(options: { paper: 'A4' | 'Letter'; suggestedName: string }): Promise<{ path: string } | null>;
}

declare global {
  interface Window {
    mdmDesktop?: DesktopBridge;
  }
}

export function desktop(): DesktopBridge | null {
  return typeof window !== 'undefined' && window.mdmDesktop?.isDesktop ? window.mdmDesktop : null;
}
