// `mdm-console migrate-db --to postgres://…`: moves a stopped server's SQLite data dir into an
// empty PostgreSQL database (db/migrate-to-postgres.ts) and says what to run next.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { defaultDataDir } from '../backend/config.ts';
import { CopyError } from '../backend/db/copy-tables.ts';
import { migrateDataDirToPostgres, type MigrateReport } from '../backend/db/migrate-to-postgres.ts';
import { SecretStore } from '../backend/mail/secrets.ts';
import { ClusterKeyError, SECRET_KEY_ENV, writeNewClusterKey } from '../backend/secrets/cluster-key.ts';
import { givenClusterKey, sealedRows } from '../backend/secrets/database-secrets.ts';
import { CliError } from './server-file.ts';

/** What became of the data dir's SMTP password: carried (sealed by the key named), protected by the OS keychain, or none. */
export type PasswordCarried =
  { state: 'carried'; keySource: string; keyMade: boolean } | { state: 'keychain' } | { state: 'none' };

/** The migrate-db paragraph about the SMTP password and the cluster key. */
export function passwordStep(carried: PasswordCarried): string[] {
  if (carried.state === 'keychain')
    return [
      "The SMTP password is protected by this computer's keychain (the desktop app), which the command line cannot read: it was",
      'not carried over. Enter it again in the console (Settings → Mail) once the server runs on PostgreSQL.',
    ];
  if (carried.state === 'none') return [];
  return [
    `The SMTP password was carried over, encrypted in the database with the cluster key ${carried.keyMade ? `written to ${carried.keySource}` : `of ${carried.keySource}`}.`,
    `Every node on this database needs that key: copy the file into each node's data dir, or set ${SECRET_KEY_ENV} (or serve --secret-key-file FILE)`,
    'on every node. Keep a copy of it apart from the backups: without it the password must be entered again.',
  ];
}

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

export function nextSteps(report: MigrateReport, url: string, carried: PasswordCarried = { state: 'none' }): string {
  return [
    'Next: start the server on PostgreSQL, with the same data dir (its certificate, secrets and stored files):',
    `  ${serveLine(report.dataDir, url)}`,
    '  (with the real password, or the URL without it and the password in PGPASSWORD or ~/.pgpass;',
    '  --database-url URL works too, but puts the password on the command line, where every local user sees it)',
    `The stored files stay in ${report.stored.dir}. The SQLite file is left as it was, as the way back:`,
    'do not start the server on it again (without the database URL) unless you give up PostgreSQL, as it no longer sees changes.',
    ...passwordStep(carried),
  ].join('\n');
}

const count = (n: number) => n.toLocaleString('en-US');

export async function migrateDbCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      to: { type: 'string' },
      'data-dir': { type: 'string' },
      'secret-key-file': { type: 'string' },
      json: { type: 'boolean' },
    },
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
  // The SMTP password of the data dir (secrets.json) goes into the database, sealed by the cluster
  // key every node will be given: the one named, else the data dir's, else a new one written there.
  let carried: PasswordCarried = { state: 'none' };
  let secretRows: ReturnType<typeof sealedRows> | undefined;
  let madeKey: ReturnType<typeof writeNewClusterKey> | null = null;
  try {
    const fileSecrets = new SecretStore(dataDir);
    const password = fileSecrets.get('smtp_password');
    if (fileSecrets.isUnreadable('smtp_password')) carried = { state: 'keychain' };
    else if (password !== undefined) {
      let key = givenClusterKey({ secretKey: process.env[SECRET_KEY_ENV], secretKeyFile: values['secret-key-file'], dataDir });
      if (!key) {
        madeKey = writeNewClusterKey(dataDir);
        key = madeKey.key;
      }
      secretRows = sealedRows(key, { smtp_password: password });
      carried = { state: 'carried', keySource: key.source, keyMade: madeKey !== null };
    }
  } catch (error) {
    if (error instanceof ClusterKeyError) throw new CliError(`migrate-db: ${error.message}`, 1);
    throw new CliError(`migrate-db: cannot read the SMTP password of ${dataDir} (secrets.json): ${(error as Error).message}`, 1);
  }
  try {
    const report = await migrateDataDirToPostgres({
      dataDir,
      url,
      secretRows,
      signal: interrupt.signal,
      onStep: (text) => say(`${text}…`),
      onProgress: ({ table, rows, done }) => {
        if (done && rows > 0) say(`  ${table}: ${count(rows)} row${rows === 1 ? '' : 's'}`);
        else if (table !== lastTable && rows >= 10_000) say(`  ${table}: copying…`);
        lastTable = table;
      },
    });
    if (json) {
      console.log(JSON.stringify({ ...report, smtp_password: carried, next: serveLine(dataDir, url) }, null, 2));
    } else {
      console.log(
        `Migrated ${dataDir} to ${report.database}: ${count(report.rows)} rows in ${report.tables.length} tables ` +
          `(${report.seconds.toFixed(1)} s, ${count(report.rowsPerSecond)} rows/s), schema ${report.schemaVersion}; ` +
          "every table's row count and checksum match on both sides.\n" +
          `Stored content checked: ${report.stored.files} file(s) and ${report.stored.packages} package(s), ${report.stored.bytes} bytes, each with its SHA-256.\n` +
          nextSteps(report, url, carried),
      );
    }
    return 0;
  } catch (error) {
    // Nothing was copied: a key made for it goes too.
    madeKey?.remove();
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
