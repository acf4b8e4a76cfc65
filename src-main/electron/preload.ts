// The only bridge between the console and the shell: a sandboxed preload exposing two
// narrowly-typed calls. No Node, no ipcRenderer, nothing else reaches the page.
import { contextBridge, ipcRenderer } from 'electron';

contextBridge.exposeInMainWorld('mdmDesktop', {
  isDesktop: true,
  savePdf: (options: { paper: 'A4' | 'Letter'; suggestedName: string }): Promise<{ path: string } | null> =>
    ipcRenderer.invoke('console:save-pdf', { paper: options.paper, suggestedName: options.suggestedName }),
});
