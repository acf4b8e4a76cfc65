import { Type, type TLiteral, type TLiteralValue, type TSchema, type TUnion } from 'typebox';

/** `T | null` on the wire. */
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** `:id` of most admin resources. */
export const IdParams = Type.Object({ id: Type.Integer({ minimum: 1 }) });
/** `:id` where the route also bounds it to a safe integer (files, deployments): their 400 names the bound. */
export const SafeIdParams = Type.Object({ id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }) });

/** Every list answer: `{ items: [...] }`. */
export const Items = <T extends TSchema>(item: T) => Type.Object({ items: Type.Array(item) });

/** A JSON object whose keys the contract does not fix (event data, MQTT payloads). */
export const AnyObject = Type.Record(Type.String(), Type.Unknown());

export const Helpdesk = Type.Object({
  name: Type.String(),
  phone: Type.String(),
  website: Type.String(),
  email: Type.String(),
});

type LiteralTuple<T extends readonly TLiteralValue[]> = { -readonly [K in keyof T]: TLiteral<T[K]> };
/** One of these words: `anyOf` of constants (what a list of `Type.Literal`s gives), typed as their union. */
export const Literals = <const T extends readonly TLiteralValue[]>(values: T): TUnion<LiteralTuple<T>> =>
  Type.Union(values.map((value) => Type.Literal(value))) as unknown as TUnion<LiteralTuple<T>>;

/** `?size=` of a QR image: its width in pixels. */
export const QrQuery = Type.Object({ size: Type.Optional(Type.Integer({ minimum: 128, maximum: 2048, default: 480 })) });
