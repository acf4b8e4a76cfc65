/**
 * The file store: files and application packages that devices download.
 *
 * Content lives on disk under `<files dir>/{file,package}/<random storage name>` (the files dir:
 * `serve --files-dir`, default `<dataDir>/files`); the rows (tables `files` and `packages`, same
 * columns) carry the metadata. Uploads are streamed to `<files dir>/tmp/` while the sha256 and size are computed, then renamed into place, then
 * the row is inserted: a crash or an error at any step leaves no row pointing at missing or
 * partial content, and the temp file is removed.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, readdirSync, statSync, unlinkSync, type WriteStream } from 'node:fs';
import { rename, unlink } from 'node:fs/promises';
import { extname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Sql } from '../db/sql.ts';
import { nowIso } from '../db/database.ts';
import { ApiError, badRequest, itemNotFound } from '../errors.ts';
import { MIME_TYPE_PATTERN } from '../../../src-shared/contract/index.ts';

export type StoredKind = 'file' | 'package';
export const STORED_KINDS: readonly StoredKind[] = ['file', 'package'];

/** A stored file or package as the backend handles it (camelCase); the admin wire shape is the contract's StoredItem. */
export interface StoredRecord {
  id: number;
  kind: StoredKind;
  entityId: number;
  name: string;
  size: number;
  mimeType: string;
  sha256: string;
  /** File name under `<files dir>/<kind>/`; never derived from `name`. */
  storageName: string;
  createdAt: string;
  updatedAt: string;
  /** Files: the version devices are told in deployFile (bumped by nothing yet: 1). */
  version: number;
  /** Packages: what a device needs to install it (read from an APK's manifest, or given by the admin). */
  packageInfo: PackageInfo;
}

export interface PackageInfo {
  packageName: string | null;
  versionCode: number | null;
  versionName: string | null;
  label: string | null;
  /** A data: URL (PNG) read from the APK. */
  icon: string | null;
}

export interface AddInput {
  /** A file name; a path is accepted and reduced to its last segment. */
  name: string;
  /** Guessed from the name's extension when absent. */
  mimeType?: string | undefined;
  /** Defaults to the root entity (1). */
  entityId?: number | undefined;
  /**
   * Packages: reads the content once it is on disk (at `path`, not yet stored or listed) and says
   * what it is. Throwing refuses the upload: nothing is stored, no row, no event.
   */
  describe?: ((path: string, upload: { name: string; mimeType: string }) => Promise<Partial<PackageInfo>>) | undefined;
}

export type FileStoreAction = 'added' | 'removed' | 'updated';
/**
 * Told of each change inside its transaction (`before`: the item as it was, for an update): it
 * records the change. If it throws, the change is undone and the error is the operation's.
 */
export type FileStoreListener = (action: FileStoreAction, kind: StoredKind, item: StoredRecord, before?: StoredRecord) => unknown;

export interface FileStoreOptions {
  /**
   * The store's folder (serve --files-dir): one every node of a database mounts, such as NFS;
   * default DATA_DIR/files. Several nodes write into it at once safely: each upload goes to a
   * temp file of its own (a random name, created exclusively) beside the content, renamed into
   * place whole; the rows say what is stored, and the store keeps nothing in memory.
   */
  filesDir?: string;
  /** Largest accepted upload in bytes (default 4 GiB). */
  maxSize?: number;
  /** Runs a change in a transaction (the backend's unit of work, so events are emitted after the commit); default: the connection's own. */
  transact?: <T>(work: () => Promise<T>) => Promise<T>;
}

export interface FileStore {
  /** Largest accepted upload in bytes. */
  readonly maxSize: number;
  /**
   * Streams `source` into the store. Rejects with ApiError 400 (bad name, mime type or entity;
   * interrupted body), 413 (too large) or 507 (disk full); nothing is left behind then.
   * On failure `source` may be partly read and is not destroyed: it belongs to the caller (an
   * HTTP route answers and closes the connection; destroying a request would drop the answer).
   */
  add(kind: StoredKind, input: AddInput, source: Readable): Promise<StoredRecord>;
  /** Every item of the kind, by id; only those of `entityId` when given. */
  list(kind: StoredKind, entityId?: number): Promise<StoredRecord[]>;
  get(kind: StoredKind, id: number): Promise<StoredRecord | undefined>;
  /** Deletes the row and then the content; undefined when there was no such item. */
  remove(kind: StoredKind, id: number): Promise<StoredRecord | undefined>;
  /**
   * Absolute path of the item's content, always inside the store's folder: a storage name that
   * is not a plain file name (a row restored from a crafted backup, say) is ApiError 404, never a
   * path elsewhere. The content may still be a link: readers open it with O_NOFOLLOW.
   */
  pathOf(item: StoredRecord): string;
  /** Sets a package's install metadata (fields left undefined keep their value). */
  setPackageInfo(id: number, info: Partial<PackageInfo>): Promise<StoredRecord | undefined>;
  /** setPackageInfo as an admin's change: told to the listener with the item before, in one transaction. */
  updatePackageInfo(id: number, info: Partial<PackageInfo>): Promise<StoredRecord | undefined>;
}

export const DEFAULT_MAX_UPLOAD_SIZE = 4 * 1024 ** 3;
export const MAX_NAME_BYTES = 255;

/** Temp files older than this are leftovers of a crash (an active upload keeps touching its file). */
const STALE_TEMP_MS = 24 * 60 * 60 * 1000;
/** Content without a row, older than this, is a leftover of a crash between rename and insert. */
const STALE_ORPHAN_MS = 60 * 60 * 1000;

const TABLES: Record<StoredKind, string> = { file: 'files', package: 'packages' };

/**
 * A storage name is one plain file name (uploads get 32 hex digits): no separator, no `..`, no
 * leading dot. backup.ts holds the same rule for the backups it reads.
 */
export function isStorageName(name: string): boolean {
  return /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}$/.test(name);
}

const MIME_TYPES: Record<string, string> = {
  '.apk': 'application/vnd.android.package-archive',
  '.ipa': 'application/x-itunes-ipa',
  '.mobileconfig': 'application/x-apple-aspen-config',
  '.pdf': 'application/pdf',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
  '.xml': 'application/xml',
  '.txt': 'text/plain',
  '.csv': 'text/csv',
  '.html': 'text/html',
  '.htm': 'text/html',
  '.zip': 'application/zip',
  '.gz': 'application/gzip',
  '.tar': 'application/x-tar',
  '.mp4': 'video/mp4',
  '.mp3': 'audio/mpeg',
  '.pem': 'application/x-pem-file',
  '.crt': 'application/x-x509-ca-cert',
  '.cer': 'application/pkix-cert',
};

/** The mime type for a file name's extension; application/octet-stream when unknown. */
export function guessMimeType(name: string): string {
  return MIME_TYPES[extname(name).toLowerCase()] ?? 'application/octet-stream';
}

// RFC 6838 restricted-name for type and subtype; no parameters (the contract's rule, which uploads are validated by).
const MIME_RE = new RegExp(MIME_TYPE_PATTERN);

/** Validates a mime type (`type/subtype`, no parameters) and lower-cases it; ApiError 400 otherwise. */
export function normalizeMimeType(mimeType: string): string {
  const trimmed = mimeType.trim();
  if (!MIME_RE.test(trimmed)) {
    throw badRequest(`invalid mime type "${trimmed.slice(0, 100)}": expected type/subtype, e.g. application/pdf`);
  }
  return trimmed.toLowerCase();
}

// Control characters, lone surrogates, line/paragraph separators and bidi overrides (which can
// disguise an extension: "invoice\u202Efdp.apk").
const FORBIDDEN_NAME_CHARS = /[\p{Cc}\p{Cs}\p{Zl}\p{Zp}\u200E\u200F\u202A-\u202E\u2066-\u2069]/u;

/**
 * Reduces a given name or path to a safe file name: directories (either separator) are stripped,
 * the rest is NFC-normalized and trimmed. ApiError 400 with a clear message when nothing usable
 * remains, when it contains control or bidi characters, or when it is longer than 255 UTF-8 bytes.
 */
export function normalizeFileName(raw: string): string {
  if (typeof raw !== 'string') throw badRequest('file name is missing');
  const lastSegment = raw.split(/[\\/]/).pop() ?? '';
  const name = lastSegment.normalize('NFC').trim();
  if (name === '') throw badRequest('file name is empty (a name without directories is required, e.g. app.apk)');
  if (name === '.' || name === '..') throw badRequest(`"${name}" is not a valid file name`);
  if (FORBIDDEN_NAME_CHARS.test(name)) {
    throw badRequest('file name contains control, line-break or text-direction characters');
  }
  if (Buffer.byteLength(name, 'utf8') > MAX_NAME_BYTES) {
    throw badRequest(`file name is too long (at most ${MAX_NAME_BYTES} bytes in UTF-8)`);
  }
  return name;
}

interface Row {
  id: number;
  entity_id: number;
  name: string;
  size: number;
  mime_type: string;
  sha256: string;
  storage_name: string;
  created_at: string;
  updated_at: string;
  version?: number;
  package_name?: string | null;
  version_code?: number | null;
  version_name?: string | null;
  label?: string | null;
  icon?: string | null;
}

function toItem(kind: StoredKind, row: Row): StoredRecord {
  return {
    id: row.id,
    kind,
    entityId: row.entity_id,
    name: row.name,
    size: row.size,
    mimeType: row.mime_type,
    sha256: row.sha256,
    storageName: row.storage_name,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    version: row.version ?? 1,
    packageInfo: {
      packageName: row.package_name ?? null,
      versionCode: row.version_code ?? null,
      versionName: row.version_name ?? null,
      label: row.label ?? null,
      icon: row.icon ?? null,
    },
  };
}

function statementsOf(kind: StoredKind) {
  const table = TABLES[kind];
  return {
    insert: `INSERT INTO ${table} (entity_id, name, size, mime_type, sha256, storage_name, created_at, updated_at)
       VALUES (@entity_id, @name, @size, @mime_type, @sha256, @storage_name, @created_at, @updated_at)
       RETURNING *`,
    list: `SELECT * FROM ${table} ORDER BY id`,
    listByEntity: `SELECT * FROM ${table} WHERE entity_id = ? ORDER BY id`,
    get: `SELECT * FROM ${table} WHERE id = ?`,
    remove: `DELETE FROM ${table} WHERE id = ? RETURNING *`,
    storageNames: `SELECT storage_name FROM ${table}`,
  };
}

function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string'
    ? error.code
    : undefined;
}

function waitClosed(stream: WriteStream): Promise<void> {
  if (stream.closed) return Promise.resolve();
  return new Promise((resolve) => {
    stream.once('close', () => resolve());
    if (!stream.destroyed) stream.destroy();
  });
}

async function unlinkQuietly(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch {
    // Already gone, or (Windows) still busy: the startup sweep removes leftovers.
  }
}

/** Removes leftovers of crashed uploads; best effort, never throws. */
function sweep(dir: string, olderThanMs: number, keep: (name: string) => boolean): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  const limit = Date.now() - olderThanMs;
  for (const name of names) {
    if (keep(name)) continue;
    try {
      const path = join(dir, name);
      const stats = statSync(path);
      if (stats.isFile() && stats.mtimeMs < limit) unlinkSync(path);
    } catch {
      // ignore: another process may be handling it
    }
  }
}

/** Opens the store over its folder and its tables; leftovers of crashed uploads are swept first. */
export async function createFileStore(
  sql: Sql,
  dataDir: string,
  onChange?: FileStoreListener,
  options: FileStoreOptions = {},
): Promise<FileStore> {
  const root = options.filesDir ?? join(dataDir, 'files');
  const tmpDir = join(root, 'tmp');
  const dirs: Record<StoredKind, string> = { file: join(root, 'file'), package: join(root, 'package') };
  for (const dir of [tmpDir, dirs.file, dirs.package]) mkdirSync(dir, { recursive: true, mode: 0o700 });

  const maxSize = options.maxSize ?? DEFAULT_MAX_UPLOAD_SIZE;
  const statements = { file: statementsOf('file'), package: statementsOf('package') };
  const setPackageInfoStatement = `UPDATE packages SET package_name = ?, version_code = ?, version_name = ?, label = ?, icon = ?, updated_at = ? WHERE id = ? RETURNING *`;
  const entityExists = 'SELECT 1 AS one FROM entities WHERE id = ?';

  sweep(tmpDir, STALE_TEMP_MS, () => false);
  for (const kind of STORED_KINDS) {
    const known = new Set(
      (await sql.all<{ storage_name: string }>(statements[kind].storageNames)).map((row) => row.storage_name),
    );
    sweep(dirs[kind], STALE_ORPHAN_MS, (name) => known.has(name));
  }

  const transact = options.transact ?? (<T>(work: () => Promise<T>): Promise<T> => sql.transaction(work));

  function checkKind(kind: StoredKind): void {
    if (!STORED_KINDS.includes(kind)) throw new TypeError(`unknown stored kind: ${String(kind)}`);
  }

  async function add(kind: StoredKind, input: AddInput, source: Readable): Promise<StoredRecord> {
    checkKind(kind);
    // Everything that can be refused is checked before a byte is read.
    const name = normalizeFileName(input.name);
    const mimeType =
      input.mimeType === undefined || input.mimeType.trim() === '' ? guessMimeType(name) : normalizeMimeType(input.mimeType);
    const entityId = input.entityId ?? 1;
    if (!Number.isSafeInteger(entityId) || !(await sql.get(entityExists, [entityId]))) {
      throw badRequest(`entity ${String(entityId)} does not exist`);
    }

    const storageName = randomBytes(16).toString('hex');
    const tmpPath = join(tmpDir, `${storageName}.part`);
    const finalPath = join(dirs[kind], storageName);
    const hash = createHash('sha256');
    let size = 0;

    const out = createWriteStream(tmpPath, { flags: 'wx', mode: 0o600, flush: true });
    async function* measured(): AsyncGenerator<Buffer> {
      // destroyOnReturn: false — when we stop early (too large) the source is left to the
      // caller: destroying an HTTP request would kill the socket before the 413 can be sent.
      const chunks = source.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer | string>;
      try {
        for await (const chunk of chunks) {
          const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
          size += buffer.length;
          if (size > maxSize) {
            throw new ApiError(413, 'ERROR_PAYLOAD_TOO_LARGE', `upload is larger than the limit of ${maxSize} bytes`);
          }
          hash.update(buffer);
          yield buffer;
        }
      } catch (error) {
        if (error instanceof ApiError) throw error;
        // The body ended early: the client went away or the connection broke.
        const interrupted = new ApiError(400, 'ERROR_UPLOAD_INCOMPLETE', 'the upload was interrupted before the end of its body');
        interrupted.cause = error;
        throw interrupted;
      }
    }
    try {
      await pipeline(measured, out);
    } catch (error) {
      await waitClosed(out);
      await unlinkQuietly(tmpPath);
      throw translateWriteError(error);
    }

    let packageInfo: Partial<PackageInfo> | undefined;
    if (input.describe) {
      try {
        packageInfo = await input.describe(tmpPath, { name, mimeType });
      } catch (error) {
        await unlinkQuietly(tmpPath);
        throw error;
      }
    }

    try {
      await rename(tmpPath, finalPath);
    } catch (error) {
      await unlinkQuietly(tmpPath);
      throw translateWriteError(error);
    }

    let item: StoredRecord;
    try {
      // The row and its description land together (a refused description never leaves a row).
      item = await transact(async () => {
        const now = nowIso();
        const row = await sql.get<Row>(statements[kind].insert, {
          entity_id: entityId,
          name,
          size,
          mime_type: mimeType,
          sha256: hash.digest('hex'),
          storage_name: storageName,
          created_at: now,
          updated_at: now,
        });
        if (!row) throw new Error('insert returned no row');
        const added = toItem(kind, row);
        const info = kind === 'package' ? packageInfo : undefined;
        const described = info !== undefined && Object.values(info).some((value) => value !== undefined);
        const stored = described ? ((await setPackageInfo(added.id, info)) ?? added) : added;
        await onChange?.('added', kind, stored);
        return stored;
      });
    } catch (error) {
      await unlinkQuietly(finalPath);
      throw error;
    }
    return item;
  }

  async function list(kind: StoredKind, entityId?: number): Promise<StoredRecord[]> {
    checkKind(kind);
    const rows =
      entityId === undefined
        ? await sql.all<Row>(statements[kind].list)
        : await sql.all<Row>(statements[kind].listByEntity, [entityId]);
    return rows.map((row) => toItem(kind, row));
  }

  async function get(kind: StoredKind, id: number): Promise<StoredRecord | undefined> {
    checkKind(kind);
    const row = await sql.get<Row>(statements[kind].get, [id]);
    return row ? toItem(kind, row) : undefined;
  }

  async function remove(kind: StoredKind, id: number): Promise<StoredRecord | undefined> {
    checkKind(kind);
    const item = await transact(async () => {
      const row = await sql.get<Row>(statements[kind].remove, [id]);
      if (!row) return undefined;
      const removed = toItem(kind, row);
      await onChange?.('removed', kind, removed);
      return removed;
    });
    if (!item) return undefined;
    // A download in progress keeps its open descriptor: POSIX unlink, and libuv opens files with
    // FILE_SHARE_DELETE on Windows, so it finishes reading the content it started with.
    if (isStorageName(item.storageName)) await unlinkQuietly(pathOf(item));
    return item;
  }

  function pathOf(item: StoredRecord): string {
    if (!isStorageName(item.storageName)) throw itemNotFound();
    return join(dirs[item.kind], item.storageName);
  }

  async function setPackageInfo(id: number, info: Partial<PackageInfo>): Promise<StoredRecord | undefined> {
    const current = await get('package', id);
    if (!current) return undefined;
    const next = {
      ...current.packageInfo,
      ...Object.fromEntries(Object.entries(info).filter(([, value]) => value !== undefined)),
    };
    const row = await sql.get<Row>(setPackageInfoStatement, [
      next.packageName ?? null,
      next.versionCode ?? null,
      next.versionName ?? null,
      next.label ?? null,
      next.icon ?? null,
      nowIso(),
      id,
    ]);
    return row ? toItem('package', row) : undefined;
  }

  /** An admin's change of a package's description: recorded (`updated`, with the item before) in its transaction. */
  async function updatePackageInfo(id: number, info: Partial<PackageInfo>): Promise<StoredRecord | undefined> {
    return transact(async () => {
      const before = await get('package', id);
      const updated = await setPackageInfo(id, info);
      if (before && updated) await onChange?.('updated', 'package', updated, before);
      return updated;
    });
  }

  return { maxSize, add, list, get, remove, pathOf, setPackageInfo, updatePackageInfo };
}

function translateWriteError(error: unknown): unknown {
  if (error instanceof ApiError) return error;
  const code = errorCode(error);
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new ApiError(507, 'ERROR_INSUFFICIENT_STORAGE', 'not enough disk space to store the upload');
  }
  return error;
}
