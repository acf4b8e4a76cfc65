// A real-looking FusionInventory XML inventory of an Android phone or an iPhone, as the Flyve
// agents send it (at enrollment, on Command/Inventory). Values vary with the serial, stay stable for it.
import { createHash } from 'node:crypto';

interface Phone {
  manufacturer: string;
  model: string;
  os: string;
  versions: string[];
  memoryMb: number;
  storageMb: number;
}

const ANDROID: Phone[] = [
  {
    manufacturer: 'samsung',
    model: 'SM-G973F',
    os: 'Android',
    versions: ['10', '11', '12'],
    memoryMb: 7_680,
    storageMb: 122_070,
  },
  { manufacturer: 'Google', model: 'Pixel 6', os: 'Android', versions: ['12', '13', '14'], memoryMb: 7_815, storageMb: 119_000 },
  { manufacturer: 'motorola', model: 'moto g(8)', os: 'Android', versions: ['10', '11'], memoryMb: 3_776, storageMb: 52_400 },
];
const APPLE: Phone[] = [
  {
    manufacturer: 'Apple',
    model: 'iPhone12,1',
    os: 'iOS',
    versions: ['14.8', '15.7', '16.6'],
    memoryMb: 3_840,
    storageMb: 122_000,
  },
];

const APPS: [string, string, string][] = [
  ['Chrome', 'com.android.chrome', '119.0.6045.163'],
  ['Gmail', 'com.google.android.gm', '2023.11.05.582219532'],
  ['Maps', 'com.google.android.apps.maps', '11.104.0101'],
  ['Flyve MDM Agent', 'org.flyve.mdm.agent', '2.0.0-rc.7'],
  ['Camera', 'com.android.camera2', '2.0.002'],
  ['Settings', 'com.android.settings', '10'],
  ['Calendar', 'com.google.android.calendar', '2023.44.0-578155498'],
  ['WhatsApp', 'com.whatsapp', '2.23.24.14'],
  ['Files', 'com.google.android.documentsui', '13-10453541'],
  ['Keep Notes', 'com.google.android.keep', '5.23.442.03.90'],
];

const escapeXml = (value: string) => value.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
const element = (name: string, fields: Record<string, string | number>) =>
  `    <${name}>\n${Object.entries(fields)
    .map(([k, v]) => `      <${k}>${escapeXml(String(v))}</${k}>`)
    .join('\n')}\n    </${name}>`;

/** A package the device installed (deployApp): listed in its inventory beside the phone's own apps. */
export interface InventoryPackage {
  packageName: string;
  versionCode: number | null;
  versionName: string | null;
}

/**
 * The inventory of the device with this serial (deterministic: the same serial, the same phone),
 * listing what it installed too. Each application as the Flyve agents' inventory library
 * (org.flyve:inventory 1.4) writes it: NAME the label, COMMENTS the package name, VERSION the
 * versionName (the version code when the package has none), INSTALLDATE as dd/MM/yyyy.
 */
export function fakeInventoryXml(
  device: {
    serial: string;
    uuid: string;
    type: 'android' | 'apple' | string;
    androidVersion?: string;
  },
  installed: readonly InventoryPackage[] = [],
): string {
  const seed = createHash('sha256').update(device.serial).digest();
  const phones = device.type === 'apple' ? APPLE : ANDROID;
  const phone = phones[seed[0]! % phones.length]!;
  const version =
    device.type !== 'apple' && device.androidVersion ? device.androidVersion : phone.versions[seed[1]! % phone.versions.length]!;
  const imei = luhnComplete(`35${Array.from(seed.subarray(2, 14), (b) => b % 10).join('')}`);
  const free = Math.round(phone.storageMb * (0.2 + (seed[14]! / 255) * 0.6));
  const level = 20 + (seed[15]! % 80);
  const now = new Date().toISOString().replace('T', ' ').slice(0, 19);
  const own = new Set(installed.map((app) => app.packageName));
  const apps: [string, string, string, string][] = [
    ...APPS.filter(([, pkg], i) => ((seed[16 + (i % 10)]! & 3) !== 0 || i === 3) && !own.has(pkg)).map(
      ([name, pkg, version]): [string, string, string, string] => [name, pkg, version, '01/11/2023'],
    ),
    ...installed.map((app): [string, string, string, string] => [
      app.packageName,
      app.packageName,
      app.versionName ?? (app.versionCode === null ? 'N/A' : String(app.versionCode)),
      `${now.slice(8, 10)}/${now.slice(5, 7)}/${now.slice(0, 4)}`,
    ]),
  ];
  const parts = [
    element('ACCESSLOG', { LOGDATE: now, USERID: 'N/A' }),
    element('BIOS', {
      BMANUFACTURER: phone.manufacturer,
      MMANUFACTURER: phone.manufacturer,
      SMANUFACTURER: phone.manufacturer,
      SMODEL: phone.model,
      SSN: device.serial,
    }),
    element('HARDWARE', {
      NAME: phone.model,
      OSNAME: phone.os,
      OSVERSION: version,
      ARCHNAME: 'aarch64',
      MEMORY: phone.memoryMb,
      UUID: device.uuid,
      USERID: 'u0',
    }),
    element('OPERATINGSYSTEM', {
      NAME: phone.os,
      VERSION: version,
      FULL_NAME: `${phone.os} ${version}`,
      KERNEL_NAME: device.type === 'apple' ? 'darwin' : 'linux',
    }),
    element('BATTERIES', {
      CHEMISTRY: 'Li-ion',
      CAPACITY: '3400 mAh',
      LEVEL: `${level}%`,
      HEALTH: 'Good',
      STATUS: level > 90 ? 'Full' : 'Discharging',
      VOLTAGE: '3.85V',
      TEMPERATURE: '29.5°C',
    }),
    element('SIMCARDS', { IMEI: imei, OPERATOR_NAME: 'Orange F', COUNTRY: 'fr', STATE: 'SIM_STATE_READY' }),
    element('DRIVES', { VOLUMN: '/data', TOTAL: phone.storageMb, FREE: free, FILESYSTEM: 'ext4' }),
    element('MEMORIES', { CAPACITY: phone.memoryMb, DESCRIPTION: 'RAM', TYPE: 'LPDDR4X' }),
    ...apps.map(([name, pkg, appVersion, installDate]) =>
      element('SOFTWARES', {
        NAME: name,
        COMMENTS: pkg,
        VERSION: appVersion,
        FROM: 'Android',
        INSTALLDATE: installDate,
        FOLDER: `/data/app/${pkg}-1`,
        NO_REMOVE: pkg.startsWith('com.android.') ? 'true' : 'false',
        USERID: '0',
      }),
    ),
  ];
  return `<?xml version="1.0" encoding="UTF-8"?>\n<REQUEST>\n  <CONTENT>\n${parts.join('\n')}\n  </CONTENT>\n  <DEVICEID>${escapeXml(device.serial)}-${now.slice(0, 10)}</DEVICEID>\n  <QUERY>INVENTORY</QUERY>\n</REQUEST>\n`;
}

/** 14 digits + the Luhn check digit, as a real IMEI has. */
function luhnComplete(digits: string): string {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 0) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return `${digits}${(10 - (sum % 10)) % 10}`;
}

/** A position near a few European cities, jittered per call, as a phone's GPS fix. */
export function fakePosition(serial: string): { latitude: number; longitude: number } {
  const cities = [
    [48.8566, 2.3522],
    [45.764, 4.8357],
    [52.52, 13.405],
    [41.3874, 2.1686],
  ] as const;
  const [lat, lon] = cities[createHash('sha256').update(serial).digest()[0]! % cities.length]!;
  return { latitude: round(lat + (Math.random() - 0.5) * 0.01), longitude: round(lon + (Math.random() - 0.5) * 0.01) };
}

const round = (n: number) => Math.round(n * 1e6) / 1e6;
