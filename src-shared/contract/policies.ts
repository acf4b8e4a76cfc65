import { Type, type Static, type TSchema } from 'typebox';
import { Items, Literals, Nullable } from './common.ts';
import { Deployment, TASK_STATUSES, TaskVerification } from './deployments.ts';

// The policy catalogue: every policy the reference server (flyve-mdm/glpi-plugin,
// install/policies/*.php) offers and the Flyve Android agent understands, as data. The admin API
// validates values with `schema`, the console builds its forms from it, the CLI prints it, and the
// backend turns a value into the agent's message with `wireValue`. Facts (symbols, categories,
// defaults, recommended values, minimum Android versions, system-only flags) are the reference's;
// labels, explanations, bounds and units are ours.

/** How the value is written in the agent's message `{"<symbol>": <value>, "taskId": n}`. */
export type PolicyWire =
  /** `"true"` / `"false"`: the reference sends booleans as strings, the agent reads `Boolean.valueOf`. */
  | 'bool-string'
  /** a JSON number (the agent reads `Integer.parseInt(value.toString())`). */
  | 'number'
  /** the chosen key as a JSON string, e.g. `"PASSWORD_PIN"`. */
  | 'string'
  /** the deployment messages (deployApp, deployFile, removeApp, removeFile): their own fields. */
  | 'deployment';

export type PolicyType = 'bool' | 'int' | 'dropdown' | 'deployment';

export interface PolicyChoice {
  value: string;
  label: string;
}

export interface PolicyDefinition {
  symbol: string;
  label: string;
  /** One line for the console and the CLI's help. */
  explanation: string;
  /** The reference's category path, e.g. "Security > Peripherals". */
  category: string;
  type: PolicyType;
  /** What a value must be (bool: boolean; int: bounded integer; dropdown: one of the keys). */
  schema: TSchema;
  /** int: the unit of the number, if it has one. */
  unit: 'milliseconds' | 'seconds' | 'characters' | 'attempts' | null;
  /** dropdown: the keys with their labels, in the reference's order. */
  choices: PolicyChoice[] | null;
  /** The device's own setting when no policy applies (null for the deployment kinds). */
  default: boolean | number | string | null;
  /** The baseline value the console offers (null for the deployment kinds). */
  recommended: boolean | number | string | null;
  /** Lowest Android version the agent can apply it on, e.g. "5.0". */
  androidMinVersion: string;
  /** Needs an agent installed as a system app (reported `has_system_permission`). */
  systemOnly: boolean;
  /** One value per fleet or device (reference `unicity`); the deployment kinds take many. */
  unique: boolean;
  wire: PolicyWire;
}

const Bool = Type.Boolean();
const Int = (maximum: number) => Type.Integer({ minimum: 0, maximum });

/** The password rule counts: a count of characters, 0 = no requirement. */
const PASSWORD_COUNT_MAX = 64;
/** maximumTimeToLock: up to a day, in milliseconds (0 = no limit). */
const TIME_TO_LOCK_MAX_MS = 86_400_000;
/** periodicGeolocation: up to a day, in seconds (0 = off). */
const GEOLOCATION_PERIOD_MAX_S = 86_400;
const FAILED_PASSWORDS_MAX = 100;

function bool(
  symbol: string,
  label: string,
  explanation: string,
  category: string,
  androidMinVersion: string,
  systemOnly: boolean,
  defaults: { default?: boolean; recommended?: boolean } = {},
): PolicyDefinition {
  return {
    symbol,
    label,
    explanation,
    category,
    type: 'bool',
    schema: Bool,
    unit: null,
    choices: null,
    default: defaults.default ?? false,
    recommended: defaults.recommended ?? false,
    androidMinVersion,
    systemOnly,
    unique: true,
    wire: 'bool-string',
  };
}

function int(
  symbol: string,
  label: string,
  explanation: string,
  category: string,
  bound: { maximum: number; unit: PolicyDefinition['unit'] },
  values: { default: number; recommended: number },
): PolicyDefinition {
  return {
    symbol,
    label,
    explanation,
    category,
    type: 'int',
    schema: Int(bound.maximum),
    unit: bound.unit,
    choices: null,
    ...values,
    androidMinVersion: '3.0',
    systemOnly: false,
    unique: true,
    wire: 'number',
  };
}

function dropdown(
  symbol: string,
  label: string,
  explanation: string,
  category: string,
  choices: PolicyChoice[],
  values: { default: string; recommended: string },
  androidMinVersion: string,
  systemOnly: boolean,
): PolicyDefinition {
  return {
    symbol,
    label,
    explanation,
    category,
    type: 'dropdown',
    schema: Type.Union(choices.map((choice) => Type.Literal(choice.value))),
    unit: null,
    choices,
    ...values,
    androidMinVersion,
    systemOnly,
    unique: true,
    wire: 'string',
  };
}

function deployment(
  symbol: string,
  label: string,
  explanation: string,
  androidMinVersion: string,
  schema: TSchema,
): PolicyDefinition {
  return {
    symbol,
    label,
    explanation,
    category: 'Deployment',
    type: 'deployment',
    schema,
    unit: null,
    choices: null,
    default: null,
    recommended: null,
    androidMinVersion,
    systemOnly: false,
    unique: false,
    wire: 'deployment',
  };
}

const PASSWORD = 'Security > Authentication > Password';
const PERIPHERALS = 'Security > Peripherals';
const USB = 'Security > USB';
const SECURITY_UI = 'Security > User interface';
const CONFIG_UI = 'Configuration > User interface';
const count = { maximum: PASSWORD_COUNT_MAX, unit: 'characters' } as const;

export const POLICY_CATALOGUE: readonly PolicyDefinition[] = [
  // Deployment (the four kinds: an item's id, or what to remove, instead of a value)
  deployment(
    'deployApp',
    'Deploy application',
    'Install an application package on the device.',
    '4.3',
    Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'package id' }),
  ),
  deployment(
    'removeApp',
    'Remove application',
    'Uninstall an application, by Android package name.',
    '4.3',
    Type.String({ minLength: 1, maxLength: 255, description: 'Android package name' }),
  ),
  deployment(
    'deployFile',
    'Deploy file',
    'Copy a file to a folder of the device.',
    '4.2',
    Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'file id' }),
  ),
  deployment(
    'removeFile',
    'Remove file',
    'Delete a file from the device, by its path.',
    '4.2',
    Type.String({ minLength: 1, maxLength: 1024, description: 'path on the device' }),
  ),
  bool(
    'disableUnknownAppSources',
    'Disable unknown sources',
    'Forbid installing applications from outside the store.',
    'Deployment',
    '2.3',
    true,
  ),
  // Security > Encryption
  bool(
    'storageEncryption',
    'Internal storage encryption',
    'Require the internal storage to be encrypted.',
    'Security > Encryption',
    '3.0',
    false,
  ),
  // Mobile Device Management
  bool('useTLS', 'Use TLS', 'Connect to the MQTT broker over TLS.', 'Mobile Device Management', '4.1', false),
  int(
    'periodicGeolocation',
    'Periodic geolocation',
    'Report the device position to the server this often (0: never).',
    'Mobile Device Management > Geolocation',
    { maximum: GEOLOCATION_PERIOD_MAX_S, unit: 'seconds' },
    { default: 0, recommended: 0 },
  ),
  // Security > Authentication > Password
  dropdown(
    'passwordEnabled',
    'Password enabled',
    'Require a screen lock, and which kind.',
    PASSWORD,
    [
      { value: 'PASSWORD_NONE', label: 'No' },
      { value: 'PASSWORD_PIN', label: 'PIN' },
      { value: 'PASSWORD_PASSWD', label: 'Password' },
    ],
    { default: 'PASSWORD_NONE', recommended: 'PASSWORD_PIN' },
    '3.0',
    false,
  ),
  int(
    'passwordMinLength',
    'Minimum password length',
    'Fewest characters a PIN or password may have (0: no rule).',
    PASSWORD,
    count,
    { default: 0, recommended: 6 },
  ),
  dropdown(
    'passwordQuality',
    'Password quality',
    'What kind of characters the password must contain.',
    PASSWORD,
    [
      { value: 'PASSWORD_QUALITY_UNSPECIFIED', label: 'Unspecified' },
      { value: 'PASSWORD_QUALITY_SOMETHING', label: 'Something' },
      { value: 'PASSWORD_QUALITY_NUMERIC', label: 'Numeric' },
      { value: 'PASSWORD_QUALITY_ALPHABETIC', label: 'Alphabetic' },
      { value: 'PASSWORD_QUALITY_ALPHANUMERIC', label: 'Alphanumeric' },
      { value: 'PASSWORD_QUALITY_COMPLEX', label: 'Complex' },
    ],
    { default: 'PASSWORD_QUALITY_UNSPECIFIED', recommended: 'PASSWORD_QUALITY_UNSPECIFIED' },
    '3.0',
    false,
  ),
  int('passwordMinLetters', 'Minimum letters', 'Fewest letters the password must contain.', PASSWORD, count, {
    default: 0,
    recommended: 0,
  }),
  int(
    'passwordMinLowerCase',
    'Minimum lowercase letters',
    'Fewest lowercase letters the password must contain.',
    PASSWORD,
    count,
    { default: 0, recommended: 1 },
  ),
  int(
    'passwordMinNonLetter',
    'Minimum non-letter characters',
    'Fewest digits or symbols the password must contain.',
    PASSWORD,
    count,
    { default: 0, recommended: 0 },
  ),
  int('passwordMinNumeric', 'Minimum digits', 'Fewest digits the password must contain.', PASSWORD, count, {
    default: 0,
    recommended: 1,
  }),
  int('passwordMinSymbols', 'Minimum symbols', 'Fewest symbols the password must contain.', PASSWORD, count, {
    default: 0,
    recommended: 0,
  }),
  int(
    'passwordMinUpperCase',
    'Minimum uppercase letters',
    'Fewest uppercase letters the password must contain.',
    PASSWORD,
    count,
    { default: 0, recommended: 1 },
  ),
  int(
    'maximumFailedPasswordsForWipe',
    'Failed unlocks before wipe',
    'Wipe the device after this many wrong passwords in a row (0: never).',
    PASSWORD,
    { maximum: FAILED_PASSWORDS_MAX, unit: 'attempts' },
    { default: 0, recommended: 5 },
  ),
  int(
    'maximumTimeToLock',
    'Maximum time to lock',
    'Lock the screen after this long without use (0: no limit).',
    PASSWORD,
    { maximum: TIME_TO_LOCK_MAX_MS, unit: 'milliseconds' },
    { default: 60_000, recommended: 60_000 },
  ),
  // Security > Peripherals
  bool('disableCamera', 'Disable camera', 'Prevent any use of the cameras.', PERIPHERALS, '4.0', false),
  bool('disableWifi', 'Disable Wi-Fi', 'Turn Wi-Fi off and keep it off.', PERIPHERALS, '1.0', false),
  bool('disableBluetooth', 'Disable Bluetooth', 'Turn Bluetooth off and keep it off.', PERIPHERALS, '2.0', false),
  bool('disableRoaming', 'Disable roaming', 'Forbid data roaming.', PERIPHERALS, '5.0', false),
  bool('disableGPS', 'Disable GPS', 'Turn location services off.', PERIPHERALS, '1.5', true),
  bool('disableMobileLine', 'Disable mobile line', 'Turn the mobile network off.', PERIPHERALS, '5.0', true),
  bool('disableNfc', 'Disable NFC', 'Turn Near Field Communication off.', PERIPHERALS, '4.3', true),
  bool(
    'disableHostpotTethering',
    'Disable hotspot and tethering',
    'Forbid sharing the connection (hotspot, tethering).',
    PERIPHERALS,
    '5.0',
    false,
  ),
  bool('disableAirplaneMode', 'Disable airplane mode', 'Forbid switching airplane mode on.', PERIPHERALS, '4.2', true),
  bool('disableSpeakerphone', 'Disable speakerphone', 'Forbid the speakerphone.', PERIPHERALS, '5.0', false),
  // Security > USB
  bool('disableUsbMtp', 'Disable USB MTP', 'Forbid USB file transfer (Media Transfer Protocol).', USB, '3.1', true),
  bool('disableUsbPtp', 'Disable USB PTP', 'Forbid USB picture transfer (Picture Transfer Protocol).', USB, '3.1', true),
  bool('disableUsbAdb', 'Disable USB debugging', 'Forbid the Android Debug Bridge over USB.', USB, '4.2', true, {
    default: true,
    recommended: false,
  }),
  // Security > User interface
  bool(
    'disableStatusBar',
    'Disable status bar',
    'Hide the status bar: no notifications or quick settings to escape a single-use device.',
    SECURITY_UI,
    '4.3',
    true,
  ),
  bool(
    'disableScreenCapture',
    'Disable screen capture',
    'Forbid screenshots and showing the screen on insecure displays.',
    SECURITY_UI,
    '5.0',
    true,
  ),
  // Configuration > User interface
  bool('disableStreamMusic', 'Disable media sounds', 'Mute all media sounds.', CONFIG_UI, '5.0', false),
  bool('disableStreamRing', 'Disable ringer sounds', 'Mute the ringer.', CONFIG_UI, '5.0', false),
  bool('disableStreamAlarm', 'Disable alarm sounds', 'Mute alarms.', CONFIG_UI, '5.0', false),
  bool('disableStreamNotification', 'Disable notification sounds', 'Mute notifications.', CONFIG_UI, '5.0', false),
  bool('disableStreamAccessibility', 'Disable accessibility sounds', 'Mute accessibility prompts.', CONFIG_UI, '5.0', true),
  bool('disableStreamDTMF', 'Disable DTMF sounds', 'Mute dial-pad tones.', CONFIG_UI, '5.0', false),
  bool('disableStreamSystem', 'Disable system sounds', 'Mute system sounds.', CONFIG_UI, '5.0', true),
  dropdown(
    'defaultStreamType',
    'Audio profile',
    'The ringer mode the device is kept in.',
    CONFIG_UI,
    [
      { value: 'RINGER_MODE_NORMAL', label: 'Normal' },
      { value: 'RINGER_MODE_SILENT', label: 'Silent' },
      { value: 'RINGER_MODE_VIBRATE', label: 'Vibrate' },
    ],
    { default: 'RINGER_MODE_NORMAL', recommended: 'RINGER_MODE_NORMAL' },
    '5.0',
    true,
  ),
];

/** The four deployment kinds: assigned like any policy (POST /api/policy-assignments; POST /api/deployments is its alias for items). */
export const DEPLOYMENT_SYMBOLS = ['deployApp', 'deployFile', 'removeApp', 'removeFile'] as const;

const BY_SYMBOL = new Map(POLICY_CATALOGUE.map((policy) => [policy.symbol, policy]));

/** The catalogue entry of `symbol`, or undefined. */
export const policyDefinition = (symbol: string): PolicyDefinition | undefined => BY_SYMBOL.get(symbol);

/** The policies that take a value (every one but the deployment kinds). */
export const VALUE_POLICIES: readonly PolicyDefinition[] = POLICY_CATALOGUE.filter((policy) => policy.type !== 'deployment');

/** A value policy's message on the wire, taskId included (deployment messages are built with their item). */
export function policyWireMessage(
  policy: PolicyDefinition,
  value: boolean | number | string,
  taskId: number,
): Record<string, unknown> {
  switch (policy.wire) {
    case 'bool-string':
      return { [policy.symbol]: value === true ? 'true' : 'false', taskId };
    case 'number':
      return { [policy.symbol]: Number(value), taskId };
    case 'string':
      return { [policy.symbol]: String(value), taskId };
    case 'deployment':
      throw new Error(`${policy.symbol} is a deployment: its message is built from its item`);
  }
}

/** "5.0" < "5.1" < "10": compares dotted Android versions numerically (missing parts are 0). */
export function compareAndroidVersions(a: string, b: string): number {
  const left = a.split('.').map((part) => Number.parseInt(part, 10) || 0);
  const right = b.split('.').map((part) => Number.parseInt(part, 10) || 0);
  for (let i = 0; i < Math.max(left.length, right.length); i++) {
    const diff = (left[i] ?? 0) - (right[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return 0;
}

/** GET /api/policies: the catalogue as the admin API serves it. */
export const PolicyCatalogueEntry = Type.Object({
  symbol: Type.String(),
  label: Type.String(),
  explanation: Type.String(),
  category: Type.String(),
  type: Type.Union([Type.Literal('bool'), Type.Literal('int'), Type.Literal('dropdown'), Type.Literal('deployment')]),
  schema: Type.Unknown(),
  unit: Type.Union([Type.String(), Type.Null()]),
  choices: Type.Union([Type.Array(Type.Object({ value: Type.String(), label: Type.String() })), Type.Null()]),
  default: Type.Union([Type.Boolean(), Type.Number(), Type.String(), Type.Null()]),
  recommended: Type.Union([Type.Boolean(), Type.Number(), Type.String(), Type.Null()]),
  androidMinVersion: Type.String(),
  systemOnly: Type.Boolean(),
  unique: Type.Boolean(),
  wire: Type.String(),
});
export type PolicyCatalogueEntry = Static<typeof PolicyCatalogueEntry>;
export const PolicyCatalogue = Items(PolicyCatalogueEntry);

const TargetId = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
/**
 * A value policy's value, checked by the service against the catalogue entry's own schema (its type
 * depends on the policy). Not a union here: the admin API coerces types, and a union would turn `0`
 * into `false` (or `true` into `1`) before the catalogue saw it.
 */
export const PolicyValue = Type.Unknown();

/**
 * POST /api/policy-assignments: any policy of the catalogue on a fleet (by id or name) or one device.
 * A value policy's value, or a deployment kind's item: deployApp takes a package id, deployFile a
 * file id (and a destination folder), removeApp an Android package name, removeFile a path.
 */
export const AssignBody = Type.Object(
  {
    policy: Type.String({ minLength: 1, maxLength: 64 }),
    value: PolicyValue,
    fleet_id: Type.Optional(TargetId),
    /** A fleet by name or id, as the CLI gives it. */
    fleet: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    agent_id: Type.Optional(TargetId),
    /** deployFile: the folder on the device (default %SDCARD%/Download/). */
    destination: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
    /** deployApp, deployFile: unsetting the assignment also publishes removeApp / removeFile. */
    remove_on_delete: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type AssignBody = Static<typeof AssignBody>;

/** An assignment: a policy's value (or a deployment) on a fleet or a device; the deployments' shape. */
export const Assignment = Deployment;
export type Assignment = Static<typeof Assignment>;
export const AssignmentList = Items(Assignment);

/** DELETE /api/policy-assignments/:id: the removed assignment (and a deployment's removal, if any). */
export const Unassigned = Type.Object({ removed: Assignment, removal: Nullable(Assignment) });
export type Unassigned = Static<typeof Unassigned>;

/** GET /api/agents/:id/policies: each task of the device's active assignments, and which value applies. */
export const EffectivePolicy = Type.Object({
  assignment_id: Type.Integer(),
  task_id: Type.Integer(),
  policy: Type.String(),
  label: Type.String(),
  value: Nullable(Type.Union([Type.Boolean(), Type.Number(), Type.String()])),
  item_name: Type.String(),
  source: Type.Union([Type.Literal('fleet'), Type.Literal('device')]),
  source_name: Type.String(),
  status: Literals(TASK_STATUSES),
  reason: Nullable(Type.String()),
  updated_at: Type.String(),
  /** False when another value of the same policy applies (the task is overriden). */
  effective: Type.Boolean(),
  /** Package deployments: the install checked against the device's inventory. */
  verification: Type.Optional(Nullable(TaskVerification)),
});
export type EffectivePolicy = Static<typeof EffectivePolicy>;
export const EffectivePolicyList = Items(EffectivePolicy);

/** A device's compliance: all done, some not done yet, some failed or incompatible, no policy at all. */
export const COMPLIANCE_STATES = ['compliant', 'pending', 'failing', 'none'] as const;
export type ComplianceState = (typeof COMPLIANCE_STATES)[number];

/** GET /api/compliance?fleet_id=: each enrolled device's tasks of active assignments, counted. */
export const DeviceCompliance = Type.Object({
  agent_id: Type.Integer(),
  agent_name: Type.String(),
  fleet_id: Type.Integer(),
  /** Tasks that apply (canceled and overriden ones left out). */
  total: Type.Integer(),
  done: Type.Integer(),
  pending: Type.Integer(),
  in_progress: Type.Integer(),
  failed: Type.Integer(),
  incompatible: Type.Integer(),
  overriden: Type.Integer(),
  /** compliant: all done; pending: some not done yet; failing: some failed or incompatible; none: no policy. */
  state: Literals(COMPLIANCE_STATES),
  /** "all 12 done", "2 pending", "1 failed, 1 incompatible" */
  summary: Type.String(),
  last_change: Nullable(Type.String()),
});
export type DeviceCompliance = Static<typeof DeviceCompliance>;
export const ComplianceList = Items(DeviceCompliance);
/** GET /api/compliance?fleet_id=&state=: one fleet's devices, those in one state (the devices table's filter). */
export const ComplianceFilter = Type.Object({
  fleet_id: Type.Optional(TargetId),
  state: Type.Optional(Literals(COMPLIANCE_STATES)),
});
export type ComplianceFilter = Static<typeof ComplianceFilter>;
