// Reads the FusionInventory XML the Flyve agents send (`_inventory`, `T/Status/Inventory`) into
// what an admin reads in the device panel. fast-xml-parser, no entity expansion, size-capped.
import { XMLParser, XMLValidator } from 'fast-xml-parser';

/**
 * Bigger inventories are refused: a phone's is 5–100 KiB with every installed app listed, and parsing
 * runs on the event loop (about 0.4 ms per KiB here), so the cap bounds what one report can stall.
 */
export const INVENTORY_MAX_BYTES = 512 * 1024;
const APPLICATIONS_MAX = 2_000;

export interface InventorySummary {
  model: string | null;
  manufacturer: string | null;
  os_name: string | null;
  os_version: string | null;
  serial: string | null;
  imei: string | null;
  battery: {
    level: string | null;
    health: string | null;
    status: string | null;
    chemistry: string | null;
    capacity: string | null;
  } | null;
  /** Drives/partitions: label, total and free in MB as the agent reports them. */
  storage: { name: string; total_mb: number | null; free_mb: number | null }[];
  memory_mb: number | null;
  applications: { name: string; version: string | null; package: string | null }[];
}

export class InventoryError extends Error {
  override name = 'InventoryError';
}

type Node = Record<string, unknown>;

const parser = new XMLParser({
  ignoreAttributes: true,
  processEntities: false,
  parseTagValue: false,
  trimValues: true,
  // Every section may repeat: always arrays, so one or many read alike.
  isArray: (_name, path) => String(path).split('.').length === 3 && String(path).startsWith('REQUEST.CONTENT.'),
});

/** Parses and summarizes; throws InventoryError with a message fit for a 400. */
export function parseInventory(xml: string): InventorySummary {
  if (Buffer.byteLength(xml, 'utf8') > INVENTORY_MAX_BYTES)
    throw new InventoryError(`the inventory is larger than ${INVENTORY_MAX_BYTES / 1024} KiB`);
  if (!xml.trim().startsWith('<')) throw new InventoryError('the inventory is not XML');
  const valid = XMLValidator.validate(xml);
  if (valid !== true) throw new InventoryError(`the inventory is not well-formed XML (line ${valid.err.line}: ${valid.err.msg})`);
  let document: Node;
  try {
    document = parser.parse(xml) as Node;
  } catch (error) {
    throw new InventoryError(`the inventory could not be read: ${error instanceof Error ? error.message : String(error)}`);
  }
  const content = ((document.REQUEST as Node | undefined)?.CONTENT ?? null) as Record<string, Node[]> | null;
  if (!content || typeof content !== 'object')
    throw new InventoryError('the inventory has no REQUEST/CONTENT element (FusionInventory format)');
  const first = (section: string): Node => content[section]?.[0] ?? {};
  const all = (section: string): Node[] => (Array.isArray(content[section]) ? content[section] : []);
  const bios = first('BIOS');
  const hardware = first('HARDWARE');
  const os = first('OPERATINGSYSTEM');
  const battery = all('BATTERIES')[0];
  const imei =
    all('SIMCARDS')
      .map((sim) => text(sim.IMEI))
      .find(Boolean) ?? text(hardware.IMEI);
  return {
    model: text(bios.SMODEL) ?? text(bios.MMODEL),
    manufacturer: text(bios.SMANUFACTURER) ?? text(bios.MMANUFACTURER),
    os_name: text(os.NAME) ?? text(hardware.OSNAME),
    os_version: text(os.VERSION) ?? text(hardware.OSVERSION),
    serial: text(bios.SSN) ?? text(bios.MSN),
    imei,
    battery: battery
      ? {
          level: text(battery.LEVEL),
          health: text(battery.HEALTH),
          status: text(battery.STATUS),
          chemistry: text(battery.CHEMISTRY),
          capacity: text(battery.CAPACITY),
        }
      : null,
    storage: all('DRIVES').map((drive) => ({
      name: text(drive.VOLUMN) ?? text(drive.LABEL) ?? text(drive.TYPE) ?? 'drive',
      total_mb: number(drive.TOTAL),
      free_mb: number(drive.FREE),
    })),
    memory_mb:
      number(hardware.MEMORY) ??
      all('MEMORIES').reduce<number | null>(
        (sum, m) => (number(m.CAPACITY) === null ? sum : (sum ?? 0) + number(m.CAPACITY)!),
        null,
      ),
    applications: all('SOFTWARES')
      .slice(0, APPLICATIONS_MAX)
      .map((app) => ({ name: text(app.NAME) ?? '?', version: text(app.VERSION), package: packageOf(app) }))
      .sort((a, b) => a.name.localeCompare(b.name)),
  };
}

/** An Android package name: dot-separated Java identifiers, e.g. `org.flyve.mdm.agent`. */
const PACKAGE_NAME = /^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$/;

/**
 * The application's package name. The Flyve agents' inventory library (org.flyve:inventory 1.4)
 * puts it in COMMENTS (NAME is the label, VERSION the versionName); other FusionInventory agents
 * use FILENAME or GUID. COMMENTS counts only when it is a package name ("N/A" when unknown).
 */
function packageOf(app: Node): string | null {
  const comments = text(app.COMMENTS);
  if (comments && PACKAGE_NAME.test(comments)) return comments;
  return text(app.FILENAME) ?? text(app.GUID);
}

function text(value: unknown): string | null {
  if (typeof value !== 'string' && typeof value !== 'number') return null;
  const trimmed = String(value).trim().slice(0, 500);
  return trimmed === '' ? null : trimmed;
}

function number(value: unknown): number | null {
  const t = text(value);
  if (t === null) return null;
  const n = Number(t.replace(/[^\d.]/g, ''));
  return Number.isFinite(n) && t.replace(/[^\d.]/g, '') !== '' ? n : null;
}
