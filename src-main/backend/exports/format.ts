// One streamed exporter for every list (issue 25, item 3): rows read by keyset pages (never OFFSET:
// each page starts after the last key of the one before, so page 200 costs what page 1 did), and
// written as CSV or JSON lines a page at a time. Memory holds one page of rows and its text,
// whatever the export's length; the first page goes out as soon as it is read.
import type { ExportFormat } from '../../../src-shared/contract/index.ts';

/** One column of an export: its header and its value in a row (a number, text, boolean, null, or JSON for an object). */
export interface Column<T> {
  name: string;
  value: (row: T) => unknown;
  /** Its CSV cell, when it differs from the value (a list of drives read as one line of text). */
  csv?: (row: T) => unknown;
}

export interface ExportSpec<T> {
  columns: readonly Column<T>[];
  /** A JSON line's object; by default the columns' values by name (CSV and JSON lines then hold the same fields). */
  json?: (row: T) => unknown;
}

/** Rows a page holds by default. */
export const PAGE_SIZE = 500;

/**
 * One CSV cell (RFC 4180): quoted when it holds a comma, a quote or a line break, quotes doubled.
 * A text starting with = + - @ (or a tab or carriage return) is prefixed with ' so that a
 * spreadsheet shows it rather than running it as a formula (CSV injection).
 */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  let text = typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (typeof value !== 'number' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/**
 * Every row, a page at a time: `read(after)` returns the page of at most `size` rows that follows
 * the key `after` (undefined: the first page), in key order; the next page starts after the last
 * row's key. Stops at a page shorter than `size`.
 */
export async function* keysetPages<T, K>(
  read: (after: K | undefined, size: number) => readonly T[] | Promise<readonly T[]>,
  keyOf: (row: T) => K,
  size = PAGE_SIZE,
): AsyncGenerator<readonly T[]> {
  let after: K | undefined;
  for (;;) {
    const page = await read(after, size);
    if (page.length > 0) yield page;
    if (page.length < size) return;
    after = keyOf(page.at(-1)!);
  }
}

/** The rows of each page that `keep` accepts (a page may come out empty: it is skipped). */
export async function* filterPages<T>(
  pages: AsyncIterable<readonly T[]>,
  keep: (row: T) => boolean | Promise<boolean>,
): AsyncGenerator<readonly T[]> {
  for await (const page of pages) {
    const keeps = await Promise.all(page.map(async (row) => keep(row)));
    const kept = page.filter((_row, index) => keeps[index]);
    if (kept.length > 0) yield kept;
  }
}

/** Each page's rows turned into others (a page's extra reads done once for the page). */
export async function* mapPages<T, U>(
  pages: AsyncIterable<readonly T[]>,
  map: (page: readonly T[]) => readonly U[] | Promise<readonly U[]>,
): AsyncGenerator<readonly U[]> {
  for await (const page of pages) {
    const mapped = await map(page);
    if (mapped.length > 0) yield mapped;
  }
}

/**
 * The export's text, one chunk per page: for CSV, the header line first (sent before any row is
 * read, so a download starts at once, even when nothing matches); then the rows, each line ending
 * with CRLF (CSV) or LF (JSON lines).
 */
export async function* exportChunks<T>(
  pages: AsyncIterable<readonly T[]>,
  format: ExportFormat,
  spec: ExportSpec<T>,
): AsyncGenerator<string> {
  const { columns } = spec;
  if (format === 'csv') {
    yield `${columns.map((column) => csvCell(column.name)).join(',')}\r\n`;
    for await (const page of pages) {
      let text = '';
      for (const row of page) text += `${columns.map((column) => csvCell((column.csv ?? column.value)(row))).join(',')}\r\n`;
      yield text;
    }
    return;
  }
  const json = spec.json ?? ((row: T) => Object.fromEntries(columns.map((column) => [column.name, column.value(row) ?? null])));
  for await (const page of pages) {
    let text = '';
    for (const row of page) text += `${JSON.stringify(json(row))}\n`;
    yield text;
  }
}

/** The Content-Type of each format. */
export const EXPORT_CONTENT_TYPES: Record<ExportFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  jsonl: 'application/x-ndjson; charset=utf-8',
};
