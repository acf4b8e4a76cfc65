/**
 * HTTP surface of the file store: the devices' downloads (agent API) and the admin's
 * list/upload/delete (admin API). Thin: schemas validate, the store and `sendStoredItem` do the work.
 */
import { unlessDiskFull } from '../db/disk-full.ts';
import type { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import type {} from '../http/agent-session.ts'; // request.session, config.session
import { Type } from 'typebox';
import { SafeIdParams, type StoredItem as WireItem } from '../../../src-shared/contract/index.ts';
import { adminRoute } from '../http/route-table.ts';
import { ApiError, itemNotFound } from '../errors.ts';
import type { SessionContext } from '../sessions/types.ts';
import { ApkReader, type ApkReaderOptions } from './apk-manifest.ts';
import { checkGiven, describePackage } from './package-info.ts';
import { sendStoredItem } from './download.ts';
import { DownloadLimits } from './download-limits.ts';
import type { FileStore, StoredRecord, StoredKind } from './store.ts';

const KINDS: ReadonlyArray<{ kind: StoredKind; agentPath: string; admin: 'files' | 'packages' }> = [
  { kind: 'file', agentPath: '/PluginMdmFile/:id', admin: 'files' },
  { kind: 'package', agentPath: '/PluginMdmPackage/:id', admin: 'packages' },
];

const DownloadMetadataSchema = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  filesize: Type.Integer(),
  mime_type: Type.String(),
  sha256: Type.String(),
  date_mod: Type.String(),
  dl_filename: Type.Optional(Type.String()),
  version: Type.Optional(Type.Integer()),
  package_name: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  version_code: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
  version_name: Type.Optional(Type.Union([Type.String(), Type.Null()])),
});

/** The wire shape (snake_case) of a stored item. */
export function adminItemView(item: StoredRecord): WireItem {
  return {
    id: item.id,
    entity_id: item.entityId,
    name: item.name,
    size: item.size,
    mime_type: item.mimeType,
    sha256: item.sha256,
    created_at: item.createdAt,
    updated_at: item.updatedAt,
    ...(item.kind === 'file'
      ? { version: item.version }
      : {
          package_name: item.packageInfo.packageName,
          version_code: item.packageInfo.versionCode,
          version_name: item.packageInfo.versionName,
          label: item.packageInfo.label,
          icon: item.packageInfo.icon,
        }),
  };
}

export interface AgentDownloadRoutesOptions {
  store: FileStore;
  /** Throws ApiError (403) when the session may not download at all; runs before validation. */
  mayDownload?: (session: SessionContext) => Promise<void>;
  /** Concurrent downloads and read-ahead of this listener; defaults apply without it. */
  limits?: DownloadLimits;
  /** Told of each request allowed to download (the listener stops capping its connection). */
  onAllowed?: (request: FastifyRequest) => void;
  /** Told when a session was sent an item's content through its last byte (download.ts). */
  onDownloaded?: (session: SessionContext, item: StoredRecord) => Promise<void>;
}

/**
 * GET /PluginMdmFile/:id and /PluginMdmPackage/:id (mount under the agent API prefix).
 * Any valid session of the item's entity may download; another entity's item is a 404, as an
 * unknown id is. The agent app resolves `request.session` on arrival. Errors are thrown as
 * ApiError for the parent's error handler.
 */
export const agentDownloadRoutes: FastifyPluginAsyncTypebox<AgentDownloadRoutesOptions> = async (app, options) => {
  const { store, mayDownload, onAllowed, onDownloaded } = options;
  const limits = options.limits ?? new DownloadLimits();
  // The files kept open between downloads (open-files.ts) close with the app.
  app.addHook('onClose', async () => limits.files.closeAll());

  for (const { kind, agentPath } of KINDS) {
    app.get(
      agentPath,
      {
        // HEAD tells a device the size and headers of a download; the agent app disables HEAD elsewhere.
        exposeHeadRoute: true,
        schema: { params: SafeIdParams, response: { 200: DownloadMetadataSchema } },
        // before validation: a request without a valid session learns nothing, not even a 400
        config: { session: 'on-request' },
        onRequest: async (request) => {
          await mayDownload?.(request.session);
          onAllowed?.(request);
        },
      },
      async (request, reply) => {
        const item = await store.get(kind, request.params.id);
        if (!item || item.entityId !== request.session.entityId) throw itemNotFound();
        const session = request.session;
        return sendStoredItem(request, reply, item, store.pathOf(item), limits, () =>
          unlessDiskFull(() => onDownloaded?.(session, item)),
        );
      },
    );
  }
};

export interface AdminFileRoutesOptions {
  store: FileStore;
  /** Limits of the APK reader (a worker thread; stopped with the app). */
  apkReading?: ApkReaderOptions;
}

/**
 * Admin API: GET /files, /packages (lists); POST /files, /packages (raw body, Content-Type
 * application/octet-stream, query `name` required, `mime_type` and `entity_id` optional) → 201
 * with the item; DELETE /files/:id, /packages/:id → 204, unknown → 404. Admin authentication is
 * the parent scope's; errors are thrown as ApiError for the parent's error handler.
 * A package that is an APK is read (apk-manifest.ts) before it is stored: one whose manifest
 * cannot be read is refused with 422 ERROR_APK_UNREADABLE unless `if_unreadable=keep`.
 */
export const adminFileRoutes: FastifyPluginAsyncTypebox<AdminFileRoutesOptions> = async (app, options) => {
  const { store } = options;
  const apkReader = new ApkReader(options.apkReading);
  app.addHook('onClose', () => apkReader.close());

  // Encapsulated in this plugin: only these routes take raw bodies, streamed, never buffered.
  // (The stream is handed over as is: Fastify's bodyLimit does not apply to a pass-through
  // parser, so the store enforces store.maxSize while it reads.)
  app.removeContentTypeParser('application/octet-stream');
  app.addContentTypeParser('application/octet-stream', (_request, payload, done) => done(null, payload));

  for (const { kind, admin } of KINDS) {
    adminRoute(app, `${admin}.list`, async () => (await store.list(kind)).map(adminItemView));

    adminRoute(
      app,
      `${admin}.upload`,
      async (request, reply) => {
        const {
          name,
          mime_type: mimeType,
          entity_id: entityId,
          package_name: packageName,
          version_code: versionCode,
          version_name: versionName,
          if_unreadable: ifUnreadable,
        } = request.query;
        const given = { packageName, versionCode, versionName, ifUnreadable };
        const body = request.body;
        try {
          if (!isStream(body)) {
            throw new ApiError(
              415,
              'ERROR_UNSUPPORTED_MEDIA_TYPE',
              'send the content as the request body with Content-Type: application/octet-stream',
            );
          }
          const declared = Number(request.headers['content-length']);
          if (Number.isFinite(declared) && declared > store.maxSize) {
            throw new ApiError(413, 'ERROR_PAYLOAD_TOO_LARGE', `upload is larger than the limit of ${store.maxSize} bytes`);
          }
          if (kind === 'package') checkGiven(given);
          const describe =
            kind === 'package'
              ? (path: string, upload: { name: string; mimeType: string }) => describePackage(apkReader, path, upload, given)
              : undefined;
          const item = await store.add(kind, { name, mimeType, entityId, describe }, body);
          return reply.code(201).send(adminItemView(item));
        } catch (error) {
          // Refused before the whole body was read: answer, then close the connection rather
          // than reading (up to gigabytes of) the rest of it.
          if (!request.raw.complete) reply.header('connection', 'close');
          throw error;
        }
      },
      { bodyLimit: store.maxSize },
    );

    adminRoute(app, `${admin}.remove`, async (request, reply) => {
      const removed = await store.remove(kind, request.params.id);
      if (!removed) throw itemNotFound();
      return reply.code(204).send();
    });
  }

  adminRoute(app, 'packages.update', async (request) => {
    const body = request.body;
    const item = await store.updatePackageInfo(request.params.id, {
      packageName: body.package_name,
      versionCode: body.version_code,
      versionName: body.version_name,
      label: body.label,
    });
    if (!item) throw itemNotFound();
    return adminItemView(item);
  });
};

/** The octet-stream parser hands the body over as the request stream; anything else is no upload. */
function isStream(body: unknown): body is Readable {
  return typeof body === 'object' && body !== null && typeof (body as { pipe?: unknown }).pipe === 'function';
}
