// `npm run format` rewrites the tree with Prettier; `npm run format -- --check` only reports the
// files that differ (what `npm test` runs). Prettier itself would write when given both flags.
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const mode = process.argv.includes('--check') ? '--check' : '--write';
const { status } = spawnSync(join(root, 'node_modules/.bin/prettier'), [mode, '--log-level', 'warn', '.'], {
  cwd: root,
  stdio: 'inherit',
});
process.exit(status ?? 1);
