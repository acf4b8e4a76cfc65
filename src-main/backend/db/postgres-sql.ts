import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';
import { StartupError } from '../startup-error.ts';
import type { Sql, SqlParams, SqlRunResult, SqlValue } from './sql.ts';

/** The transaction an async context runs in; `open` turns false once it has committed or rolled back. */
interface Transaction {
  client: pg.PoolClient;
  open: boolean;
}

/** A statement rewritten for PostgreSQL: `$n` placeholders, and how to fill them from the port's params. */
interface Rewritten {
  text: string;
  /** Positional: how many `?` there were. */
  positional: number;
  /** Named: the name of each `$n`, in order (empty for positional statements). */
  names: string[];
}

export interface PostgresSqlOptions {
  /** Connections in the pool (default 10). */
  poolSize?: number;
  /**
   * One writing transaction at a time across every process on the database, as SQLite has it
   * (default true). The repositories were written for SQLite's single writer: a transaction that
   * reads, decides and writes relies on no other transaction writing in between. Each transaction
   * takes a transaction-level advisory lock first, so on PostgreSQL too transactions are serialized
   * (queries outside a transaction are not: they run at once on another pooled connection, seeing
   * committed rows only).
   */
  serializeTransactions?: boolean;
  /** Seconds to wait for a connection (default 10). */
  connectTimeoutSeconds?: number;
}

/** The advisory lock key of the transaction lock (`serializeTransactions`): "mdm-tx". */
const TRANSACTION_LOCK = 0x6d646d7478;

// Integers come back as JS numbers, as on SQLite: bigint (COUNT(*), ids) and numeric (SUM of
// integers) are parsed to numbers; a boolean (EXISTS, a comparison) is 1 or 0 as SQLite gives it;
// JSON (json_agg) stays its text, as SQLite's json functions give it; dates and timestamps stay
// the strings PostgreSQL sends (the schema keeps times as ISO text).
const PARSERS: Record<number, (text: string) => unknown> = {
  [pg.types.builtins.INT8]: Number,
  [pg.types.builtins.NUMERIC]: Number,
  [pg.types.builtins.BOOL]: (text) => (text === 't' ? 1 : 0),
  [pg.types.builtins.JSON]: (text) => text,
  [pg.types.builtins.JSONB]: (text) => text,
  [pg.types.builtins.DATE]: (text) => text,
  [pg.types.builtins.TIMESTAMP]: (text) => text,
  [pg.types.builtins.TIMESTAMPTZ]: (text) => text,
};
const TYPES = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    (format ?? 'text') === 'text' && PARSERS[oid]
      ? PARSERS[oid]
      : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/**
 * The SQL port over a node-postgres pool. Each transaction holds one pooled connection, carried by
 * AsyncLocalStorage, so every query its work issues, however deep, runs on it; a nested
 * `transaction` is a SAVEPOINT of the outer one (a nested failure the outer work catches undoes
 * only the nested part, as on SQLite). Queries outside a transaction take any pooled connection.
 *
 * Unlike SQLite, PostgreSQL aborts the whole transaction when one of its statements fails: a
 * statement whose failure the work catches (a unique violation mapped to 409, say) must run in a
 * nested `transaction` of its own, which works the same on both engines.
 */
export class PostgresSql implements Sql {
  readonly engine = 'postgres' as const;
  readonly pool: pg.Pool;
  private readonly current = new AsyncLocalStorage<Transaction>();
  private readonly rewritten = new Map<string, Rewritten>();
  private readonly serialize: boolean;
  private savepoints = 0;
  private closed = false;
  private readonly url: string;
  private readonly connectTimeoutMs: number;

  constructor(url: string, options: PostgresSqlOptions = {}) {
    this.url = url;
    this.connectTimeoutMs = (options.connectTimeoutSeconds ?? 10) * 1000;
    this.serialize = options.serializeTransactions ?? true;
    this.pool = new pg.Pool({
      connectionString: url,
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: (options.connectTimeoutSeconds ?? 10) * 1000,
      application_name: 'mdm-console',
      types: TYPES,
    });
    // A pooled connection that dies while idle (the server restarted) is dropped by the pool; it
    // must not end the process. The next query takes a new connection.
    this.pool.on('error', () => {});
  }

  async all<T>(text: string, params?: SqlParams): Promise<T[]> {
    return (await this.query(text, params)).rows as T[];
  }

  async get<T>(text: string, params?: SqlParams): Promise<T | undefined> {
    return (await this.query(text, params)).rows[0] as T | undefined;
  }

  async value<T>(text: string, params?: SqlParams): Promise<T | undefined> {
    const row = (await this.query(text, params, 'array')).rows[0] as unknown[] | undefined;
    return row?.[0] as T | undefined;
  }

  async run(text: string, params?: SqlParams): Promise<SqlRunResult> {
    return { changes: (await this.query(text, params)).rowCount ?? 0 };
  }

  async exec(text: string): Promise<void> {
    // No parameters: the simple protocol, which runs several statements.
    const open = this.current.getStore();
    await explained(open?.open ? open.client.query(text) : this.pool.query(text));
  }

  inTransaction(): boolean {
    return this.current.getStore()?.open === true;
  }

  async transaction<T>(work: () => Promise<T>): Promise<T> {
    const open = this.current.getStore();
    if (open?.open) return this.nested(open, work);
    const client = await this.pool.connect();
    const transaction: Transaction = { client, open: true };
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      if (this.serialize) await client.query('SELECT pg_advisory_xact_lock($1)', [TRANSACTION_LOCK]);
      const result = await this.current.run(transaction, work);
      await explained(client.query('COMMIT'));
      return result;
    } catch (error) {
      try {
        await client.query('ROLLBACK');
      } catch (rollbackError) {
        // The connection is gone: it leaves the pool rather than going back to it.
        broken = rollbackError as Error;
      }
      throw error;
    } finally {
      transaction.open = false;
      client.release(broken);
    }
  }

  /**
   * A connection of its own, outside the pool, connected (db/postgres-listener.ts holds one to
   * LISTEN). The caller ends it.
   */
  async dedicatedClient(applicationName: string): Promise<pg.Client> {
    const client = new pg.Client({
      connectionString: this.url,
      connectionTimeoutMillis: this.connectTimeoutMs,
      application_name: applicationName,
      keepAlive: true,
      types: TYPES,
    });
    // Until the caller listens for them, errors of a broken connection must not end the process.
    client.on('error', () => {});
    try {
      await client.connect();
    } catch (error) {
      await client.end().catch(() => {});
      throw error;
    }
    return client;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }

  private async nested<T>(transaction: Transaction, work: () => Promise<T>): Promise<T> {
    const name = `nested_${++this.savepoints}`;
    await transaction.client.query(`SAVEPOINT ${name}`);
    try {
      const result = await work();
      if (!transaction.open) throw outlived();
      await explained(transaction.client.query(`RELEASE SAVEPOINT ${name}`));
      return result;
    } catch (error) {
      if (transaction.open) await transaction.client.query(`ROLLBACK TO SAVEPOINT ${name}; RELEASE SAVEPOINT ${name}`);
      throw error;
    }
  }

  private query(text: string, params: SqlParams | undefined, rowMode?: 'array'): Promise<pg.QueryResult> {
    const statement = this.rewrite(text);
    const values = bindValues(statement, params);
    const config: pg.QueryConfig = { text: statement.text, values, ...(rowMode ? { rowMode } : {}) };
    const open = this.current.getStore();
    return explained(open?.open ? open.client.query(config) : this.pool.query(config));
  }

  private rewrite(text: string): Rewritten {
    let statement = this.rewritten.get(text);
    if (!statement) {
      statement = rewritePlaceholders(text);
      if (this.rewritten.size > 2000) this.rewritten.clear();
      this.rewritten.set(text, statement);
    }
    return statement;
  }
}

/** A nested transaction whose outer one ended first: its work was not awaited inside the outer one. */
function outlived(): Error {
  return new Error(
    'A nested transaction outlived the transaction it joined (its work ended after the outer one committed or rolled back): an await is missing where it was started',
  );
}

/** A failed statement of an already-failed transaction says what went wrong, in the port's terms. */
async function explained<T>(promise: Promise<T>): Promise<T> {
  try {
    return await promise;
  } catch (error) {
    if ((error as { code?: string }).code === '25P02') {
      (error as Error).message +=
        ' (an earlier statement of this transaction failed and its error was caught: run a statement whose failure ' +
        'you catch in a nested sql.transaction of its own)';
    }
    throw error;
  }
}

function bindValues(statement: Rewritten, params: SqlParams | undefined): unknown[] {
  if (statement.names.length > 0) {
    if (params === undefined || Array.isArray(params)) {
      throw new TypeError(`This statement takes named parameters (@${statement.names[0]}): give them as an object`);
    }
    const named = params as Readonly<Record<string, SqlValue | undefined>>;
    return statement.names.map((name) => {
      const value = named[name];
      if (value === undefined) throw new RangeError(`Missing named parameter "${name}"`);
      return toPostgres(value);
    });
  }
  const positional = (Array.isArray(params) ? params : params === undefined ? [] : null) as readonly SqlValue[] | null;
  if (positional === null) {
    if (statement.positional === 0) return [];
    throw new TypeError('This statement takes positional parameters (?): give them as an array');
  }
  if (positional.length !== statement.positional) {
    throw new RangeError(`Too ${positional.length < statement.positional ? 'few' : 'many'} parameter values were provided`);
  }
  return positional.map(toPostgres);
}

function toPostgres(value: SqlValue): unknown {
  // node-postgres sends numbers and bigints as their text; Buffers as bytea.
  return typeof value === 'bigint' ? value.toString() : value;
}

/**
 * Rewrites `?` and `@name` placeholders into PostgreSQL's `$n`, outside string literals, quoted
 * identifiers, dollar-quoted strings and comments. The same name used twice is one `$n`.
 */
export function rewritePlaceholders(text: string): Rewritten {
  let out = '';
  let positional = 0;
  const names: string[] = [];
  let i = 0;
  const n = text.length;
  const copyUntil = (end: number) => {
    out += text.slice(i, end);
    i = end;
  };
  while (i < n) {
    const c = text[i]!;
    const next = text[i + 1];
    if (c === "'" || c === '"') {
      // A quoted string or identifier; a doubled quote stays inside it.
      let j = i + 1;
      for (;;) {
        const close = text.indexOf(c, j);
        if (close < 0) {
          j = n;
          break;
        }
        if (text[close + 1] === c) j = close + 2;
        else {
          j = close + 1;
          break;
        }
      }
      copyUntil(j);
    } else if (c === '-' && next === '-') {
      const end = text.indexOf('\n', i);
      copyUntil(end < 0 ? n : end);
    } else if (c === '/' && next === '*') {
      // Block comments nest in PostgreSQL.
      let depth = 0;
      let j = i;
      while (j < n) {
        if (text[j] === '/' && text[j + 1] === '*') {
          depth++;
          j += 2;
        } else if (text[j] === '*' && text[j + 1] === '/') {
          depth--;
          j += 2;
          if (depth === 0) break;
        } else j++;
      }
      copyUntil(j);
    } else if (c === '$' && /[A-Za-z_$]/.test(next ?? '') && (i === 0 || !/[A-Za-z0-9_]/.test(text[i - 1]!))) {
      // $tag$ … $tag$ (or $$ … $$).
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(text.slice(i))?.[0];
      if (tag) {
        const close = text.indexOf(tag, i + tag.length);
        copyUntil(close < 0 ? n : close + tag.length);
      } else {
        out += c;
        i++;
      }
    } else if (c === '?') {
      out += `$${++positional}`;
      i++;
    } else if (c === '@' && /[A-Za-z_]/.test(next ?? '')) {
      const name = /^@([A-Za-z_][A-Za-z0-9_]*)/.exec(text.slice(i))![1]!;
      let index = names.indexOf(name);
      if (index < 0) index = names.push(name) - 1;
      out += `$${index + 1}`;
      i += name.length + 1;
    } else {
      out += c;
      i++;
    }
  }
  if (positional > 0 && names.length > 0) {
    throw new SyntaxError('A statement takes either positional (?) or named (@name) parameters, not both');
  }
  return { text: out, positional, names };
}

/** `postgres://user@host:port/db`: the URL without its password, for messages and logs. */
export function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.password = '';
    return parsed.toString();
  } catch {
    return '(an unreadable URL)';
  }
}

/** Refuses a URL that is not postgres://USER:PASSWORD@HOST:PORT/DATABASE, saying why. */
export function checkDatabaseUrl(url: string): void {
  const example = 'postgres://USER:PASSWORD@HOST:PORT/DATABASE';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new StartupError(`The database URL is not a URL: give it as ${example}.`, {
      code: 'EDATABASEURL',
      option: 'databaseUrl',
    });
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new StartupError(
      `The database URL ${redactedUrl(url)} is not a PostgreSQL URL (it starts with ${parsed.protocol}//): give it as ${example}.`,
      { code: 'EDATABASEURL', option: 'databaseUrl' },
    );
  }
  if (!parsed.hostname) {
    throw new StartupError(`The database URL ${redactedUrl(url)} names no host: give it as ${example}.`, {
      code: 'EDATABASEURL',
      option: 'databaseUrl',
    });
  }
  if (parsed.pathname.length <= 1) {
    throw new StartupError(`The database URL ${redactedUrl(url)} names no database: give it as ${example}.`, {
      code: 'EDATABASEURL',
      option: 'databaseUrl',
    });
  }
}

/** Turns the errors of connecting to PostgreSQL into what the person starting the server can act on. */
export function explainPostgresError(error: unknown, url: string): unknown {
  if (error instanceof StartupError) return error;
  const { code, message } = error as { code?: string; message?: string };
  const where = redactedUrl(url);
  let host = '';
  let database = '';
  let user = '';
  try {
    const parsed = new URL(url);
    host = `${parsed.hostname}:${parsed.port || '5432'}`;
    database = decodeURIComponent(parsed.pathname.slice(1));
    user = decodeURIComponent(parsed.username);
  } catch {
    // checkDatabaseUrl has said what is wrong with it.
  }
  const details = { code: code ?? 'EDATABASE', option: 'databaseUrl', cause: error };
  switch (code) {
    case 'ECONNREFUSED':
      return new StartupError(
        `Cannot connect to PostgreSQL at ${host} (connection refused): is PostgreSQL running and listening there? (${where})`,
        details,
      );
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new StartupError(`Cannot connect to PostgreSQL: the host of ${where} is not found. Check the host name.`, details);
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return new StartupError(
        `Cannot reach PostgreSQL at ${host} (${code}): check the address and the network. (${where})`,
        details,
      );
    case '28P01':
      return new StartupError(
        `PostgreSQL refused the password of user "${user}" (${where}): check the user and password.`,
        details,
      );
    case '28000':
      return new StartupError(
        `PostgreSQL refused user "${user}" on database "${database}" (${message ?? 'not authorized'}): check pg_hba.conf and the user. (${where})`,
        details,
      );
    case '3D000':
      return new StartupError(
        `The PostgreSQL database "${database}" does not exist at ${host}: create it (createdb ${database}, or CREATE DATABASE) and start again.`,
        details,
      );
    case '42501':
      return new StartupError(
        `PostgreSQL user "${user}" may not create the tables in database "${database}" (${message}): make it the database's owner ` +
          `(ALTER DATABASE ${database} OWNER TO ${user}) or grant it CREATE on schema public.`,
        details,
      );
    case '57P03':
      return new StartupError(
        `PostgreSQL at ${host} is starting up or shutting down: try again in a moment. (${where})`,
        details,
      );
    case undefined:
    default:
      break;
  }
  if (message && /timeout exceeded when trying to connect|Connection terminated due to connection timeout/i.test(message)) {
    return new StartupError(`PostgreSQL at ${host} did not answer in time: check the address and that it runs. (${where})`, {
      ...details,
      code: 'ETIMEDOUT',
    });
  }
  if (message && /SASL|password must be a string/i.test(message)) {
    return new StartupError(`PostgreSQL asks a password of user "${user}": give it in the URL (${where}).`, {
      ...details,
      code: '28P01',
    });
  }
  return error;
}
