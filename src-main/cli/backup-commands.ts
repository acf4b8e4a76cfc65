// `mdm-console backup DIR` and `mdm-console restore DIR`: they work on the data dir's files
// directly (no running server needed; restore insists there is none).
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { defaultDataDir } from '../backend/config.ts';
import { backupDataDir, BackupError, restoreDataDir } from '../backend/db/backup.ts';
import { CliError } from './server-file.ts';

function parse(argv: string[], what: string) {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { 'data-dir': { type: 'string' }, json: { type: 'boolean' } },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length !== 1) throw new CliError(`${what} needs one folder: mdm-console ${what} DIR`);
  return {
    dataDir: resolve(values['data-dir'] ?? defaultDataDir()),
    folder: resolve(positionals[0]!),
    json: values.json === true,
  };
}

const size = (bytes: number) =>
  bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

export async function backupCommand(argv: string[]): Promise<number> {
  const { dataDir, folder, json } = parse(argv, 'backup');
  try {
    const manifest = await backupDataDir(dataDir, folder);
    console.log(
      json
        ? JSON.stringify({ backup: folder, ...manifest }, null, 2)
        : `Backed up ${dataDir} to ${folder}: the database (schema ${manifest.schema_version}), ${manifest.files} file(s) and ${manifest.packages} package(s) (${size(manifest.bytes)}).\nRestore it with: mdm-console restore ${folder} --data-dir ${dataDir}   (with the server stopped)`,
    );
    return 0;
  } catch (error) {
    if (error instanceof BackupError) throw new CliError(`backup: ${error.message}`, 1);
    throw error;
  }
}

export async function restoreCommand(argv: string[]): Promise<number> {
  const { dataDir, folder, json } = parse(argv, 'restore');
  try {
    const { manifest, previous } = restoreDataDir(dataDir, folder);
    console.log(
      json
        ? JSON.stringify({ restored: folder, previous, ...manifest, data_dir: dataDir }, null, 2)
        : `Restored the backup of ${manifest.created_at} into ${dataDir}.` +
            (previous ? `\nWhat it replaced is in ${previous}.` : '') +
            `\nStart the server again: npm run serve -- --data-dir ${dataDir}`,
    );
    return 0;
  } catch (error) {
    if (error instanceof BackupError) throw new CliError(`restore: ${error.message}`, 1);
    throw error;
  }
}
