/**
 * GET {base_url}/PluginMdmFile/<id> and PluginMdmPackage/<id>: the bytes (whole or a range) when
 * the device asks for `Accept: application/octet-stream`, JSON metadata otherwise.
 *
 * Range rules (spec section 4, on top of the maintained `range-parser`):
 * - `bytes=0-` is the whole content; `bytes=a-b` is a..b inclusive; `bytes=a-` is a..end.
 * - `bytes=-N` MEANS bytes 0..N — the spec overrides RFC 9110's "last N bytes" here, so every
 *   suffix form is rewritten to `0-N` before parsing.
 * - Several ranges: the first one, as sent, decides alone (served, or 416 if it selects nothing);
 *   the others are not looked at. No multipart answers.
 * - A last byte beyond the end is clamped to the end.
 * - The whole content (no Range, or a range covering all of it) is a 200 with
 *   `Content-Range: bytes 0-<size-1>/<size>`; a true part is a 206.
 * - A well-formed byte range that selects nothing (first byte at or past the end, or last < first)
 *   is a 416 with `Content-Range: bytes *\/<size>`.
 * - A Range header that cannot be parsed (no `=`, non-digits, empty first range) or that uses
 *   another unit than bytes is IGNORED and the whole content is sent with 200, as RFC 9110
 *   section 14.2 asks: the device gets a usable answer, and the 200 says it is the whole content.
 * - An empty file is a 200 with Content-Length 0 and `Content-Range: bytes *\/0`, without a Range
 *   or with one starting at 0 (`bytes=0-`, `bytes=-N`: "the whole content" in the spec's words);
 *   a range starting further is a 416 `bytes *\/0`, as it is for any file.
 */
import { lstat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import rangeParser from 'range-parser';
import { ApiError, itemNotFound } from '../errors.ts';
import { readChunk, writeFileRange, type Chunk, type DownloadLimits } from './download-limits.ts';
import { NotARegularFile } from './open-files.ts';
import type { StoredRecord } from './store.ts';

export type RangeResolution =
  /** The whole content; `end` is size - 1 (so -1 for an empty file). */
  | { status: 200; start: number; end: number }
  /** A true part, `start`..`end` inclusive. */
  | { status: 206; start: number; end: number }
  | { status: 416 };

/**
 * Applies the spec's reading of the suffix form: every `-N` range spec becomes `0-N`. Blank list
 * elements are dropped (RFC 9110 lists allow them). Only the part after `=` is touched.
 */
export function rewriteSuffixRanges(specs: string): string {
  return specs
    .split(',')
    .filter((spec) => spec.trim() !== '')
    .map((spec) => {
      const suffix = /^\s*-\s*(\d+)\s*$/.exec(spec);
      return suffix ? `0-${suffix[1]}` : spec.trim();
    })
    .join(',');
}

/** The first range spec of a `bytes=` Range header, suffix form rewritten; undefined to ignore it. */
export function firstByteRangeSpec(header: string): string | undefined {
  const equals = header.indexOf('=');
  if (equals === -1) return undefined;
  if (header.slice(0, equals).trim().toLowerCase() !== 'bytes') return undefined;
  const first = rewriteSuffixRanges(header.slice(equals + 1)).split(',')[0];
  return first === '' ? undefined : first;
}

/** Decides what a Range header selects from content of `size` bytes (rules at the top). */
export function resolveRange(size: number, header: string | undefined): RangeResolution {
  const whole = { status: 200, start: 0, end: size - 1 } as const;
  if (header === undefined) return whole;
  const spec = firstByteRangeSpec(header);
  if (spec === undefined) return whole; // not a byte range: ignored

  if (size === 0) {
    // Nothing to select. Parsed against an unbounded size only to tell the forms apart: one
    // starting at 0 asks for the whole (empty) content; one starting further cannot be served.
    const parsed = rangeParser(Number.MAX_SAFE_INTEGER, `bytes=${spec}`);
    if (parsed === -2) return whole; // unparseable: ignored
    if (parsed === -1 || parsed[0]?.start !== 0) return { status: 416 };
    return whole;
  }

  const parsed = rangeParser(size, `bytes=${spec}`);
  if (parsed === -2) return whole; // unparseable: ignored
  // range-parser clamps the last byte to the end and drops a range it cannot satisfy (-1)
  const range = parsed === -1 ? undefined : parsed[0];
  if (!range) return { status: 416 };
  if (range.start === 0 && range.end === size - 1) return whole;
  return { status: 206, start: range.start, end: range.end };
}

/** `Content-Range` for a 200/206 answer; `bytes *\/0` for empty content. */
export function contentRange(range: { start: number; end: number }, size: number): string {
  return size === 0 ? 'bytes */0' : `bytes ${range.start}-${range.end}/${size}`;
}

/** An HTTP date with a numeric zone: `Sat, 21 Nov 2026 15:34:00 +0000`. */
export function httpDateNumericZone(date: Date): string {
  return date.toUTCString().replace(/GMT$/, '+0000');
}

// RFC 8187 attr-char: ALPHA / DIGIT / "!" / "#" / "$" / "&" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~"
function encodeRfc8187(value: string): string {
  return encodeURIComponent(value).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/**
 * `attachment; filename="<name>"`, plus `filename*=UTF-8''<percent-encoded>` when the name is not
 * plain printable ASCII. The quoted form escapes `"` and `\` and replaces anything outside
 * printable ASCII by `_`, so no name can end the value or inject a header.
 */
export function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]/gu, '_');
  const quoted = ascii.replace(/["\\]/g, (c) => `\\${c}`);
  let value = `attachment; filename="${quoted}"`;
  if (ascii !== name) value += `; filename*=UTF-8''${encodeRfc8187(name)}`;
  return value;
}

/** GLPI-style `YYYY-MM-DD HH:MM:SS`, in UTC. */
export function glpiDate(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toISOString().slice(0, 19).replace('T', ' ');
}

export interface DownloadMetadata {
  id: number;
  name: string;
  filesize: number;
  mime_type: string;
  sha256: string;
  date_mod: string;
  /**
   * Packages only: the name the device saves the download under. The Flyve agent (`develop`) reads
   * `package_name` whenever `dl_filename` is present and throws on a file; files go by `name`.
   */
  dl_filename?: string;
  /** Files: the version deployFile carries. */
  version?: number;
  /** Packages: what the reference agent reads before installing. */
  package_name?: string | null;
  version_code?: number | null;
  version_name?: string | null;
}

export function downloadMetadata(item: StoredRecord): DownloadMetadata {
  const common = {
    id: item.id,
    name: item.name,
    filesize: item.size,
    mime_type: item.mimeType,
    sha256: item.sha256,
    date_mod: glpiDate(item.updatedAt),
  };
  if (item.kind === 'file') return { ...common, version: item.version };
  const info = item.packageInfo;
  return {
    ...common,
    dl_filename: item.name,
    package_name: info.packageName,
    version_code: info.versionCode,
    version_name: info.versionName,
  };
}

/** Media types are case-insensitive; anything but exactly this one type gets the metadata. */
export function wantsBytes(accept: string | undefined): boolean {
  return accept !== undefined && accept.trim().toLowerCase() === 'application/octet-stream';
}

export const EXPIRES_IN_THE_PAST = 'Mon, 26 Nov 1962 00:00:00 GMT';

/** The spec's header table, names spelled as it spells them (`Content-disposition` included). */
export function downloadHeaders(
  item: StoredRecord,
  range: { start: number; end: number },
  keepAlive: boolean,
  now: Date = new Date(),
): Array<[string, string]> {
  const length = item.size === 0 ? 0 : range.end - range.start + 1;
  return [
    ['Accept-Ranges', 'bytes'],
    ['Access-Control-Expose-Headers', 'content-type, content-range, accept-range'],
    ['Cache-Control', 'private, must-revalidate'],
    // keep-alive as the spec shows, unless the client itself asked to close the connection
    ['Connection', keepAlive ? 'keep-alive' : 'close'],
    ['Content-Length', String(length)],
    ['Content-Range', contentRange(range, item.size)],
    ['Content-Transfer-Encoding', 'binary'],
    ['Content-Type', 'application/octet-stream'],
    ['Content-disposition', contentDisposition(item.name)],
    ['Date', now.toUTCString()],
    ['Expires', EXPIRES_IN_THE_PAST],
    ['Last-Modified', httpDateNumericZone(new Date(item.updatedAt))],
  ];
}

/** Content missing on disk (row without file) is answered as an unknown item. */
async function orNotFound<T>(operation: Promise<T>): Promise<T> {
  try {
    return await operation;
  } catch (error) {
    // ENOENT: no content; ELOOP: a link, opened with O_NOFOLLOW (some systems say EMLINK).
    if (
      typeof error === 'object' &&
      error !== null &&
      'code' in error &&
      ['ENOENT', 'ELOOP', 'EMLINK'].includes(String(error.code))
    )
      throw itemNotFound();
    throw error;
  }
}

/**
 * Answers a download request for `item`, whose content is at `filePath`: the metadata as JSON, or
 * the bytes streamed from disk with the spec's headers (see the rules at the top of this file),
 * within `limits` (download-limits.ts). Content missing on disk → ApiError 404; every slot taken
 * → ApiError 503 with Retry-After.
 */
export async function sendStoredItem(
  request: FastifyRequest,
  reply: FastifyReply,
  item: StoredRecord,
  filePath: string,
  limits: DownloadLimits,
  /** Told when a GET answer carrying the content's last byte (the whole, or its final range) was sent in full. */
  onLastByteSent?: () => void,
): Promise<FastifyReply> {
  if (!wantsBytes(request.headers.accept)) {
    return reply.code(200).send(downloadMetadata(item));
  }

  const range = resolveRange(item.size, request.headers.range);
  if (range.status === 416) {
    return reply
      .code(416)
      .header('Accept-Ranges', 'bytes')
      .header('Content-Range', `bytes */${item.size}`)
      .send(['ERROR_RANGE_NOT_SATISFIABLE', `Requested range not satisfiable (content is ${item.size} bytes)`]);
  }

  const connection = request.headers.connection;
  const keepAlive = !(typeof connection === 'string' && /(^|,)\s*close\s*(,|$)/i.test(connection));
  const headers = downloadHeaders(item, range, keepAlive);

  if (item.size === 0 || request.method === 'HEAD') {
    // HEAD (Fastify's automatic HEAD route) gets the headers only; Fastify would read a stream
    // to its end and discard it. An empty stream rather than a Buffer: Fastify would rewrite
    // Content-Length (lower-cased) for a Buffer.
    // Only a regular file in the store is content: a link (to anywhere) is not served.
    if (item.size > 0 && !(await orNotFound(lstat(filePath))).isFile()) throw itemNotFound();
    if (onLastByteSent && request.method === 'GET') reply.raw.once('finish', onLastByteSent);
    // Fastify lower-cases names given to reply.header(); the raw response keeps the spec's spelling.
    for (const [name, value] of headers) reply.raw.setHeader(name, value);
    return reply.code(range.status).send(Readable.from([]));
  }

  // The client may have hung up while this request waited (its session check, the store): its
  // response is closed already, so the 'close' below would never come and nothing would be given back.
  if (responseGone(reply)) return abandon(reply);
  const slot = limits.acquire();
  if (!slot) {
    reply.header('retry-after', '5');
    throw new ApiError(
      503,
      'ERROR_TOO_MANY_DOWNLOADS',
      `${limits.maxConcurrent} downloads are already in progress: try again in a few seconds`,
    );
  }
  // Freed when the response is over, finished or cut short.
  reply.raw.once('close', () => slot.release());
  // Opened before any header is set, so a missing file is a clean 404; once open, a concurrent
  // remove() (unlink) does not disturb this download. Kept open for the next downloads of it
  // (open-files.ts). O_NOFOLLOW: a link put in the store (by hand, or by an old restore) is
  // refused (ELOOP), not followed out of it; and only a regular file is served.
  const file = await orNotFound(limits.files.open(filePath)).catch((error: unknown) => {
    slot.release();
    throw error instanceof NotARegularFile ? itemNotFound() : error;
  });
  // Hung up while the file opened: the slot's 'close' has come and gone; the file is given back here.
  if (responseGone(reply)) {
    file.release();
    slot.release();
    return abandon(reply);
  }
  // The first chunk is read before any header is sent: a read error is still an error answer.
  let first: Chunk;
  try {
    first = readChunk(file, range.start, range.end, limits);
  } catch (error) {
    file.release();
    slot.release();
    throw error;
  }
  if (onLastByteSent && range.end === item.size - 1) {
    // 'finish': every byte was handed to the connection (a download cut short only 'close's).
    reply.raw.once('finish', onLastByteSent);
  }
  // The bytes go to the response itself (download-limits.ts writeFileRange), not through a stream
  // handed to Fastify: the status and the spec's headers, spelled as the spec spells them.
  reply.hijack();
  reply.raw.writeHead(range.status, headers.flat());
  writeFileRange(reply.raw, first, range.end, limits);
  return reply;
}

/** The client is gone: the response was closed (or its socket destroyed) before anything was written. */
function responseGone(reply: FastifyReply): boolean {
  return reply.raw.destroyed || reply.raw.socket?.destroyed === true;
}

/** Ends the handling of a request whose client is gone: nothing to write, nothing for Fastify to send. */
function abandon(reply: FastifyReply): FastifyReply {
  reply.hijack();
  if (!reply.raw.destroyed) reply.raw.destroy();
  return reply;
}
