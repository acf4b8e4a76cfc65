/** Where the console's simulated devices are remembered, in the server's data dir (device/simulate.ts). */
export const SIMULATED_DEVICES_FILE = 'simulated-devices.json';
