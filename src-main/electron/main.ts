// The desktop shell: one window onto the console, served by the backend this process starts.
// Thin on purpose: the console is the same web app `npm run serve` serves to a browser.
import {
  app,
  BrowserWindow,
  clipboard,
  dialog,
  ipcMain,
  Menu,
  safeStorage,
  session,
  shell,
  type MenuItemConstructorOptions,
} from 'electron';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_PORTS } from '../backend/config.ts';
import { keychainProtector } from '../backend/mail/secrets.ts';
import { startBackend, type RunningBackend } from '../backend/server.ts';
import { StartupError } from '../backend/startup-error.ts';
import { resumeSimulatedDevices, simulateEnrollment, simulatedDeviceApproved, stopSimulatedDevices } from '../device/simulate.ts';
import { SIMULATED_DEVICES_FILE } from '../device/state-file.ts';
import { CONSOLE_CSP, isConsoleUrl, isExternalOpenable, isPermissionAllowed, pdfRequest } from './policy.ts';
import { loadWindowState, trackWindowState } from './window-state.ts';

const here = import.meta.dirname;
// The backend serves the console from the renderer build next to this bundle.
process.env.MDM_CONSOLE_RENDERER_DIR ??= join(here, '../renderer');

let backend: RunningBackend | null = null;
let window: BrowserWindow | null = null;
let consoleOrigin = '';
let signedIn = false;

function openExternal(url: string): void {
  if (isExternalOpenable(url)) void shell.openExternal(url);
}

function createWindow(): void {
  if (!backend) return;
  const state = loadWindowState();
  window = new BrowserWindow({
    x: state.x,
    y: state.y,
    width: state.width,
    height: state.height,
    minWidth: 900,
    minHeight: 600,
    show: false,
    title: 'MDM Console',
    // The window and taskbar icon (macOS takes it from the app bundle instead).
    icon: join(here, '../../resources/icon.png'),
    backgroundColor: '#1a1b1e',
    autoHideMenuBar: false,
    webPreferences: {
      preload: join(here, '../preload/index.cjs'),
      contextIsolation: true,
      nodeIntegration: false,
      sandbox: true,
      webSecurity: true,
      allowRunningInsecureContent: false,
      navigateOnDragDrop: false,
      spellcheck: false,
    },
  });
  if (state.maximized) window.maximize();
  trackWindowState(window);
  window.once('ready-to-show', () => window?.show());
  window.on('closed', () => {
    window = null;
  });

  const contents = window.webContents;
  // Navigation stays on the console; links elsewhere go to the system browser.
  contents.on('will-navigate', (event, url) => {
    if (isConsoleUrl(url, consoleOrigin)) return;
    event.preventDefault();
    openExternal(url);
  });
  contents.on('will-redirect', (event, url) => {
    if (!isConsoleUrl(url, consoleOrigin)) event.preventDefault();
  });
  contents.setWindowOpenHandler(({ url }) => {
    openExternal(url);
    return { action: 'deny' };
  });
  contents.on('will-attach-webview', (event) => event.preventDefault());

  // Each window redeems a one-time sign-in ticket of its own (→ a new console session and its
  // HttpOnly cookie): the session a window had before may have ended on the server since.
  const url = signedIn ? backend.consoleUrl() : Promise.resolve(backend.info.console_url);
  signedIn = true;
  const opened = window;
  void url.then((link) => opened.loadURL(link));
}

function hardenSession(): void {
  const ses = session.defaultSession;
  ses.setPermissionRequestHandler((_contents, permission, callback) => callback(isPermissionAllowed(permission)));
  ses.setPermissionCheckHandler((_contents, permission) => isPermissionAllowed(permission));
  // Documents of the console get the strict policy even if a response came without one.
  ses.webRequest.onHeadersReceived((details, callback) => {
    const headers = details.responseHeaders ?? {};
    const isDocument = details.resourceType === 'mainFrame' || details.resourceType === 'subFrame';
    const hasPolicy = Object.keys(headers).some((name) => name.toLowerCase() === 'content-security-policy');
    if (isDocument && !hasPolicy) headers['Content-Security-Policy'] = [CONSOLE_CSP];
    callback({ responseHeaders: headers });
  });
}

/** Electron's clipboard writes asynchronously (as the W3C one does): a failure is said, not lost. */
function copyToClipboard(text: string): void {
  clipboard.writeText(text).catch((error: unknown) => {
    dialog.showErrorBox('Could not copy to the clipboard', error instanceof Error ? error.message : String(error));
  });
}

function buildMenu(): void {
  const info = backend!.info;
  const isMac = process.platform === 'darwin';
  const template: MenuItemConstructorOptions[] = [
    ...(isMac ? [{ role: 'appMenu' as const }] : []),
    {
      label: 'File',
      submenu: [
        {
          label: 'Copy Enrollment URL',
          accelerator: 'CmdOrCtrl+Shift+E',
          click: () => copyToClipboard(info.api_url),
        },
        {
          label: 'Copy Deeplink Page URL',
          click: () => copyToClipboard(`${info.deeplink_url}/deeplink/`),
        },
        { type: 'separator' },
        {
          label: 'Open Data Folder',
          click: () => void shell.openPath(info.data_dir),
        },
        { type: 'separator' },
        isMac ? { role: 'close' } : { role: 'quit' },
      ],
    },
    { role: 'editMenu' },
    {
      label: 'View',
      submenu: [
        { role: 'reload' },
        { role: 'forceReload' },
        ...(app.isPackaged ? [] : [{ role: 'toggleDevTools' as const }]),
        { type: 'separator' },
        { role: 'resetZoom' },
        { role: 'zoomIn' },
        { role: 'zoomOut' },
        { type: 'separator' },
        { role: 'togglefullscreen' },
      ],
    },
    { role: 'windowMenu' },
  ];
  Menu.setApplicationMenu(Menu.buildFromTemplate(template));
}

// Print sheets: the page as a PDF, at the paper size the admin chose, where they choose.
ipcMain.handle('console:save-pdf', async (event, input: unknown) => {
  if (!isConsoleUrl(event.senderFrame?.url ?? '', consoleOrigin)) throw new Error('not the console');
  const { paper, name } = pdfRequest(input);
  const owner = BrowserWindow.fromWebContents(event.sender);
  const options = { defaultPath: join(app.getPath('documents'), name), filters: [{ name: 'PDF', extensions: ['pdf'] }] };
  const { canceled, filePath } = owner ? await dialog.showSaveDialog(owner, options) : await dialog.showSaveDialog(options);
  if (canceled || !filePath) return null;
  const pdf = await event.sender.printToPDF({ pageSize: paper, printBackground: true, preferCSSPageSize: true });
  await writeFile(filePath, pdf);
  return { path: filePath };
});

async function start(): Promise<void> {
  // Simulated devices stay online (once approved, when their code needs it) and come back after a restart.
  const devicesFile = () => join(backend!.info.data_dir, SIMULATED_DEVICES_FILE);
  const simulate = (request: Parameters<typeof simulateEnrollment>[0]) =>
    simulateEnrollment(request, { stayOnline: true, stateFile: devicesFile() });
  // The SMTP password is encrypted by the OS keychain (safeStorage is usable once the app is ready).
  const secretProtector = keychainProtector(safeStorage);
  try {
    try {
      backend = await startBackend({ simulate, secretProtector });
    } catch (error) {
      // Only this window uses the admin listener: when its usual port is taken, any port will do.
      // (The agent API and broker ports are printed in QR codes and agent records: they stay put.)
      const { code, port } = error as { code?: string; port?: number };
      if (code !== 'EADDRINUSE' || port !== DEFAULT_PORTS.adminPort) throw error;
      backend = await startBackend({ simulate, secretProtector, adminPort: 0 });
    }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // A StartupError already says what is wrong and what to do.
    const busy = (error as { code?: string }).code === 'EADDRINUSE' && !(error instanceof StartupError);
    dialog.showErrorBox(
      'MDM Console could not start its server',
      busy ? `${message}\n\nAnother MDM Console (or \`npm run serve\`) is probably running. Close it and start again.` : message,
    );
    app.exit(1);
    return;
  }
  backend.services.events.subscribe((event) => {
    if (event.type === 'agent.approved' && event.agent_id !== null) simulatedDeviceApproved(event.agent_id);
  });
  void resumeSimulatedDevices(devicesFile()).catch(() => {});
  consoleOrigin = new URL(backend.info.admin_url).origin;
  hardenSession();
  buildMenu();
  createWindow();
}

if (!app.requestSingleInstanceLock()) {
  app.quit();
} else {
  app.on('second-instance', () => {
    if (!window) return createWindow();
    if (window.isMinimized()) window.restore();
    window.show();
    window.focus();
  });
  app.on('web-contents-created', (_event, contents) => {
    contents.on('will-attach-webview', (event) => event.preventDefault());
  });
  app.on('activate', () => {
    if (!window && backend) createWindow();
  });
  app.on('window-all-closed', () => {
    if (process.platform !== 'darwin') app.quit();
  });
  let stopping = false;
  app.on('before-quit', (event) => {
    if (!backend || stopping) return;
    event.preventDefault();
    stopping = true;
    void stopSimulatedDevices()
      .then(() => backend?.close())
      .finally(() => {
        backend = null;
        app.quit();
      });
  });
  void app.whenReady().then(start);
}
