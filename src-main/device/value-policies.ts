// The value policies as the Flyve agent reads them off the wire: `{"<symbol>": value, "taskId": n}`
// on any topic naming the symbol. The simulator keeps its own copy of these facts (it knows only
// the wire, never the server's contract): how each value is written, the lowest Android version
// that can apply it, and whether it needs the agent installed as a system app.

export type ValueWire = 'bool' | 'int' | 'choice';

export interface ValuePolicy {
  wire: ValueWire;
  /** Lowest Android version, e.g. "5.0". */
  android: string;
  /** Needs a system-privileged agent. */
  system: boolean;
  /** choice: the keys the agent knows. */
  choices?: readonly string[];
}

const bool = (android: string, system = false): ValuePolicy => ({ wire: 'bool', android, system });
const int = (android = '3.0'): ValuePolicy => ({ wire: 'int', android, system: false });
const choice = (android: string, system: boolean, choices: readonly string[]): ValuePolicy => ({
  wire: 'choice',
  android,
  system,
  choices,
});

export const VALUE_POLICIES: Readonly<Record<string, ValuePolicy>> = {
  disableUnknownAppSources: bool('2.3', true),
  storageEncryption: bool('3.0'),
  useTLS: bool('4.1'),
  periodicGeolocation: int(),
  passwordEnabled: choice('3.0', false, ['PASSWORD_NONE', 'PASSWORD_PIN', 'PASSWORD_PASSWD']),
  passwordMinLength: int(),
  passwordQuality: choice('3.0', false, [
    'PASSWORD_QUALITY_UNSPECIFIED',
    'PASSWORD_QUALITY_SOMETHING',
    'PASSWORD_QUALITY_NUMERIC',
    'PASSWORD_QUALITY_ALPHABETIC',
    'PASSWORD_QUALITY_ALPHANUMERIC',
    'PASSWORD_QUALITY_COMPLEX',
  ]),
  passwordMinLetters: int(),
  passwordMinLowerCase: int(),
  passwordMinNonLetter: int(),
  passwordMinNumeric: int(),
  passwordMinSymbols: int(),
  passwordMinUpperCase: int(),
  maximumFailedPasswordsForWipe: int(),
  maximumTimeToLock: int(),
  disableCamera: bool('4.0'),
  disableWifi: bool('1.0'),
  disableBluetooth: bool('2.0'),
  disableRoaming: bool('5.0'),
  disableGPS: bool('1.5', true),
  disableMobileLine: bool('5.0', true),
  disableNfc: bool('4.3', true),
  disableHostpotTethering: bool('5.0'),
  disableAirplaneMode: bool('4.2', true),
  disableSpeakerphone: bool('5.0'),
  disableUsbMtp: bool('3.1', true),
  disableUsbPtp: bool('3.1', true),
  disableUsbAdb: bool('4.2', true),
  disableStatusBar: bool('4.3', true),
  disableScreenCapture: bool('5.0', true),
  disableStreamMusic: bool('5.0'),
  disableStreamRing: bool('5.0'),
  disableStreamAlarm: bool('5.0'),
  disableStreamNotification: bool('5.0'),
  disableStreamAccessibility: bool('5.0', true),
  disableStreamDTMF: bool('5.0'),
  disableStreamSystem: bool('5.0', true),
  defaultStreamType: choice('5.0', true, ['RINGER_MODE_NORMAL', 'RINGER_MODE_SILENT', 'RINGER_MODE_VIBRATE']),
};

/** The value as the agent reads it (Boolean.valueOf, Integer.parseInt, the key), or an error text. */
export function readValue(policy: ValuePolicy, raw: unknown): { value: boolean | number | string } | { error: string } {
  const text = typeof raw === 'string' || typeof raw === 'number' || typeof raw === 'boolean' ? String(raw) : null;
  if (text === null) return { error: `value ${JSON.stringify(raw)} is not a scalar` };
  switch (policy.wire) {
    case 'bool':
      return { value: text.toLowerCase() === 'true' };
    case 'int':
      return /^-?\d+$/.test(text.trim()) ? { value: Number.parseInt(text, 10) } : { error: `"${text}" is not a number` };
    case 'choice':
      return policy.choices!.includes(text)
        ? { value: text }
        : { error: `"${text}" is not one of ${policy.choices!.join(', ')}` };
  }
}

/** "4.4" < "5.0" < "10". */
export function olderThan(version: string, minimum: string): boolean {
  const a = version.split('.').map((n) => Number.parseInt(n, 10) || 0);
  const b = minimum.split('.').map((n) => Number.parseInt(n, 10) || 0);
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const diff = (a[i] ?? 0) - (b[i] ?? 0);
    if (diff !== 0) return diff < 0;
  }
  return false;
}
