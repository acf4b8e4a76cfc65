import { CsvError, parseCsv, parseCsvRecords } from './csv.ts';
import { emailProblem } from './email.ts';
import { INVITATION_LIFETIME_DAYS, isWholeNumberIn, normalizeEmail } from '../../src-shared/contract/rules.ts';

/** One invitation to create, as read from pasted text or a CSV file, with what is wrong with it. */
export interface ImportRow {
  /** Where it came from: line of the pasted text or of the file (1-based; the header is a line too). */
  source: number;
  email: string;
  firstname: string | null;
  lastname: string | null;
  fleet: string | null;
  days: number | null;
  problems: string[];
}

export interface ImportResult {
  rows: ImportRow[];
  /** Problems with the input as a whole (e.g. an unknown column); rows may still be empty. */
  errors: string[];
}

const NAME_MAX = 100;

type Column = 'email' | 'firstname' | 'lastname' | 'fleet' | 'days' | 'name';
const HEADER_ALIASES: Record<string, Column> = {
  email: 'email',
  'e-mail': 'email',
  mail: 'email',
  'email address': 'email',
  'e-mail address': 'email',
  firstname: 'firstname',
  'first name': 'firstname',
  first_name: 'firstname',
  'given name': 'firstname',
  givenname: 'firstname',
  lastname: 'lastname',
  'last name': 'lastname',
  last_name: 'lastname',
  surname: 'lastname',
  'family name': 'lastname',
  familyname: 'lastname',
  name: 'name',
  'full name': 'name',
  fleet: 'fleet',
  group: 'fleet',
  days: 'days',
  lifetime: 'days',
  'lifetime (days)': 'days',
};

function headerOf(cells: string[]): (Column | null)[] | null {
  const mapped = cells.map((cell) => HEADER_ALIASES[cell.trim().toLowerCase()] ?? null);
  return mapped.includes('email') ? mapped : null;
}

function empty(source: number): ImportRow {
  return { source, email: '', firstname: null, lastname: null, fleet: null, days: null, problems: [] };
}

function clean(value: string | undefined): string | null {
  const trimmed = value?.trim() ?? '';
  return trimmed === '' ? null : trimmed;
}

function splitName(full: string): { firstname: string | null; lastname: string | null } {
  const parts = full.trim().replace(/^"|"$/g, '').trim().split(/\s+/).filter(Boolean);
  if (parts.length === 0) return { firstname: null, lastname: null };
  if (parts.length === 1) return { firstname: parts[0]!, lastname: null };
  return { firstname: parts.slice(0, -1).join(' '), lastname: parts.at(-1)! };
}

function parseDays(value: string | null, row: ImportRow): number | null {
  if (value === null) return null;
  if (!/^\d+$/.test(value)) {
    row.problems.push(`lifetime "${value}" is not a whole number of days`);
    return null;
  }
  return Number(value);
}

/** Rows of a table with a header naming an email column (other columns are ignored, and said so). */
function fromTable(table: string[][], header: (Column | null)[], lines: number[]): ImportResult {
  const errors: string[] = [];
  const raw = table[0] ?? [];
  const ignored = raw.filter((cell, i) => header[i] === null && cell.trim() !== '');
  if (ignored.length) errors.push(`Ignored column(s): ${ignored.map((c) => `"${c.trim()}"`).join(', ')}`);
  const rows: ImportRow[] = [];
  table.slice(1).forEach((cells, index) => {
    if (cells.every((cell) => cell.trim() === '')) return;
    const row = empty(lines[index + 1]!);
    header.forEach((column, i) => {
      const value = clean(cells[i]);
      if (column === 'email') row.email = value ?? '';
      else if (column === 'firstname') row.firstname = value;
      else if (column === 'lastname') row.lastname = value;
      else if (column === 'fleet') row.fleet = value;
      else if (column === 'days') row.days = parseDays(value, row);
      else if (column === 'name' && value) {
        const { firstname, lastname } = splitName(value);
        row.firstname ??= firstname;
        row.lastname ??= lastname;
      }
    });
    rows.push(row);
  });
  return { rows, errors };
}

/** Rows of a table without a header: email, first name, last name, fleet, days — or any cell with an @. */
function fromHeaderless(table: string[][], lines: number[]): ImportResult {
  const rows: ImportRow[] = [];
  table.forEach((cells, index) => {
    if (cells.every((cell) => cell.trim() === '')) return;
    const row = empty(lines[index]!);
    const at = cells.findIndex((cell) => cell.includes('@'));
    if (at <= 0) {
      const [email, firstname, lastname, fleet, days] = cells;
      row.email = clean(email) ?? '';
      row.firstname = clean(firstname);
      row.lastname = clean(lastname);
      row.fleet = clean(fleet);
      row.days = parseDays(clean(days), row);
    } else {
      row.email = cells[at]!.trim();
      const names = cells
        .slice(0, at)
        .map((c) => c.trim())
        .filter(Boolean);
      if (names.length === 1) Object.assign(row, splitName(names[0]!));
      else if (names.length >= 2) {
        row.firstname = names[0]!;
        row.lastname = names[1]!;
      }
      row.fleet = clean(cells[at + 1]);
    }
    rows.push(row);
  });
  return { rows, errors: [] };
}

/** `Name <email>` or a bare address; anything else is kept as the "email" so validation can say why. */
function fromAddress(token: string, source: number): ImportRow {
  const row = empty(source);
  const angle = /^(.*?)<([^<>]*)>\s*$/.exec(token.trim());
  if (angle) {
    row.email = angle[2]!.trim();
    Object.assign(row, splitName(angle[1]!));
  } else row.email = token.trim().replace(/^mailto:/i, '');
  return row;
}

/**
 * Pasted text: a CSV/TSV with a header; a spreadsheet selection (tabs); or addresses, one or
 * several a line, separated by commas, semicolons or spaces, optionally as `Name <email>`.
 */
export function parsePasted(text: string): ImportResult {
  const source = text.replace(/^\uFEFF/, '');
  if (source.trim() === '') return { rows: [], errors: [] };
  const firstLine = source.split(/\r?\n/).find((line) => line.trim() !== '') ?? '';
  if (firstLine.includes('\t') || headerOfLine(firstLine)) return parseCsvText(source);
  const rows: ImportRow[] = [];
  source.split(/\r\n|\r|\n/).forEach((line, index) => {
    // Split on separators outside <…> and "…" (a display name may contain a comma).
    const tokens: string[] = [];
    let current = '';
    let depth = 0;
    let quoted = false;
    for (const char of line) {
      if (char === '"') quoted = !quoted;
      else if (char === '<' && !quoted) depth++;
      else if (char === '>' && !quoted) depth = Math.max(0, depth - 1);
      if (!quoted && depth === 0 && (char === ',' || char === ';')) {
        tokens.push(current);
        current = '';
      } else current += char;
    }
    tokens.push(current);
    for (const token of tokens) {
      if (token.trim() === '') continue;
      // Several bare addresses separated by spaces.
      if (
        !token.includes('<') &&
        token
          .trim()
          .split(/\s+/)
          .every((word) => word.includes('@'))
      ) {
        for (const word of token.trim().split(/\s+/)) rows.push(fromAddress(word, index + 1));
      } else rows.push(fromAddress(token, index + 1));
    }
  });
  return { rows, errors: [] };
}

function headerOfLine(line: string): boolean {
  try {
    const cells = parseCsv(line)[0] ?? [];
    return headerOf(cells) !== null;
  } catch {
    return false;
  }
}

/** A CSV (or TSV) file's text: with a header row naming an email column, or headerless. */
export function parseCsvText(text: string): ImportResult {
  let table: string[][];
  let lines: number[];
  try {
    const records = parseCsvRecords(text);
    table = records.map((record) => record.fields);
    lines = records.map((record) => record.line);
  } catch (error) {
    return { rows: [], errors: [error instanceof CsvError ? error.message : String(error)] };
  }
  const firstIndex = table.findIndex((cells) => cells.some((cell) => cell.trim() !== ''));
  if (firstIndex === -1) return { rows: [], errors: ['The file is empty'] };
  const header = headerOf(table[firstIndex]!);
  if (header) return fromTable(table.slice(firstIndex), header, lines.slice(firstIndex));
  return fromHeaderless(table, lines);
}

/**
 * Checks every row as the server will (email, duplicates in the batch, names, fleet, lifetime),
 * so the preview shows each problem before anything is sent. Returns new rows.
 */
export function validateRows(rows: ImportRow[], { fleets }: { fleets?: string[] } = {}): ImportRow[] {
  const seen = new Map<string, number>();
  const known = fleets ? new Set(fleets.map((name) => name.toLowerCase())) : null;
  return rows.map((input) => {
    const row = { ...input, problems: input.problems.filter((p) => p.startsWith('lifetime "')) };
    const problem = emailProblem(row.email);
    if (problem) row.problems.push(problem);
    else {
      const email = normalizeEmail(row.email);
      const first = seen.get(email);
      if (first !== undefined) row.problems.push(`${email} is already in line ${first}`);
      else seen.set(email, row.source);
    }
    if ((row.firstname?.length ?? 0) > NAME_MAX) row.problems.push(`first name is longer than ${NAME_MAX} characters`);
    if ((row.lastname?.length ?? 0) > NAME_MAX) row.problems.push(`last name is longer than ${NAME_MAX} characters`);
    if (row.fleet && known && !known.has(row.fleet.toLowerCase())) row.problems.push(`unknown fleet "${row.fleet}"`);
    if (row.days !== null && !isWholeNumberIn(row.days, INVITATION_LIFETIME_DAYS)) {
      row.problems.push(`lifetime must be ${INVITATION_LIFETIME_DAYS.min} to ${INVITATION_LIFETIME_DAYS.max} days`);
    }
    return row;
  });
}

/** Adds the server's `row N: message` errors (N = position in the batch sent, 1-based) to the rows. */
export function mergeServerErrors(rows: ImportRow[], sent: ImportRow[], errors: string[]): ImportRow[] {
  const extra = new Map<ImportRow, string[]>();
  for (const error of errors) {
    const match = /^row (\d+): (.*)$/.exec(error);
    const row = match ? sent[Number(match[1]) - 1] : undefined;
    if (!row) continue;
    extra.set(row, [...(extra.get(row) ?? []), match![2]!]);
  }
  return rows.map((row) => {
    const more = (extra.get(row) ?? []).filter((message) => !row.problems.includes(message));
    return more.length ? { ...row, problems: [...row.problems, ...more] } : row;
  });
}

/** The admin API's body for one row. */
export function toInvitationInput(row: ImportRow, defaults: { fleet?: string | null; days?: number | null } = {}) {
  const fleet = row.fleet ?? defaults.fleet ?? null;
  const days = row.days ?? defaults.days ?? null;
  return {
    email: row.email.trim(),
    ...(row.firstname ? { firstname: row.firstname } : {}),
    ...(row.lastname ? { lastname: row.lastname } : {}),
    ...(fleet ? { fleet } : {}),
    ...(days ? { days } : {}),
  };
}

export function chunk<T>(items: readonly T[], size: number): T[][] {
  if (size < 1) throw new RangeError('chunk size must be at least 1');
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
