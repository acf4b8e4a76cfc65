// What every admin command of the CLI shares: its type, its argument parsing (with --data-dir and
// --json), its output and its number checks. The command files (admin-, code-, deploy-,
// policy-commands.ts) import this; admin-commands.ts gathers them into one table, so nothing here
// imports a command.
import { parseArgs } from 'node:util';
import { defaultDataDir } from '../backend/config.ts';
import { adminOf, CliError, readServerFile } from './server-file.ts';
import type { AdminClient } from '../../src-shared/contract/admin-client.ts';

export type Handler = (argv: string[]) => Promise<number>;
type Options = NonNullable<Parameters<typeof parseArgs>[0]>['options'];

const COMMON = { 'data-dir': { type: 'string' }, json: { type: 'boolean' } } as const;

export function parse<O extends Options>(argv: string[], options: O) {
  const parsed = parseArgs({ args: argv, options: { ...COMMON, ...options }, allowPositionals: true, strict: true });
  const values = parsed.values as Record<string, string | boolean | undefined>;
  const server = () => readServerFile((values['data-dir'] as string | undefined) ?? defaultDataDir());
  /** The running server's admin API (server.json is read when a command first needs it). */
  const admin = (): AdminClient => adminOf(server());
  return { values, positionals: parsed.positionals, admin, json: values.json === true };
}

export function output(json: boolean, data: unknown, human: () => string): number {
  console.log(json ? JSON.stringify(data, null, 2) : human());
  return 0;
}

export function positiveInt(value: string | undefined, what: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new CliError(`${what} must be a positive integer, not "${value ?? ''}"`);
  return n;
}
