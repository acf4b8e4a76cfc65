/**
 * Hostile APKs, built in memory (no binaries committed): a binary manifest with a chunk of size
 * 0, a zip bomb whose manifest inflates to 1 GiB, and a zip whose manifest under-declares its
 * size. Plus the small zip writer they share.
 */
import { constants, crc32, deflateRawSync } from 'node:zlib';

export interface ZipInput {
  name: string;
  /** The entry's bytes as stored in the archive (already deflated when `method` is 8). */
  data: Buffer;
  method: 0 | 8;
  /** What the headers declare. */
  size: number;
  crc: number;
}

/** A zip archive of the given entries (local headers, central directory, end record). */
export function zip(entries: ZipInput[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(entry.method, 8);
    local.writeUInt32LE(entry.crc, 14);
    local.writeUInt32LE(entry.data.length, 18);
    local.writeUInt32LE(entry.size, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(entry.method, 10);
    central.writeUInt32LE(entry.crc, 16);
    central.writeUInt32LE(entry.data.length, 20);
    central.writeUInt32LE(entry.size, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, entry.data);
    centrals.push(central, name);
    offset += local.length + name.length + entry.data.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}

/** A stored (uncompressed) entry, honestly declared. */
export function stored(name: string, data: Buffer): ZipInput {
  return { name, data, method: 0, size: data.length, crc: crc32(data) };
}

/**
 * An APK whose AndroidManifest.xml is binary XML with a chunk of size 0 after its header: a
 * parser that advances by each chunk's size never moves on (app-info-parser looped forever).
 */
export function zeroSizeChunkApk(): Buffer {
  const manifest = Buffer.alloc(16);
  manifest.writeUInt16LE(0x0003, 0); // RES_XML_TYPE
  manifest.writeUInt16LE(8, 2);
  manifest.writeUInt32LE(16, 4);
  manifest.writeUInt16LE(0x0000, 8); // RES_NULL_TYPE
  manifest.writeUInt16LE(8, 10);
  manifest.writeUInt32LE(0, 12); // size 0
  return zip([stored('AndroidManifest.xml', manifest)]);
}

const MiB = 1024 * 1024;

/**
 * `mebibytes` MiB of zeros as raw deflate, built without holding them: each MiB is compressed
 * on its own after a full flush (so every one is the same bytes), then an empty final block.
 */
function deflatedZeros(mebibytes: number): { data: Buffer; crc: number } {
  const zeros = Buffer.alloc(MiB);
  const block = deflateRawSync(zeros, { level: 9, finishFlush: constants.Z_FULL_FLUSH });
  const last = Buffer.from([0x03, 0x00]); // final fixed-Huffman block, empty
  let crc = 0;
  for (let i = 0; i < mebibytes; i++) crc = crc32(zeros, crc);
  return { data: Buffer.concat([...Array.from({ length: mebibytes }, () => block), last]), crc };
}

/** A ~1 MiB zip bomb: its AndroidManifest.xml truthfully declares 1 GiB. */
export function zipBombApk(): Buffer {
  const { data, crc } = deflatedZeros(1024);
  return zip([{ name: 'AndroidManifest.xml', data, method: 8, size: 1024 * MiB, crc }]);
}

/** A zip whose AndroidManifest.xml declares 16 bytes and inflates to 64 MiB. */
export function underDeclaredApk(): Buffer {
  const { data } = deflatedZeros(64);
  return zip([{ name: 'AndroidManifest.xml', data, method: 8, size: 16, crc: crc32(Buffer.alloc(16)) }]);
}
