// `mdm-console migrate-db --to postgres://…`: moves a stopped server's SQLite data dir into an
// empty PostgreSQL database (db/migrate-to-postgres.ts) and says what to run next.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { defaultDataDir } from '../backend/config.ts';
import { CopyError } from '../backend/db/copy-tables.ts';
import { migrateDataDirToPostgres, type MigrateReport } from '../backend/db/migrate-to-postgres.ts';
import { CliError } from './server-file.ts';

/** The URL to type next time, its password replaced by a placeholder (it is not printed). */
export function urlToType(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = 'PASSWORD';
    return parsed.toString();
  } catch {
    return 'postgres://USER:PASSWORD@HOST:PORT/DATABASE';
  }
}

/** A single-quoted shell word. */
const shellWord = (text: string) => (/^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`);

/** The command that starts the server on the migrated database (the URL in the environment, where `ps` does not show it). */
export function serveLine(dataDir: string, url: string): string {
  return `MDM_CONSOLE_DATABASE_URL=${shellWord(urlToType(url))} mdm-console serve --data-dir ${shellWord(dataDir)}`;
}

export function nextSteps(report: MigrateReport, url: string): string {
  return [
    'Next: start the server on PostgreSQL, with the same data dir (its certificate, secrets and stored files):',
    `  ${serveLine(report.dataDir, url)}`,
    '  (with the real password, or the URL without it and the password in PGPASSWORD or ~/.pgpass;',
    '  --database-url URL works too, but puts the password on the command line, where every local user sees it)',
    `The stored files stay in ${report.stored.dir}. The SQLite file is left as it was, as the way back:`,
    'do not start the server on it again (without the database URL) unless you give up PostgreSQL, as it no longer sees changes.',
  ].join('\n');
}

const count = (n: number) => n.toLocaleString('en-US');

export async function migrateDbCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { to: { type: 'string' }, 'data-dir': { type: 'string' }, json: { type: 'boolean' } },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length > 0)
    throw new CliError(`migrate-db takes no ${positionals[0]}: mdm-console migrate-db --to postgres://…`);
  const url = values.to ?? process.env.MDM_CONSOLE_DATABASE_URL;
  if (!url) {
    throw new CliError(
      'migrate-db needs the PostgreSQL database to copy into: mdm-console migrate-db --to postgres://USER:PASSWORD@HOST:PORT/DATABASE (or $MDM_CONSOLE_DATABASE_URL)',
    );
  }
  const dataDir = resolve(values['data-dir'] ?? defaultDataDir());
  const json = values.json === true;
  const say = (text: string) => {
    if (!json) console.error(text);
  };
  // Ctrl+C stops the copy between two batches and rolls its transaction back: the database is
  // left with the empty schema, and the same command starts over. A second Ctrl+C ends at once
  // (PostgreSQL then rolls back the transaction of the dropped connection itself).
  const interrupt = new AbortController();
  const onSignal = () =>
    interrupt.abort(
      new CopyError(
        'Interrupted: the copy was rolled back, so the PostgreSQL database holds nothing of it. Run the same command again to start over.',
      ),
    );
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let lastTable = '';
  try {
    const report = await migrateDataDirToPostgres({
      dataDir,
      url,
      signal: interrupt.signal,
      onStep: (text) => say(`${text}…`),
      onProgress: ({ table, rows, done }) => {
        if (done && rows > 0) say(`  ${table}: ${count(rows)} row${rows === 1 ? '' : 's'}`);
        else if (table !== lastTable && rows >= 10_000) say(`  ${table}: copying…`);
        lastTable = table;
      },
    });
    if (json) {
      console.log(JSON.stringify({ ...report, next: serveLine(dataDir, url) }, null, 2));
    } else {
      console.log(
        `Migrated ${dataDir} to ${report.database}: ${count(report.rows)} rows in ${report.tables.length} tables ` +
          `(${report.seconds.toFixed(1)} s, ${count(report.rowsPerSecond)} rows/s), schema ${report.schemaVersion}; ` +
          "every table's row count and checksum match on both sides.\n" +
          `Stored content checked: ${report.stored.files} file(s) and ${report.stored.packages} package(s), ${report.stored.bytes} bytes, each with its SHA-256.\n` +
          nextSteps(report, url),
      );
    }
    return 0;
  } catch (error) {
    if (error instanceof CopyError) throw new CliError(`migrate-db: ${error.message}`, 1);
    // PostgreSQL's own refusal (a permission, a lost connection): its message, not a stack.
    if ((error as { severity?: string }).severity || (error as { code?: string }).code === 'ECONNRESET') {
      throw new CliError(
        `migrate-db: PostgreSQL: ${(error as Error).message}. Nothing was copied; run the command again once that is fixed.`,
        1,
      );
    }
    throw error;
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}
