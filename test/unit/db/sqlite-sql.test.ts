import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteSql } from '../../../src-main/backend/db/sqlite-sql.ts';
import { UnitOfWork } from '../../../src-main/backend/db/unit-of-work.ts';

// The SQLite driver of the SQL port, over a real file: transactions that await between statements,
// other work queued behind them, and the unit of work's effects after commit.
let dir: string;
let sql: SqliteSql;

/** Resolves after a turn of the event loop: other work gets its chance to run (or to queue). */
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sqlite-sql-'));
  sql = new SqliteSql(new Database(join(dir, 'db.sqlite')));
  await sql.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, n INTEGER NOT NULL DEFAULT 0)');
});

afterEach(async () => {
  await sql.close();
  rmSync(dir, { recursive: true, force: true });
});

const names = () => sql.all<{ name: string }>('SELECT name FROM t ORDER BY id').then((rows) => rows.map((r) => r.name));

describe('SqliteSql', () => {
  it('binds positional and named parameters; value() is the first column; RETURNING gives the new id', async () => {
    const id = await sql.value<number>('INSERT INTO t (name, n) VALUES (?, ?) RETURNING id', ['a', 1]);
    expect(id).toBe(1);
    await sql.run('INSERT INTO t (name, n) VALUES (@name, @n)', { name: 'b', n: 2 });
    expect(await sql.get('SELECT name, n FROM t WHERE n = @n', { n: 2 })).toEqual({ name: 'b', n: 2 });
    expect(await sql.value('SELECT name FROM t WHERE id = ?', [1])).toBe('a');
    expect(await sql.value('SELECT name FROM t WHERE id = ?', [99])).toBeUndefined();
    expect(await sql.get('SELECT * FROM t WHERE id = ?', [99])).toBeUndefined();
    expect(await sql.run('UPDATE t SET n = n + 1', [])).toEqual({ changes: 2 });
    // The same text with get() and value() is two statements: pluck does not leak into get().
    expect(await sql.get('SELECT name FROM t WHERE id = 1')).toEqual({ name: 'a' });
    expect(await sql.value('SELECT name FROM t WHERE id = 1')).toBe('a');
    expect(await sql.get('SELECT name FROM t WHERE id = 1')).toEqual({ name: 'a' });
  });

  it('joins a nested transaction to the open one, and rolls the whole back when the work throws', async () => {
    await expect(
      sql.transaction(async () => {
        expect(sql.inTransaction()).toBe(true);
        await sql.run('INSERT INTO t (name) VALUES (?)', ['outer']);
        await sql.transaction(async () => {
          await tick();
          await sql.run('INSERT INTO t (name) VALUES (?)', ['inner']);
        });
        expect(await names()).toEqual(['outer', 'inner']);
        throw new Error('no');
      }),
    ).rejects.toThrow('no');
    expect(sql.inTransaction()).toBe(false);
    expect(await names()).toEqual([]);
  });

  it('undoes only a nested part that failed when the outer work goes on (a savepoint)', async () => {
    await sql.transaction(async () => {
      await sql.run('INSERT INTO t (name) VALUES (?)', ['kept']);
      await sql
        .transaction(async () => {
          await sql.run('INSERT INTO t (name) VALUES (?)', ['undone']);
          throw new Error('nested');
        })
        .catch(() => {});
    });
    expect(await names()).toEqual(['kept']);
  });

  it('runs two transactions that await between statements one after the other', async () => {
    const order: string[] = [];
    const work = (name: string) =>
      sql.transaction(async () => {
        order.push(`${name} begins`);
        const n = (await sql.value<number>('SELECT count(*) FROM t')) ?? 0;
        await tick();
        await sql.run('INSERT INTO t (name, n) VALUES (?, ?)', [name, n]);
        await tick();
        order.push(`${name} ends`);
      });
    await Promise.all([work('first'), work('second')]);
    expect(order).toEqual(['first begins', 'first ends', 'second begins', 'second ends']);
    // Each read the count the other left: a read-then-write is atomic inside a transaction.
    expect(await sql.all('SELECT name, n FROM t ORDER BY id')).toEqual([
      { name: 'first', n: 0 },
      { name: 'second', n: 1 },
    ]);
  });

  it('makes a read from outside wait for the open transaction: it never sees uncommitted rows', async () => {
    let inserted!: () => void;
    const insertedYet = new Promise<void>((resolve) => (inserted = resolve));
    let finish!: () => void;
    const finishing = new Promise<void>((resolve) => (finish = resolve));
    const transaction = sql.transaction(async () => {
      await sql.run('INSERT INTO t (name) VALUES (?)', ['uncommitted']);
      inserted();
      await finishing;
      throw new Error('rolled back');
    });
    await insertedYet;
    let read: string[] | undefined;
    const outside = names().then((found) => (read = found));
    await tick();
    expect(read).toBeUndefined(); // still waiting for the transaction
    finish();
    await expect(transaction).rejects.toThrow('rolled back');
    await outside;
    expect(read).toEqual([]);
  });

  it('gives the queued work its turn in the order it came, and fails only the statement that fails', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const first = sql.transaction(async () => {
      await sql.run('INSERT INTO t (name) VALUES (?)', ['a']);
      await held;
    });
    await tick();
    const duplicate = sql.run('INSERT INTO t (name) VALUES (?)', ['a']);
    const later = sql.run('INSERT INTO t (name) VALUES (?)', ['b']);
    release();
    await first;
    await expect(duplicate).rejects.toThrow(/UNIQUE/);
    await later;
    expect(await names()).toEqual(['a', 'b']);
  });
});

describe('UnitOfWork', () => {
  it('runs effects after the commit, in commit order, never after a rollback; each transaction keeps its own', async () => {
    const work = new UnitOfWork(sql);
    const seen: string[] = [];
    const committed = work.run(async () => {
      await sql.run('INSERT INTO t (name) VALUES (?)', ['one']);
      await work.afterCommit(() => seen.push('one'));
      await tick();
      expect(seen).toEqual([]); // not before the commit
    });
    const rolledBack = work.run(async () => {
      await work.afterCommit(() => seen.push('never'));
      await tick();
      throw new Error('undone');
    });
    const nested = work.run(async () => {
      await work.run(async () => {
        await work.afterCommit(() => seen.push('nested'));
        await tick();
      });
      expect(seen).not.toContain('nested'); // the outer one has not committed yet
      await work.afterCommit(() => seen.push('outer'));
    });
    await committed;
    await expect(rolledBack).rejects.toThrow('undone');
    await nested;
    expect(seen).toEqual(['one', 'nested', 'outer']);
    // Outside a transaction an effect runs at once.
    await work.afterCommit(() => seen.push('now'));
    expect(seen.at(-1)).toBe('now');
  });
});
