// `npm start`: the desktop app. Electron installs its binary lazily (its package has no install
// script), and electron-vite only reads node_modules/electron/path.txt, so on a fresh machine the
// binary is fetched here first, with Electron's own installer. Then one `electron-vite preview`
// builds the app and runs it (building once). `npm run dev` goes the same way to electron-vite dev.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const require = createRequire(join(root, 'package.json'));
const electronDir = dirname(require.resolve('electron/package.json'));
const electronVersion = (JSON.parse(readFileSync(join(electronDir, 'package.json'), 'utf8')) as { version: string }).version;

function binaryPresent(): boolean {
  // Electron's own escape hatch: a binary somewhere else.
  if (process.env.ELECTRON_OVERRIDE_DIST_PATH) return true;
  const pathFile = join(electronDir, 'path.txt');
  if (!existsSync(pathFile)) return false;
  return existsSync(join(electronDir, 'dist', readFileSync(pathFile, 'utf8').trim()));
}

/** Electron's installer (its `install-electron` bin); returns why it failed, or null. */
function installElectron(): string | null {
  console.log(`The Electron ${electronVersion} binary is not installed yet: downloading it (about 100 MB, once)…`);
  const result = spawnSync(process.execPath, [join(electronDir, 'install.js')], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'inherit', 'pipe'],
  });
  if (result.status === 0 && binaryPresent()) return null;
  // Its failure is a stack trace; the first line is the reason.
  const firstLine = (result.stderr ?? '')
    .split('\n')
    .find((line) => line.trim() !== '')
    ?.trim();
  return firstLine ?? result.error?.message ?? `the installer exited with code ${result.status}`;
}

function wrap(text: string, width: number): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  return [...lines, line].join('\n');
}

if (!binaryPresent()) {
  const reason = installElectron();
  if (reason) {
    const mirror = process.env.ELECTRON_MIRROR ?? 'https://github.com/electron/electron/releases/download/';
    const paragraph =
      `The desktop app cannot start: it runs on Electron ${electronVersion}, whose binary is downloaded on first use, ` +
      `and that download failed (${reason.replace(/^\w*Error: /, '')}, from ${mirror}). That happens offline, or behind a proxy or ` +
      'firewall that blocks it. Run npm start again once the download is possible (ELECTRON_MIRROR may name a reachable mirror). ' +
      'Meanwhile, npm run serve runs the same backend and gives the same console in your browser: open the console_url it prints.';
    console.error(`\n${wrap(paragraph, 100)}\n`);
    process.exit(1);
  }
}

// `npm run dev` passes "dev" (electron-vite's dev server); otherwise preview: build once, run.
const [mode, ...rest] = process.argv[2] === 'dev' ? ['dev', ...process.argv.slice(3)] : ['preview', ...process.argv.slice(2)];
const preview = spawnSync(process.execPath, [join(root, 'node_modules/electron-vite/bin/electron-vite.js'), mode!, ...rest], {
  cwd: root,
  stdio: 'inherit',
});
process.exit(preview.status ?? 1);
