import { AsyncLocalStorage } from 'node:async_hooks';
import type Database from 'better-sqlite3';
import { openDatabase } from './database.ts';
import type { Sql, SqlParams, SqlRunResult } from './sql.ts';

type Statement = Database.Statement<unknown[], unknown>;

/** The transaction an async context runs in; `open` turns false once it has committed or rolled back. */
interface Transaction {
  open: boolean;
  /** Nesting depth: a nested `transaction` is a SAVEPOINT of the outer one. */
  depth: number;
}

/**
 * The SQL port over one better-sqlite3 connection (the embedded default). Statements are prepared
 * once per SQL text and run synchronously; what makes the port asynchronous is the queue in front
 * of the connection: while one transaction is open (its work may await between statements), other
 * transactions and queries from outside it wait their turn, first come first served, so they never
 * see, nor join, its uncommitted rows. With no transaction open, a query runs at once.
 *
 * A transaction is `BEGIN IMMEDIATE` (the write lock taken up front: the CLI or another process
 * waits on busy_timeout rather than failing half-way) … `COMMIT`, or `ROLLBACK` when the work
 * throws; the three are prepared once, as every statement is (an enrollment runs several
 * transactions: `exec` parsed each of them every time). A nested `transaction` joins the open one as a SAVEPOINT, so a nested failure the outer
 * work catches undoes only the nested part (as better-sqlite3's nested transactions did).
 */
export class SqliteSql implements Sql {
  readonly engine = 'sqlite' as const;
  /** The raw handle, for SQLite-only tools in db/ (backup, migrations at open). */
  readonly db: Database.Database;
  private readonly statements = new Map<string, Statement>();
  private readonly plucked = new Map<string, Statement>();
  private readonly current = new AsyncLocalStorage<Transaction>();
  /** Turns holding or waiting for the connection (an open transaction, queued work). */
  private waiting = 0;
  private tail: Promise<void> = Promise.resolve();
  private savepoints = 0;

  constructor(db: Database.Database) {
    this.db = db;
  }

  all<T>(text: string, params?: SqlParams): Promise<T[]> {
    return this.query(() => bind(this.prepare(text), params, (s, args) => s.all(...args)) as T[]);
  }

  get<T>(text: string, params?: SqlParams): Promise<T | undefined> {
    return this.query(() => bind(this.prepare(text), params, (s, args) => s.get(...args)) as T | undefined);
  }

  value<T>(text: string, params?: SqlParams): Promise<T | undefined> {
    return this.query(() => bind(this.pluck(text), params, (s, args) => s.get(...args)) as T | undefined);
  }

  run(text: string, params?: SqlParams): Promise<SqlRunResult> {
    return this.query(() => ({ changes: bind(this.prepare(text), params, (s, args) => s.run(...args)).changes }));
  }

  exec(text: string): Promise<void> {
    return this.query(() => {
      this.db.exec(text);
    });
  }

  inTransaction(): boolean {
    return this.current.getStore()?.open === true;
  }

  async transaction<T>(work: () => Promise<T>): Promise<T> {
    const open = this.current.getStore();
    if (open?.open) return this.nested(open, work);
    const release = await this.turn();
    const transaction: Transaction = { open: true, depth: 0 };
    try {
      this.prepare('BEGIN IMMEDIATE').run();
    } catch (error) {
      transaction.open = false;
      release();
      throw error;
    }
    try {
      const result = await this.current.run(transaction, work);
      this.prepare('COMMIT').run();
      return result;
    } catch (error) {
      if (this.db.inTransaction) this.prepare('ROLLBACK').run();
      throw error;
    } finally {
      transaction.open = false;
      release();
    }
  }

  async close(): Promise<void> {
    const release = await this.turn();
    try {
      this.statements.clear();
      this.plucked.clear();
      if (this.db.open) this.db.close();
    } finally {
      release();
    }
  }

  private async nested<T>(transaction: Transaction, work: () => Promise<T>): Promise<T> {
    const name = `nested_${++this.savepoints}`;
    this.db.exec(`SAVEPOINT ${name}`);
    transaction.depth++;
    try {
      const result = await work();
      this.db.exec(`RELEASE ${name}`);
      return result;
    } catch (error) {
      if (this.db.inTransaction) this.db.exec(`ROLLBACK TO ${name}; RELEASE ${name}`);
      throw error;
    } finally {
      transaction.depth--;
    }
  }

  /** Runs one statement now when it may: inside its own transaction, or when nobody holds or awaits the connection. */
  private query<T>(statement: () => T): Promise<T> {
    if (this.inTransaction() || this.waiting === 0) {
      try {
        return Promise.resolve(statement());
      } catch (error) {
        return Promise.reject(error as Error);
      }
    }
    return this.turn().then((release) => {
      try {
        return statement();
      } finally {
        release();
      }
    });
  }

  /** Waits for the connection, first come first served; the returned function hands it on. */
  private async turn(): Promise<() => void> {
    this.waiting++;
    const previous = this.tail;
    let handOn!: () => void;
    this.tail = new Promise<void>((resolve) => (handOn = resolve));
    await previous;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.waiting--;
      handOn();
    };
  }

  private prepare(text: string): Statement {
    let statement = this.statements.get(text);
    if (!statement) {
      statement = this.db.prepare(text);
      this.statements.set(text, statement);
    }
    return statement;
  }

  private pluck(text: string): Statement {
    let statement = this.plucked.get(text);
    if (!statement) {
      statement = this.db.prepare(text).pluck();
      this.plucked.set(text, statement);
    }
    return statement;
  }
}

/** better-sqlite3 takes positional parameters spread and named ones as one object. */
function bind<R>(statement: Statement, params: SqlParams | undefined, call: (s: Statement, args: unknown[]) => R): R {
  if (params === undefined) return call(statement, []);
  if (Array.isArray(params)) return call(statement, params as unknown[]);
  return call(statement, [params]);
}

/** Opens (creating and migrating if needed) the SQLite file, as `openDatabase` does, behind the SQL port. */
export function openSqliteSql(file: string): SqliteSql {
  return new SqliteSql(openDatabase(file));
}
