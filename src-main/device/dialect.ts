// Every way the simulated agent's wire differs between the spec's agent and the reference Flyve
// agents (2.0.0-rc.7 as on the develop branch, reporting over HTTP, and 2.0.0-rc.6, reporting over MQTT), in one
// place. Enrollment, the API client and the MQTT side ask this module; add new differences here.

export type DialectName = 'spec' | 'flyve';
/** How the agent reports ping replies, presence, inventory and position. */
export type ReportTransport = 'mqtt' | 'http';

export type Resource = 'Agent' | 'File' | 'Package' | 'Fleet' | 'Geolocation' | 'Taskstatus';

export interface Dialect {
  name: DialectName;
  reports: ReportTransport;
  /** The agent version sent at enrollment when none is given. */
  defaultVersion: string;
  /** `PluginMdmAgent` or `PluginFlyvemdmAgent`. */
  resource(name: Resource): string;
  /** Where the session token travels: the spec's `session_token` query, or the Flyve agents' `Session-Token` header. */
  sessionTokenIn: 'query' | 'header';
  /** getFullSession keys: the guest profile id, the active profile (the Android agent reads none and always switches). */
  guestProfileKeys: readonly string[];
  activeProfileKeys: readonly string[];
  alwaysSwitchProfile: boolean;
  /** Record fields the agent cannot do without (the Android agent throws on a missing one). */
  requiredRecordFields: readonly string[];
  /** Extra fields of the create input (the Flyve agents send their inventory at enrollment). */
  extraCreateFields(device: { inventoryXml: string; system: boolean }): Record<string, string>;
  /** Filters subscribed after connecting, besides the agent's `T/#`. */
  manifestFilters: readonly string[];
  /** Whether the agent says `{"online": true}` on `T/Status/Online` after connecting (rc.7 says it over HTTP). */
  publishesOnline: boolean;
  /** Whether it confirms an unenroll on `T/Status/Unenroll` (rc.7 only reports itself offline). */
  confirmsUnenroll: boolean;
  /** Lock falls through to the ping handler in the reference agent: a `_pong` follows every Lock. */
  pongAfterLock: boolean;
}

const SPEC: Dialect = {
  name: 'spec',
  reports: 'mqtt',
  defaultVersion: '1.0.0',
  resource: (name) => `PluginMdm${name}`,
  sessionTokenIn: 'query',
  guestProfileKeys: ['plugin_mdm_guest_profiles_id'],
  activeProfileKeys: ['coreactiveprofile'],
  alwaysSwitchProfile: false,
  requiredRecordFields: [],
  extraCreateFields: () => ({}),
  manifestFilters: ['MdmManifest/#'],
  publishesOnline: true,
  confirmsUnenroll: true,
  pongAfterLock: false,
};

function flyve(reports: ReportTransport): Dialect {
  return {
    name: 'flyve',
    reports,
    defaultVersion: reports === 'http' ? '2.0.0-rc.7' : '2.0.0-rc.6',
    resource: (name) => `PluginFlyvemdm${name}`,
    sessionTokenIn: 'header',
    guestProfileKeys: ['plugin_flyvemdm_guest_profiles_id'],
    activeProfileKeys: ['glpiactiveprofile'],
    alwaysSwitchProfile: true,
    requiredRecordFields: [
      'broker',
      'port',
      'tls',
      'topic',
      'mqttpasswd',
      'certificate',
      'name',
      'computers_id',
      'id',
      'entities_id',
      'plugin_flyvemdm_fleets_id',
      'api_token',
    ],
    extraCreateFields: ({ inventoryXml, system }) => ({
      phone: '',
      has_system_permission: system ? '1' : '0',
      inventory: Buffer.from(inventoryXml.trim(), 'utf8').toString('base64'),
      notification_type: 'mqtt',
      notification_token: '',
    }),
    manifestFilters: ['FlyvemdmManifest/Status/Version'],
    publishesOnline: reports === 'mqtt',
    confirmsUnenroll: reports === 'mqtt',
    pongAfterLock: reports === 'http',
  };
}

/** `--dialect spec|flyve` with `--reports http|mqtt` (flyve only; default http, as release rc.7). */
export function dialectOf(name: DialectName = 'spec', reports?: ReportTransport): Dialect {
  if (name === 'spec') {
    if (reports === 'http') throw new Error('--reports http needs --dialect flyve: the spec has no HTTP reports');
    return SPEC;
  }
  return flyve(reports ?? 'http');
}

export const SPEC_DIALECT = SPEC;
