/**
 * Reads single entries of a zip file (an APK) by its central directory, with every size bounded:
 * the central directory, each entry's declared size, its compressed size and what it really
 * inflates to (node:zlib's `maxOutputLength`), and its CRC-32 checked. Nothing else of the archive
 * is read. Synchronous (it runs in the APK reader's worker thread); failures are ZipError with a
 * sentence an admin can read.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { crc32, inflateRawSync } from 'node:zlib';

export class ZipError extends Error {
  override name = 'ZipError';
}

export interface ZipEntry {
  name: string;
  method: number;
  flags: number;
  crc: number;
  compressedSize: number;
  size: number;
  localHeaderOffset: number;
}

export interface ZipLimits {
  /** Largest central directory read, in bytes. */
  maxCentralDirectoryBytes: number;
  /** Largest number of entries listed. */
  maxEntries: number;
}

const EOCD_SIGNATURE = 0x06054b50;
const CENTRAL_SIGNATURE = 0x02014b50;
const LOCAL_SIGNATURE = 0x04034b50;
const EOCD_SIZE = 22;
const MAX_COMMENT = 0xffff;

/** An open zip file: its entries by name (a name listed twice is refused when read). */
export class ZipFile {
  readonly entries = new Map<string, ZipEntry>();
  private readonly duplicates = new Set<string>();
  private readonly fd: number;
  private readonly size: number;
  private centralDirectoryOffset = 0;

  constructor(path: string, limits: ZipLimits) {
    this.fd = openSync(path, 'r');
    try {
      this.size = fstatSync(this.fd).size;
      this.readCentralDirectory(limits);
    } catch (error) {
      closeSync(this.fd);
      throw error;
    }
  }

  close(): void {
    closeSync(this.fd);
  }

  private read(position: number, length: number): Buffer {
    const buffer = Buffer.alloc(length);
    let done = 0;
    while (done < length) {
      const count = readSync(this.fd, buffer, done, length - done, position + done);
      if (count === 0) throw new ZipError('the file ends before the end of a zip structure');
      done += count;
    }
    return buffer;
  }

  private readCentralDirectory(limits: ZipLimits): void {
    if (this.size < EOCD_SIZE) throw new ZipError(`it is not a zip archive (${this.size} bytes)`);
    const tailLength = Math.min(this.size, EOCD_SIZE + MAX_COMMENT);
    const tailStart = this.size - tailLength;
    const tail = this.read(tailStart, tailLength);
    let eocd = -1;
    for (let i = tailLength - EOCD_SIZE; i >= 0; i--) {
      if (tail.readUInt32LE(i) === EOCD_SIGNATURE && i + EOCD_SIZE + tail.readUInt16LE(i + 20) <= tailLength) {
        eocd = i;
        break;
      }
    }
    if (eocd < 0) throw new ZipError('it is not a zip archive (no end of central directory)');
    const disk = tail.readUInt16LE(eocd + 4);
    const cdDisk = tail.readUInt16LE(eocd + 6);
    const count = tail.readUInt16LE(eocd + 10);
    const cdSize = tail.readUInt32LE(eocd + 12);
    const cdOffset = tail.readUInt32LE(eocd + 16);
    if (disk !== 0 || cdDisk !== 0) throw new ZipError('multi-part zip archives are not supported');
    if (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
      throw new ZipError('ZIP64 archives are not supported');
    }
    const eocdOffset = tailStart + eocd;
    if (cdOffset + cdSize > eocdOffset) throw new ZipError('its central directory lies outside the file');
    if (cdSize > limits.maxCentralDirectoryBytes) {
      throw new ZipError(`its central directory is larger than ${limits.maxCentralDirectoryBytes} bytes`);
    }
    if (count > limits.maxEntries) throw new ZipError(`it lists more than ${limits.maxEntries} entries`);
    this.centralDirectoryOffset = cdOffset;
    const cd = this.read(cdOffset, cdSize);
    let at = 0;
    for (let index = 0; index < count; index++) {
      if (at + 46 > cdSize || cd.readUInt32LE(at) !== CENTRAL_SIGNATURE) {
        throw new ZipError(`its central directory is damaged at entry ${index + 1} of ${count}`);
      }
      const nameLength = cd.readUInt16LE(at + 28);
      const next = at + 46 + nameLength + cd.readUInt16LE(at + 30) + cd.readUInt16LE(at + 32);
      if (next > cdSize) throw new ZipError(`its central directory is damaged at entry ${index + 1} of ${count}`);
      const flags = cd.readUInt16LE(at + 8);
      // Bit 11: UTF-8 names; the names read here are ASCII either way.
      const name = cd.toString(flags & 0x800 ? 'utf8' : 'latin1', at + 46, at + 46 + nameLength);
      const entry: ZipEntry = {
        name,
        flags,
        method: cd.readUInt16LE(at + 10),
        crc: cd.readUInt32LE(at + 16),
        compressedSize: cd.readUInt32LE(at + 20),
        size: cd.readUInt32LE(at + 24),
        localHeaderOffset: cd.readUInt32LE(at + 42),
      };
      if (this.entries.has(name)) this.duplicates.add(name);
      else this.entries.set(name, entry);
      at = next;
    }
  }

  /**
   * The content of `name`, or null when the archive has no such entry. Refused (ZipError) when its
   * declared size exceeds `maxBytes`, when it inflates to more or less than it declares, or when
   * its data or checksum is wrong.
   */
  readEntry(name: string, maxBytes: number): Buffer | null {
    const entry = this.entries.get(name);
    if (!entry) return null;
    if (this.duplicates.has(name)) throw new ZipError(`${name} is listed more than once`);
    if (entry.flags & 0x1) throw new ZipError(`${name} is encrypted`);
    if (entry.size > maxBytes) {
      throw new ZipError(`${name} declares ${entry.size} bytes, more than the ${maxBytes} bytes accepted`);
    }
    // Deflate never needs much more room than the data itself (stored blocks add 5 bytes in 64 KiB).
    if (entry.compressedSize > maxBytes + 65536) {
      throw new ZipError(`${name} has ${entry.compressedSize} compressed bytes, more than the ${maxBytes} bytes accepted`);
    }
    const local = this.read(entry.localHeaderOffset, 30);
    if (local.readUInt32LE(0) !== LOCAL_SIGNATURE) throw new ZipError(`${name}'s local header is damaged`);
    const dataStart = entry.localHeaderOffset + 30 + local.readUInt16LE(26) + local.readUInt16LE(28);
    if (dataStart + entry.compressedSize > this.centralDirectoryOffset) {
      throw new ZipError(`${name}'s data lies outside the archive`);
    }
    const raw = this.read(dataStart, entry.compressedSize);
    let data: Buffer;
    if (entry.method === 0) {
      data = raw;
    } else if (entry.method === 8) {
      if (entry.size === 0) throw new ZipError(`${name} declares 0 bytes`);
      try {
        // Bounded by what the entry declares: a zip that under-declares stops here, not at the end of its data.
        data = inflateRawSync(raw, { maxOutputLength: entry.size });
      } catch (error) {
        if (error instanceof RangeError || (error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
          throw new ZipError(`${name} inflates to more than the ${entry.size} bytes it declares`);
        }
        throw new ZipError(`${name}'s compressed data is damaged`);
      }
    } else {
      throw new ZipError(`${name} uses compression method ${entry.method}, which APKs do not use`);
    }
    if (data.length !== entry.size) {
      throw new ZipError(`${name} holds ${data.length} bytes, not the ${entry.size} bytes it declares`);
    }
    if (crc32(data) !== entry.crc) throw new ZipError(`${name} fails its CRC-32 check`);
    return data;
  }
}
