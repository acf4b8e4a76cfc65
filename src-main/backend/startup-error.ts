/**
 * A reason the backend cannot start, worded for the person starting it: what is wrong, which
 * file or port, and what to do. `serve` prints it without a stack trace; the desktop app shows it
 * in a dialog.
 */
export class StartupError extends Error {
  readonly code: string;
  /** The port that could not be listened on, for port errors. */
  readonly port?: number;
  /** The option that would change it (a BackendOptions key), so the CLI can name its flag. */
  readonly option?: string;

  constructor(message: string, details: { code: string; port?: number; option?: string; cause?: unknown }) {
    super(message, { cause: details.cause });
    this.name = 'StartupError';
    this.code = details.code;
    this.port = details.port;
    this.option = details.option;
  }
}

const WHAT_TO_DO_WITH_A_BAD_DATABASE =
  'Restore a backup (mdm-console restore BACKUP_DIR, with the server stopped), or move the file aside ' +
  '(with its -wal and -shm files) to start with an empty database.';

/** Turns the errors of opening the SQLite file into what the user can act on. */
export function explainDatabaseError(error: unknown, file: string, dataDir: string): unknown {
  if (error instanceof StartupError) return error;
  const { code, message } = error as { code?: string; message?: string };
  switch (code) {
    case 'EISDIR':
      return new StartupError(
        `The database path ${file} is a directory, not a database file. Move that directory aside, or use another --data-dir.`,
        { code, cause: error },
      );
    case 'ENOTDIR':
    case 'EEXIST':
      return new StartupError(`The data dir ${dataDir} is not a directory. Use another --data-dir.`, { code, cause: error });
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
    case 'SQLITE_READONLY':
    case 'SQLITE_CANTOPEN':
    case 'SQLITE_READONLY_DIRECTORY':
    case 'SQLITE_CANTOPEN_ISDIR':
      if ((error as { path?: string }).path === file) {
        return new StartupError(
          `Cannot write to the database ${file} (permission denied). Give your user write access to it, or use another --data-dir.`,
          { code, cause: error },
        );
      }
      return new StartupError(
        `Cannot write to the data dir ${dataDir} (${code === 'EROFS' ? 'read-only file system' : 'permission denied'}). ` +
          'The server keeps its database, files and token there: give your user write access to it, or use another --data-dir.',
        { code, cause: error },
      );
    case 'SQLITE_NOTADB':
      return new StartupError(
        `${file} is not an SQLite database (it is damaged, or another kind of file). ${WHAT_TO_DO_WITH_A_BAD_DATABASE}`,
        { code, cause: error },
      );
    case 'SQLITE_CORRUPT':
    case 'SQLITE_CORRUPT_VTAB':
      return new StartupError(`${file} is damaged (${message ?? 'corrupt'}). ${WHAT_TO_DO_WITH_A_BAD_DATABASE}`, {
        code,
        cause: error,
      });
    case undefined:
    default:
      return error;
  }
}

export function newerDatabaseError(file: string, found: number, known: number): StartupError {
  return new StartupError(
    `${file} was written by a newer version of MDM Console (database schema ${found}; this version knows up to ${known}), ` +
      'so it is not opened, to keep it intact. Run the newer version, or ' +
      WHAT_TO_DO_WITH_A_BAD_DATABASE.charAt(0).toLowerCase() +
      WHAT_TO_DO_WITH_A_BAD_DATABASE.slice(1),
    { code: 'ESCHEMANEWER' },
  );
}

export interface ListenerPorts {
  port: number;
  adminPort: number;
  mqttPort: number;
  mqttTlsPort: number;
  /** Listened on only with an external RabbitMQ broker. */
  mqttAuthPort?: number;
  host: string;
}

const LISTENERS: { option: keyof ListenerPorts; what: string }[] = [
  { option: 'port', what: 'the agent API and deeplink page' },
  { option: 'adminPort', what: 'the admin API and console' },
  { option: 'mqttPort', what: 'the MQTT broker; another broker such as mosquitto?' },
  { option: 'mqttTlsPort', what: 'the MQTT broker over TLS; another broker such as mosquitto?' },
  { option: 'mqttAuthPort', what: 'the HTTP auth endpoints for RabbitMQ' },
];

/** Port errors of listen(): which port, for what, and which option changes it. */
export function explainListenError(error: unknown, ports: ListenerPorts): unknown {
  if (error instanceof StartupError) return error;
  const { code, port, address } = error as { code?: string; port?: number; address?: string };
  if (code !== 'EADDRINUSE' && code !== 'EACCES' && code !== 'EADDRNOTAVAIL') return error;
  const listener = port ? LISTENERS.find((l) => ports[l.option] === port) : undefined;
  const what = listener ? ` (${listener.what})` : '';
  if (code === 'EADDRNOTAVAIL') {
    return new StartupError(
      `Cannot listen on ${address ?? ports.host}: that address is not one of this machine's. Choose another with the host option.`,
      {
        code,
        port,
        option: 'host',
        cause: error,
      },
    );
  }
  const reason = code === 'EADDRINUSE' ? 'is already in use by another program' : 'needs administrator rights (ports below 1024)';
  return new StartupError(`Port ${port}${what} ${reason}.`, { code, port, option: listener?.option, cause: error });
}
