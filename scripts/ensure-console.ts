// Before `npm run serve` and `npm run cluster`: builds the console (out/renderer) when it is missing or older than its
// sources, so a fresh checkout serves a working console on the first try.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const built = join(root, 'out/renderer/index.html');

function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

const builtAt = statSync(built, { throwIfNoEntry: false })?.mtimeMs ?? 0;
const sources = Math.max(newest(join(root, 'src-renderer')), statSync(join(root, 'electron.vite.config.ts')).mtimeMs);
if (builtAt < sources) {
  console.log(builtAt ? 'The console changed since it was built: building it…' : 'Building the console (first run)…');
  const result = spawnSync(
    process.execPath,
    [join(root, 'node_modules/electron-vite/bin/electron-vite.js'), 'build', '--logLevel', 'warn'],
    {
      cwd: root,
      stdio: 'inherit',
    },
  );
  if (result.status !== 0) process.exit(result.status ?? 1);
}
