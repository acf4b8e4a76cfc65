// `mdm-console backup DIR` and `mdm-console restore DIR`: they work on the data dir's files
// directly (no running server needed; restore insists there is none). With --database-url (or
// $MDM_CONSOLE_DATABASE_URL), the database is that PostgreSQL one (db/postgres-backup.ts).
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { defaultDataDir } from '../backend/config.ts';
import { backupDataDir, BackupError, restoreDataDir } from '../backend/db/backup.ts';
import { CopyError } from '../backend/db/copy-tables.ts';
import { backupPostgres, restorePostgres } from '../backend/db/postgres-backup.ts';
import { CliError } from './server-file.ts';
import { urlToType } from './migrate-db-command.ts';

function parse(argv: string[], what: string) {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      'data-dir': { type: 'string' },
      'database-url': { type: 'string' },
      'files-dir': { type: 'string' },
      json: { type: 'boolean' },
    },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length !== 1) throw new CliError(`${what} needs one folder: mdm-console ${what} DIR`);
  const databaseUrl = values['database-url'] ?? process.env.MDM_CONSOLE_DATABASE_URL;
  const dataDir = resolve(values['data-dir'] ?? defaultDataDir());
  return {
    dataDir,
    filesDir: values['files-dir'] === undefined ? runningFilesDir(dataDir) : resolve(values['files-dir']),
    folder: resolve(positionals[0]!),
    databaseUrl: databaseUrl === '' ? undefined : databaseUrl,
    json: values.json === true,
  };
}

/** The files dir of the server running on the data dir (its server.json), else DATA_DIR/files. */
function runningFilesDir(dataDir: string): string {
  try {
    const info = JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8')) as { files_dir?: unknown };
    if (typeof info.files_dir === 'string' && info.files_dir !== '') return info.files_dir;
  } catch {
    // no server running (or an unreadable server.json): the default
  }
  return join(dataDir, 'files');
}

const size = (bytes: number) =>
  bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/** A refusal of either engine's backup or restore, as the CLI prints it (never a stack). */
function refusal(what: string, error: unknown): unknown {
  if (error instanceof BackupError || error instanceof CopyError) return new CliError(`${what}: ${error.message}`, 1);
  if ((error as { severity?: string }).severity) {
    return new CliError(
      `${what}: PostgreSQL: ${(error as Error).message}. Nothing was ${what === 'backup' ? 'backed up' : 'restored'}.`,
      1,
    );
  }
  return error;
}

export async function backupCommand(argv: string[]): Promise<number> {
  const { dataDir, filesDir, folder, databaseUrl, json } = parse(argv, 'backup');
  try {
    if (databaseUrl) {
      const report = await backupPostgres(dataDir, databaseUrl, folder, { filesDir });
      console.log(
        json
          ? JSON.stringify({ backup: folder, ...report }, null, 2)
          : `Backed up ${report.database} and the files of ${dataDir} to ${folder}: ${report.rows} rows in ${report.tables.length} tables (schema ${report.schema_version}, one snapshot, each table checked), ${report.files} file(s) and ${report.packages} package(s) (${size(report.bytes)}).\n` +
              `Restore it into an empty PostgreSQL database with: MDM_CONSOLE_DATABASE_URL=${urlToType(databaseUrl)} mdm-console restore ${folder} --data-dir ${dataDir}   (with the servers stopped)\n` +
              `or onto SQLite with: mdm-console restore ${folder} --data-dir DATA_DIR`,
      );
      return 0;
    }
    const manifest = await backupDataDir(dataDir, folder, filesDir);
    console.log(
      json
        ? JSON.stringify({ backup: folder, ...manifest }, null, 2)
        : `Backed up ${dataDir} to ${folder}: the database (schema ${manifest.schema_version}), ${manifest.files} file(s) and ${manifest.packages} package(s) (${size(manifest.bytes)}).\nRestore it with: mdm-console restore ${folder} --data-dir ${dataDir}   (with the server stopped)`,
    );
    return 0;
  } catch (error) {
    throw refusal('backup', error);
  }
}

export async function restoreCommand(argv: string[]): Promise<number> {
  const { dataDir, filesDir, folder, databaseUrl, json } = parse(argv, 'restore');
  const ownFilesDir = filesDir === join(dataDir, 'files') ? '' : ` --files-dir ${filesDir}`;
  try {
    if (databaseUrl) {
      const report = await restorePostgres(dataDir, folder, databaseUrl, { filesDir });
      console.log(
        json
          ? JSON.stringify({ restored: folder, ...report, data_dir: dataDir }, null, 2)
          : `Restored the backup of ${report.manifest.created_at} into ${report.database} (${report.rows} rows, each table checked) and ${dataDir}.` +
              (report.previous ? `\nWhat it replaced in the data dir is in ${report.previous}.` : '') +
              `\nStart the server again: MDM_CONSOLE_DATABASE_URL=${urlToType(databaseUrl)} mdm-console serve --data-dir ${dataDir}${ownFilesDir}`,
      );
      return 0;
    }
    const { manifest, previous } = restoreDataDir(dataDir, folder, filesDir);
    console.log(
      json
        ? JSON.stringify({ restored: folder, previous, ...manifest, data_dir: dataDir }, null, 2)
        : `Restored the backup of ${manifest.created_at} into ${dataDir}.` +
            (previous ? `\nWhat it replaced is in ${previous}.` : '') +
            `\nStart the server again: npm run serve -- --data-dir ${dataDir}${ownFilesDir}`,
    );
    return 0;
  } catch (error) {
    throw refusal('restore', error);
  }
}
