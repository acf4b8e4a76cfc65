import { Type, type Static } from 'typebox';
import { Nullable } from './common.ts';

export const StoredKind = Type.Union([Type.Literal('file'), Type.Literal('package')]);
export type StoredKind = Static<typeof StoredKind>;

/** A stored file or package as the admin API lists it (GET /api/files, /api/packages). */
export const StoredItem = Type.Object({
  id: Type.Integer(),
  entity_id: Type.Integer(),
  name: Type.String(),
  size: Type.Integer(),
  mime_type: Type.String(),
  sha256: Type.String(),
  created_at: Type.String(),
  updated_at: Type.String(),
  /** Files: the version deployFile announces. */
  version: Type.Optional(Type.Integer()),
  /** Packages: from the APK's manifest, or given by the admin. */
  package_name: Type.Optional(Nullable(Type.String())),
  version_code: Type.Optional(Nullable(Type.Integer())),
  version_name: Type.Optional(Nullable(Type.String())),
  label: Type.Optional(Nullable(Type.String())),
  icon: Type.Optional(Nullable(Type.String())),
});
export type StoredItem = Static<typeof StoredItem>;
export const StoredItemList = Type.Array(StoredItem);

/** A MIME type as uploads may declare it: RFC 6838 restricted-name for type and subtype; no parameters. */
export const MIME_TYPE_PATTERN = '^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$';
/** An Android package name: dot-separated Java identifiers, at least two segments. */
export const PACKAGE_NAME_PATTERN = '^[A-Za-z][A-Za-z0-9_]*(\\.[A-Za-z][A-Za-z0-9_]*)+$';

const PackageInfoFields = {
  package_name: Type.Optional(Type.String({ maxLength: 255, pattern: PACKAGE_NAME_PATTERN })),
  version_code: Type.Optional(Type.Integer({ minimum: 0, maximum: 2 ** 31 - 1 })),
  version_name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
};

/** PATCH /api/packages/:id: what the APK's manifest did not say, or says wrong. */
export const PackagePatch = Type.Object(
  { ...PackageInfoFields, label: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })) },
  { additionalProperties: false, minProperties: 1 },
);
export type PackagePatch = Static<typeof PackagePatch>;

/** What POST /api/packages does with an APK whose manifest cannot be read: refuse it (422, the default) or keep it as the package the query describes. */
export const IfUnreadable = Type.Union([Type.Literal('refuse'), Type.Literal('keep')]);
export type IfUnreadable = Static<typeof IfUnreadable>;

/** POST /api/files, /api/packages: the content is the raw body (application/octet-stream). */
export const UploadQuery = Type.Object({
  ...PackageInfoFields,
  /** Packages: `keep` (with package_name and version_code) stores an APK whose manifest cannot be read. */
  if_unreadable: Type.Optional(IfUnreadable),
  // a path is accepted (the store keeps its last segment), hence more than 255
  name: Type.String({ minLength: 1, maxLength: 4096 }),
  mime_type: Type.Optional(Type.String({ maxLength: 255, pattern: MIME_TYPE_PATTERN })),
  entity_id: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })),
});
export type UploadQuery = Static<typeof UploadQuery>;
