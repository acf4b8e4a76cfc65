/**
 * Android's binary formats, read only as far as a package's description needs: the binary XML of
 * AndroidManifest.xml (the manifest's package, versionCode, versionName; the application's label
 * and icon) and the resource table (resources.arsc) those attributes may point into.
 *
 * Every chunk is checked before it is used: its header and size must lie inside its parent and a
 * chunk is at least its own header (so the walk always moves forward), every offset and length is
 * bounded by the buffer, and strings are decoded only when asked for. Failures are ApkFormatError.
 */

export class ApkFormatError extends Error {
  override name = 'ApkFormatError';
}

const RES_STRING_POOL = 0x0001;
const RES_TABLE = 0x0002;
const RES_XML = 0x0003;
const RES_XML_START_ELEMENT = 0x0102;
const RES_XML_END_ELEMENT = 0x0103;
const RES_XML_RESOURCE_MAP = 0x0180;
const RES_TABLE_PACKAGE = 0x0200;
const RES_TABLE_TYPE = 0x0201;

export const TYPE_REFERENCE = 0x01;
export const TYPE_STRING = 0x03;
const TYPE_INT_DEC = 0x10;
const TYPE_INT_HEX = 0x11;

const ANDROID_ATTR = { label: 0x01010001, icon: 0x01010002, versionCode: 0x0101021b, versionName: 0x0101021c } as const;
const NO_INDEX = 0xffffffff;
/** Longest string decoded (a label or a path is far shorter). */
const MAX_STRING_UNITS = 4096;

interface Chunk {
  type: number;
  headerSize: number;
  /** Offset of the chunk in its buffer. */
  start: number;
  end: number;
}

/** The chunk at `at`, checked to lie inside [at, limit). */
function chunkAt(buf: Buffer, at: number, limit: number, what: string): Chunk {
  if (at + 8 > limit) throw new ApkFormatError(`${what}: a chunk header runs past the end`);
  const type = buf.readUInt16LE(at);
  const headerSize = buf.readUInt16LE(at + 2);
  const size = buf.readUInt32LE(at + 4);
  if (headerSize < 8 || size < headerSize || at + size > limit) {
    throw new ApkFormatError(`${what}: a chunk at byte ${at} has an impossible size (${size} bytes, header ${headerSize} bytes)`);
  }
  return { type, headerSize, start: at, end: at + size };
}

/** The chunks directly inside [from, to). */
function* chunksIn(buf: Buffer, from: number, to: number, what: string): Generator<Chunk> {
  let at = from;
  while (at < to) {
    const chunk = chunkAt(buf, at, to, what);
    yield chunk;
    at = chunk.end; // at least 8 bytes further: chunkAt refuses a size below the header
  }
}

/** A string pool, decoded lazily. */
class StringPool {
  private readonly buf: Buffer;
  private readonly chunk: Chunk;
  private readonly count: number;
  private readonly utf8: boolean;
  private readonly stringsStart: number;

  constructor(buf: Buffer, chunk: Chunk, what: string) {
    this.buf = buf;
    this.chunk = chunk;
    if (chunk.headerSize < 28) throw new ApkFormatError(`${what}: a string pool header is too short`);
    this.count = buf.readUInt32LE(chunk.start + 8);
    this.utf8 = (buf.readUInt32LE(chunk.start + 16) & 0x100) !== 0;
    this.stringsStart = chunk.start + buf.readUInt32LE(chunk.start + 20);
    if (chunk.start + chunk.headerSize + this.count * 4 > chunk.end || this.stringsStart > chunk.end) {
      throw new ApkFormatError(`${what}: a string pool is larger than its chunk`);
    }
  }

  /** String `index`, or null when the index or the string's bytes are out of bounds. */
  get(index: number): string | null {
    if (index < 0 || index >= this.count) return null;
    const { buf } = this;
    const end = this.chunk.end;
    let at = this.stringsStart + buf.readUInt32LE(this.chunk.start + this.chunk.headerSize + index * 4);
    if (this.utf8) {
      // UTF-16 length, then UTF-8 length, each on one or two bytes.
      if (at + 4 > end) return null;
      at += buf[at]! & 0x80 ? 2 : 1;
      let length = buf[at]!;
      if (length & 0x80) {
        length = ((length & 0x7f) << 8) | buf[at + 1]!;
        at += 1;
      }
      at += 1;
      if (at + length > end) return null;
      return buf.toString('utf8', at, at + Math.min(length, MAX_STRING_UNITS));
    }
    if (at + 4 > end) return null;
    let units = buf.readUInt16LE(at);
    if (units & 0x8000) {
      units = ((units & 0x7fff) << 16) | buf.readUInt16LE(at + 2);
      at += 2;
    }
    at += 2;
    if (at + units * 2 > end) return null;
    return buf.toString('utf16le', at, at + Math.min(units, MAX_STRING_UNITS) * 2);
  }
}

/** An attribute's typed value (Res_value). */
export interface TypedValue {
  type: number;
  data: number;
  /** The raw string, when the attribute has one. */
  raw: string | null;
}

export interface ManifestFacts {
  packageName: string | null;
  versionCode: TypedValue | null;
  versionName: TypedValue | null;
  label: TypedValue | null;
  icon: TypedValue | null;
}

/**
 * Reads the manifest's facts from AndroidManifest.xml in binary XML. Throws ApkFormatError when
 * it is not binary XML or a chunk is malformed.
 */
export function readManifest(buf: Buffer): ManifestFacts {
  const what = 'AndroidManifest.xml';
  const root = chunkAt(buf, 0, buf.length, what);
  if (root.type !== RES_XML) throw new ApkFormatError(`${what} is not Android binary XML`);
  let strings: StringPool | null = null;
  let resourceIds: number[] = [];
  const facts: ManifestFacts = { packageName: null, versionCode: null, versionName: null, label: null, icon: null };
  const path: string[] = [];
  let manifestSeen = false;

  for (const chunk of chunksIn(buf, root.headerSize, root.end, what)) {
    if (chunk.type === RES_STRING_POOL) {
      strings ??= new StringPool(buf, chunk, what);
    } else if (chunk.type === RES_XML_RESOURCE_MAP) {
      const count = Math.floor((chunk.end - chunk.start - chunk.headerSize) / 4);
      resourceIds = Array.from({ length: count }, (_, i) => buf.readUInt32LE(chunk.start + chunk.headerSize + i * 4));
    } else if (chunk.type === RES_XML_START_ELEMENT) {
      if (!strings) throw new ApkFormatError(`${what}: an element comes before the string pool`);
      const ext = chunk.start + chunk.headerSize;
      if (ext + 20 > chunk.end) throw new ApkFormatError(`${what}: an element is cut short`);
      const name = strings.get(buf.readUInt32LE(ext + 4)) ?? '';
      const attributeStart = buf.readUInt16LE(ext + 8);
      const attributeSize = buf.readUInt16LE(ext + 10);
      const attributeCount = buf.readUInt16LE(ext + 12);
      if (attributeCount > 0 && (attributeSize < 20 || ext + attributeStart + attributeCount * attributeSize > chunk.end)) {
        throw new ApkFormatError(`${what}: the attributes of <${name}> lie outside their element`);
      }
      const isManifest = path.length === 0 && name === 'manifest';
      const isApplication = path.length === 1 && path[0] === 'manifest' && name === 'application';
      path.push(name);
      if (!isManifest && !isApplication) continue;
      if (isManifest) manifestSeen = true;
      for (let i = 0; i < attributeCount; i++) {
        const at = ext + attributeStart + i * attributeSize;
        const nameIndex = buf.readUInt32LE(at + 4);
        const attrName = strings.get(nameIndex) ?? '';
        const resourceId = nameIndex < resourceIds.length ? resourceIds[nameIndex] : undefined;
        const rawIndex = buf.readUInt32LE(at + 8);
        const value: TypedValue = {
          type: buf[at + 15]!,
          data: buf.readUInt32LE(at + 16),
          raw: rawIndex === NO_INDEX ? null : strings.get(rawIndex),
        };
        if (value.type === TYPE_STRING && value.raw === null) value.raw = strings.get(value.data);
        const is = (key: keyof typeof ANDROID_ATTR) =>
          resourceId === ANDROID_ATTR[key] || (resourceId === undefined && attrName === key);
        if (isManifest) {
          if (attrName === 'package' && resourceId === undefined) facts.packageName = value.raw;
          else if (is('versionCode')) facts.versionCode = value;
          else if (is('versionName')) facts.versionName = value;
        } else if (is('label')) facts.label = value;
        else if (is('icon')) facts.icon = value;
      }
    } else if (chunk.type === RES_XML_END_ELEMENT) {
      path.pop();
    }
  }
  if (!manifestSeen) throw new ApkFormatError(`${what} has no <manifest> element`);
  return facts;
}

/** A non-negative integer from a versionCode attribute, or null. */
export function integerValue(value: TypedValue | null): number | null {
  if (!value) return null;
  if (value.type === TYPE_INT_DEC || value.type === TYPE_INT_HEX) return value.data <= 0x7fffffff ? value.data : null;
  if (value.raw !== null && /^\d{1,10}$/.test(value.raw.trim())) {
    const number = Number(value.raw.trim());
    return number <= 0x7fffffff ? number : null;
  }
  return null;
}

/** One value a resource takes in one configuration. */
export interface ResourceValue {
  type: number;
  data: number;
  /** The global string, for a string value. */
  string: string | null;
  /** The configuration's language (two letters, empty for the default) and density (0 = default). */
  language: string;
  density: number;
}

const DENSITY_ANY = 0xfffe;
const DENSITY_NONE = 0xffff;

/** The resource table: the values of resource ids, looked up one at a time. */
export class ResourceTable {
  private readonly buf: Buffer;
  private readonly strings: StringPool | null = null;
  private readonly packages = new Map<number, Chunk>();

  constructor(buf: Buffer) {
    this.buf = buf;
    const what = 'resources.arsc';
    const root = chunkAt(buf, 0, buf.length, what);
    if (root.type !== RES_TABLE) throw new ApkFormatError(`${what} is not a resource table`);
    for (const chunk of chunksIn(buf, root.headerSize, root.end, what)) {
      if (chunk.type === RES_STRING_POOL) this.strings ??= new StringPool(buf, chunk, what);
      else if (chunk.type === RES_TABLE_PACKAGE && chunk.headerSize >= 284) {
        this.packages.set(buf.readUInt32LE(chunk.start + 8), chunk);
      }
    }
  }

  /** Every value of resource `id` across configurations (empty when it has none). */
  values(id: number): ResourceValue[] {
    const what = 'resources.arsc';
    const { buf } = this;
    const pkg = this.packages.get(id >>> 24);
    if (!pkg) return [];
    const typeId = (id >>> 16) & 0xff;
    const entryIndex = id & 0xffff;
    const found: ResourceValue[] = [];
    for (const chunk of chunksIn(buf, pkg.start + pkg.headerSize, pkg.end, what)) {
      if (chunk.type !== RES_TABLE_TYPE || chunk.headerSize < 20 + 16 || buf[chunk.start + 8] !== typeId) continue;
      const flags = buf[chunk.start + 9]!;
      const entryCount = buf.readUInt32LE(chunk.start + 12);
      const entriesStart = chunk.start + buf.readUInt32LE(chunk.start + 16);
      const config = chunk.start + 20;
      const language = buf[config + 8] ? buf.toString('latin1', config + 8, config + 10) : '';
      const density = buf.readUInt16LE(config + 14);
      const offsets = chunk.start + chunk.headerSize;
      let offset: number | null = null;
      if (flags & 0x01) {
        // sparse: (entry index, offset / 4) pairs, sorted by index
        if (offsets + entryCount * 4 > chunk.end) throw new ApkFormatError(`${what}: a type's entries lie outside it`);
        for (let i = 0; i < entryCount; i++) {
          if (buf.readUInt16LE(offsets + i * 4) === entryIndex) {
            offset = buf.readUInt16LE(offsets + i * 4 + 2) * 4;
            break;
          }
        }
      } else if (flags & 0x02) {
        // 16-bit offsets / 4, 0xffff for none
        if (entryIndex >= entryCount) continue;
        if (offsets + entryCount * 2 > chunk.end) throw new ApkFormatError(`${what}: a type's entries lie outside it`);
        const value = buf.readUInt16LE(offsets + entryIndex * 2);
        offset = value === 0xffff ? null : value * 4;
      } else {
        if (entryIndex >= entryCount) continue;
        if (offsets + entryCount * 4 > chunk.end) throw new ApkFormatError(`${what}: a type's entries lie outside it`);
        const value = buf.readUInt32LE(offsets + entryIndex * 4);
        offset = value === NO_INDEX ? null : value;
      }
      if (offset === null) continue;
      const entry = entriesStart + offset;
      if (entry + 8 > chunk.end) throw new ApkFormatError(`${what}: an entry lies outside its type`);
      const entryFlags = buf.readUInt16LE(entry + 2);
      let type: number;
      let data: number;
      if (entryFlags & 0x0008) {
        // compact entry: the value's type in the flags' high byte, its data in place of the key
        type = entryFlags >>> 8;
        data = buf.readUInt32LE(entry + 4);
      } else {
        if (entryFlags & 0x0001) continue; // a complex (bag) entry: a style or an array, not a value
        const value = entry + buf.readUInt16LE(entry);
        if (value + 8 > chunk.end) throw new ApkFormatError(`${what}: a value lies outside its type`);
        type = buf[value + 3]!;
        data = buf.readUInt32LE(value + 4);
      }
      found.push({
        type,
        data,
        string: type === TYPE_STRING ? (this.strings?.get(data) ?? null) : null,
        language,
        density: density === DENSITY_ANY || density === DENSITY_NONE ? 0 : density,
      });
    }
    return found;
  }

  /** The values of `id`, following references (at most a few hops). */
  resolve(id: number, depth = 0): ResourceValue[] {
    if (depth > 4) return [];
    return this.values(id).flatMap((value) =>
      value.type === TYPE_REFERENCE && value.data !== 0 ? this.resolve(value.data, depth + 1) : [value],
    );
  }
}
