// Download of a file or package with the agent's api_token, then verification of the server's
// byte ranges against the whole download. Content is streamed to a temp file and hashed on the
// way, never held in memory (packages can be hundreds of MiB).
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { copyFile, mkdir, mkdtemp, open, rename, rm, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { AgentApiError, describeError } from './api-client.ts';
import type { AgentApiClient, ContentKind } from './api-client.ts';
import type { Dialect } from './dialect.ts';
import { startAgentSession } from './enroll.ts';
import type { StepLog } from './enroll.ts';

export interface DownloadTarget {
  kind: ContentKind;
  id: number;
}

/** JSON metadata served without `Accept: application/octet-stream` (DESIGN.md "Downloads"). */
export interface ContentMetadata {
  id?: number;
  name?: string;
  filesize?: number;
  mime_type?: string;
  sha256?: string;
  date_mod?: string;
  [key: string]: unknown;
}

export interface CheckResult {
  /** e.g. "whole", "metadata", "range bytes=0-99". */
  name: string;
  status: 'ok' | 'failed' | 'skipped';
  detail: string;
}

export interface DownloadSummary {
  /** "file:7" */
  target: string;
  kind: ContentKind;
  id: number;
  size: number;
  sha256: string;
  /** From Content-disposition, when given. */
  fileName?: string;
  metadata?: ContentMetadata;
  /** The Range header values that were checked. */
  rangesChecked: string[];
  checks: CheckResult[];
  /** True when no check failed. */
  ok: boolean;
  /** Where the content was kept (options.saveTo); otherwise the temp copy is deleted. */
  savedTo?: string;
}

export interface DownloadOptions {
  backendUrl: string;
  /** The agent's api_token: a fresh session is opened with it (spec §5). */
  apiToken: string;
  /** { kind, id } or "file:ID" / "package:ID". */
  target: DownloadTarget | string;
  /** Range header values to check; default defaultRangeChecks(size). */
  ranges?: string[];
  /** Keep the downloaded content at this path. */
  saveTo?: string;
  /** Per JSON request time limit in ms. */
  timeoutMs?: number;
  /** Resource names (PluginMdmFile or PluginFlyvemdmFile …); default the spec's. */
  dialect?: Dialect;
}

/** Parses "file:ID" or "package:ID". */
export function parseDownloadTarget(text: string): DownloadTarget {
  const match = /^(file|package):([1-9]\d*)$/.exec(text.trim());
  if (!match) throw new Error(`download target must be file:ID or package:ID (positive integer), got ${JSON.stringify(text)}`);
  return { kind: match[1] as ContentKind, id: Number(match[2]) };
}

export type ExpectedRange = { first: number; last: number } | 'unsatisfiable';

/**
 * What a Range header should select from `size` bytes under the spec's rules: `bytes=a-b`
 * inclusive, `bytes=a-` to the end, and `bytes=-n` meaning bytes 0..n (NOT the last n).
 * A last position past the end is clamped; several ranges: the first is served (DESIGN.md).
 */
export function expectedRange(header: string, size: number): ExpectedRange {
  const match = /^bytes=\s*(\d*)\s*-\s*(\d*)\s*(?:,.*)?$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) throw new Error(`not a byte range: ${JSON.stringify(header)}`);
  const first = match[1] === '' ? 0 : Number(match[1]);
  const last = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  if (match[1] !== '' && match[2] !== '' && Number(match[2]) < first) {
    throw new Error(`not a byte range (last before first): ${JSON.stringify(header)}`);
  }
  if (first >= size || last < first) return 'unsatisfiable';
  return { first, last };
}

/** A few ranges that exercise each form of the spec, chosen so that wrong semantics show. */
export function defaultRangeChecks(size: number): string[] {
  // An empty file has no byte to range over: the whole download (200, `bytes */0`) covers it.
  if (size === 0) return [];
  const ranges = ['bytes=0-', 'bytes=0-0'];
  const middleFirst = Math.floor(size / 3);
  ranges.push(`bytes=${middleFirst}-${Math.min(size - 1, middleFirst + 4095)}`);
  // 0..n inclusive: n+1 bytes from the start, which a "last n bytes" server would get wrong.
  if (size >= 3) ranges.push(`bytes=-${Math.min(size - 2, 1023)}`);
  ranges.push(`bytes=${size - 1}-`);
  ranges.push(`bytes=${size}-`); // past the end: 416 with Content-Range bytes */size
  return [...new Set(ranges)];
}

/**
 * Opens a session with the api_token, downloads the whole content with one request and no
 * Range (as the reference agent does), compares it with the JSON metadata when the server
 * offers it, then checks each range against the saved bytes. Checks that fail are reported in
 * the summary (ok: false); only failures that prevent checking at all are thrown.
 */
export async function downloadAndVerify(options: DownloadOptions, log: StepLog = () => {}): Promise<DownloadSummary> {
  const target = typeof options.target === 'string' ? parseDownloadTarget(options.target) : options.target;
  const label = `${target.kind}:${target.id}`;
  for (const range of options.ranges ?? []) expectedRange(range, 1); // reject bad syntax before any request
  const client = await startAgentSession(options.backendUrl, options.apiToken, {
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.dialect === undefined ? {} : { dialect: options.dialect }),
  });
  log(`download ${label} … session ok (api_token)`);

  const directory = await mkdtemp(join(tmpdir(), 'mdm-device-'));
  const tempPath = join(directory, 'content.bin');
  const checks: CheckResult[] = [];
  const record = (check: CheckResult): void => {
    checks.push(check);
    log(`  ${check.name} … ${check.status === 'failed' ? 'FAILED' : check.status} (${check.detail})`);
  };

  try {
    const whole = await downloadWhole(client, target, tempPath);
    record(whole.check);

    const metadata = await fetchMetadata(client, target);
    if (metadata.metadata === undefined) record({ name: 'metadata', status: 'skipped', detail: metadata.reason });
    else record(compareMetadata(metadata.metadata, whole.size, whole.sha256));

    const ranges = options.ranges ?? defaultRangeChecks(whole.size);
    const file = await open(tempPath, 'r');
    try {
      for (const range of ranges) record(await checkRange(client, target, range, whole.size, file));
    } finally {
      await file.close();
    }

    let savedTo: string | undefined;
    if (options.saveTo !== undefined) {
      await moveFile(tempPath, options.saveTo);
      savedTo = options.saveTo;
      log(`  saved … ok (${savedTo})`);
    }

    const summary: DownloadSummary = {
      target: label,
      kind: target.kind,
      id: target.id,
      size: whole.size,
      sha256: whole.sha256,
      rangesChecked: ranges,
      checks,
      ok: checks.every((check) => check.status !== 'failed'),
    };
    if (whole.fileName !== undefined) summary.fileName = whole.fileName;
    if (metadata.metadata !== undefined) summary.metadata = metadata.metadata;
    if (savedTo !== undefined) summary.savedTo = savedTo;
    return summary;
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

interface WholeDownload {
  size: number;
  sha256: string;
  fileName?: string;
  check: CheckResult;
}

async function downloadWhole(client: AgentApiClient, target: DownloadTarget, path: string): Promise<WholeDownload> {
  const endpoint = client.contentEndpoint(target.kind, target.id);
  const response = await client.requestContent(target.kind, target.id);
  if (!response.ok) throw await AgentApiError.fromResponse(endpoint, response);

  const hash = createHash('sha256');
  let size = 0;
  try {
    await pipeline(
      bodyStream(response),
      async function* (chunks: AsyncIterable<Buffer>) {
        for await (const chunk of chunks) {
          hash.update(chunk);
          size += chunk.length;
          yield chunk;
        }
      },
      createWriteStream(path),
    );
  } catch (error) {
    throw new AgentApiError(
      endpoint,
      response.status,
      'NETWORK_ERROR',
      `download interrupted after ${size} bytes: ${describeError(error)}`,
    );
  }
  const sha256 = hash.digest('hex');

  const problems: string[] = [];
  if (response.status !== 200) problems.push(`status ${response.status}, expected 200 for the whole content`);
  problems.push(...checkContentHeaders(response, size));
  if (size > 0) problems.push(...checkContentRange(response, `bytes 0-${size - 1}/${size}`));
  const missing = SPEC_HEADERS.filter((name) => !response.headers.has(name));
  if (missing.length > 0) problems.push(`missing headers: ${missing.join(', ')}`);

  const fileName = fileNameOf(response.headers.get('content-disposition'));
  const detail = `${response.status}, ${size} bytes, sha256 ${sha256.slice(0, 12)}…${fileName !== undefined ? `, ${fileName}` : ''}`;
  const result: WholeDownload = {
    size,
    sha256,
    check: {
      name: 'whole',
      status: problems.length > 0 ? 'failed' : 'ok',
      detail: problems.length > 0 ? `${detail}; ${problems.join('; ')}` : detail,
    },
  };
  if (fileName !== undefined) result.fileName = fileName;
  return result;
}

/** Headers of spec §4 that a download must carry (Date and Connection belong to the HTTP layer). */
const SPEC_HEADERS = [
  'accept-ranges',
  'cache-control',
  'content-transfer-encoding',
  'content-disposition',
  'expires',
  'last-modified',
];

function checkContentHeaders(response: Response, bodyLength: number): string[] {
  const problems: string[] = [];
  const contentType = response.headers.get('content-type');
  if (contentType === null || !contentType.toLowerCase().startsWith('application/octet-stream')) {
    problems.push(`Content-Type ${contentType ?? 'missing'}, expected application/octet-stream`);
  }
  const contentLength = response.headers.get('content-length');
  if (contentLength === null) problems.push('Content-Length missing');
  else if (Number(contentLength) !== bodyLength) problems.push(`Content-Length ${contentLength} but ${bodyLength} bytes came`);
  const acceptRanges = response.headers.get('accept-ranges');
  if (acceptRanges !== null && acceptRanges !== 'bytes') problems.push(`Accept-Ranges ${acceptRanges}, expected bytes`);
  return problems;
}

function checkContentRange(response: Response, expected: string): string[] {
  const actual = response.headers.get('content-range');
  if (actual === null) return [`Content-Range missing, expected ${expected}`];
  return actual.trim() === expected ? [] : [`Content-Range ${actual}, expected ${expected}`];
}

async function fetchMetadata(
  client: AgentApiClient,
  target: DownloadTarget,
): Promise<{ metadata?: ContentMetadata; reason: string }> {
  let response: Response;
  try {
    response = await client.requestContent(target.kind, target.id, { accept: 'application/json' });
  } catch (error) {
    return { reason: `not offered: ${describeError(error)}` };
  }
  const contentType = response.headers.get('content-type') ?? '';
  if (!response.ok || !contentType.toLowerCase().includes('json')) {
    // Maybe the bytes again: do not read them.
    await response.body?.cancel().catch(() => {});
    return { reason: `not offered (HTTP ${response.status}, ${contentType || 'no Content-Type'})` };
  }
  try {
    const body: unknown = await response.json();
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      return { reason: 'not offered (JSON is not an object)' };
    return { metadata: body as ContentMetadata, reason: '' };
  } catch (error) {
    return { reason: `not offered (unreadable JSON: ${describeError(error)})` };
  }
}

function compareMetadata(metadata: ContentMetadata, size: number, sha256: string): CheckResult {
  const problems: string[] = [];
  if (typeof metadata.sha256 !== 'string') problems.push('no sha256 in metadata');
  else if (metadata.sha256.toLowerCase() !== sha256)
    problems.push(`sha256 ${metadata.sha256} but the download hashes to ${sha256}`);
  if (metadata.filesize !== undefined && Number(metadata.filesize) !== size)
    problems.push(`filesize ${String(metadata.filesize)} but ${size} bytes came`);
  if (problems.length > 0) return { name: 'metadata', status: 'failed', detail: problems.join('; ') };
  return {
    name: 'metadata',
    status: 'ok',
    detail: `sha256${metadata.filesize !== undefined ? ' and filesize' : ''} match${typeof metadata.name === 'string' ? `, ${metadata.name}` : ''}`,
  };
}

async function checkRange(
  client: AgentApiClient,
  target: DownloadTarget,
  range: string,
  size: number,
  file: FileHandle,
): Promise<CheckResult> {
  const name = `range ${range}`;
  const expected = expectedRange(range, size);
  let response: Response;
  try {
    response = await client.requestContent(target.kind, target.id, { range });
  } catch (error) {
    return { name, status: 'failed', detail: describeError(error) };
  }

  if (expected === 'unsatisfiable') {
    await response.body?.cancel().catch(() => {});
    const problems: string[] = [];
    if (response.status !== 416) problems.push(`status ${response.status}, expected 416`);
    problems.push(...checkContentRange(response, `bytes */${size}`));
    return problems.length > 0
      ? { name, status: 'failed', detail: problems.join('; ') }
      : { name, status: 'ok', detail: `416, bytes */${size}` };
  }

  const length = expected.last - expected.first + 1;
  const expectedStatus = length === size ? 200 : 206;
  const expectedContentRange = `bytes ${expected.first}-${expected.last}/${size}`;
  if (response.status !== 200 && response.status !== 206) {
    const error = await AgentApiError.fromResponse(client.contentEndpoint(target.kind, target.id), response);
    return {
      name,
      status: 'failed',
      detail: `status ${response.status}, expected ${expectedStatus}: ${error.code} ${error.serverMessage}`,
    };
  }

  const problems: string[] = [];
  if (response.status !== expectedStatus) problems.push(`status ${response.status}, expected ${expectedStatus}`);
  problems.push(...checkContentRange(response, expectedContentRange));
  try {
    const comparison = await compareWithFile(response, file, expected.first, length);
    if (comparison.mismatchAt !== undefined)
      problems.push(`body differs from the whole download at byte ${expected.first + comparison.mismatchAt}`);
    else if (comparison.overflow) problems.push(`body is longer than the expected ${length} bytes`);
    else if (comparison.received !== length) problems.push(`body has ${comparison.received} bytes, expected ${length}`);
    else problems.push(...checkContentHeaders(response, comparison.received));
  } catch (error) {
    problems.push(`body unreadable: ${describeError(error)}`);
  }
  if (problems.length > 0) return { name, status: 'failed', detail: problems.join('; ') };
  return { name, status: 'ok', detail: `${response.status}, ${expectedContentRange}` };
}

/** Streams the body and compares it with the saved file at `first`; stops at the first difference. */
async function compareWithFile(
  response: Response,
  file: FileHandle,
  first: number,
  length: number,
): Promise<{ received: number; mismatchAt?: number; overflow: boolean }> {
  let received = 0;
  for await (const chunk of bodyStream(response) as AsyncIterable<Buffer>) {
    const wanted = Math.min(chunk.length, length - received);
    const saved = Buffer.alloc(wanted);
    if (wanted > 0) await file.read(saved, 0, wanted, first + received);
    const part = chunk.subarray(0, wanted);
    if (!part.equals(saved)) {
      let index = 0;
      while (index < wanted && part[index] === saved[index]) index += 1;
      return { received: received + index, mismatchAt: received + index, overflow: false };
    }
    received += wanted;
    // Leaving the loop destroys the stream, so a server sending too much is not read to its end.
    if (wanted < chunk.length) return { received, overflow: true };
  }
  return { received, overflow: false };
}

function bodyStream(response: Response): Readable {
  if (response.body === null) return Readable.from([]);
  return Readable.fromWeb(response.body as NodeReadableStream<Uint8Array>);
}

/** filename*=UTF-8''… wins over filename=…, as in RFC 6266. */
export function fileNameOf(disposition: string | null): string | undefined {
  if (disposition === null) return undefined;
  const extended = /filename\*\s*=\s*([^']*)'[^']*'([^;]+)/i.exec(disposition);
  if (extended?.[2] !== undefined) {
    try {
      return decodeURIComponent(extended[2].trim());
    } catch {
      // fall through to the plain parameter
    }
  }
  const plain = /filename\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]+))/i.exec(disposition);
  if (plain === null) return undefined;
  return plain[1] !== undefined ? plain[1].replace(/\\(.)/g, '$1') : plain[2]?.trim();
}

async function moveFile(from: string, to: string): Promise<void> {
  await mkdir(dirname(to), { recursive: true });
  try {
    await rename(from, to);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
    await copyFile(from, to); // temp dir on another file system
    await unlink(from);
  }
}
