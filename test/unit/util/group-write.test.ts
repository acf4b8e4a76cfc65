import { AsyncLocalStorage } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import { GroupWrite } from '../../../src-main/backend/util/group-write.ts';

describe('GroupWrite (the answers to a bulk ping, a group per transaction)', () => {
  it('writes an item alone at once, and what arrives during a write together in the next', async () => {
    const writes: number[][] = [];
    let release!: () => void;
    const group = new GroupWrite<number>(async (items) => {
      writes.push(items);
      if (writes.length === 1) await new Promise<void>((resolve) => (release = resolve));
    });
    const first = group.add(0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toEqual([[0]]); // written without waiting for company
    const rest = Array.from({ length: 1_000 }, (_, i) => group.add(i + 1));
    release();
    await Promise.all([first, ...rest]);
    // 1,000 items that arrived during one write: two writes (500 at most each), not 1,000.
    expect(writes.map((items) => items.length)).toEqual([1, 500, 500]);
    expect(writes.flat()).toEqual(Array.from({ length: 1_001 }, (_, i) => i));
  });

  it('rejects the items of a failed write only, and keeps writing the next ones', async () => {
    let fail = true;
    const written: string[] = [];
    const group = new GroupWrite<string>(async (items) => {
      if (fail) {
        fail = false;
        throw new Error('disk full');
      }
      written.push(...items);
    });
    await expect(group.add('lost')).rejects.toThrow('disk full');
    await group.add('kept');
    expect(written).toEqual(['kept']);
  });

  it("writes in the context it was made in, not in the first caller's", async () => {
    const context = new AsyncLocalStorage<string>();
    const seen: (string | undefined)[] = [];
    const group = new GroupWrite<number>(async () => {
      seen.push(context.getStore());
    });
    await context.run('request of one admin', () => group.add(1));
    expect(seen).toEqual([undefined]);
  });
});
