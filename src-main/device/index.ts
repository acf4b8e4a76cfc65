// Public surface of the device simulator. It knows only the wire: nothing here imports the backend.
export { runAgentCommand, AGENT_USAGE } from './cli.ts';
export type { CliOutput } from './cli.ts';
export { runAgent, enrollSilently } from './agent.ts';
export type { AgentRunOptions, AgentRunResult, AfterEnrollmentHook } from './agent.ts';
export { enrollDevice, startAgentSession, mqttCredentialsOf, randomSerial, DEFAULT_AGENT_VERSION } from './enroll.ts';
export type { AgentType, EnrollOptions, EnrollmentResult, MqttCredentials, StepLog } from './enroll.ts';
export { downloadAndVerify, parseDownloadTarget, expectedRange, defaultRangeChecks } from './download.ts';
export type { CheckResult, ContentMetadata, DownloadOptions, DownloadSummary, DownloadTarget } from './download.ts';
export { decodeDeeplink, encodeDeeplinkData, DeeplinkError } from './deeplink.ts';
export type { DeeplinkData, DeeplinkFields } from './deeplink.ts';
export { AgentApiClient, AgentApiError } from './api-client.ts';
export type { AgentRecord, AgentCreationInput, ContentKind, FullSession } from './api-client.ts';
export { simulateEnrollment } from './simulate.ts';
export type { SimulateEnrollmentRequest, SimulateEnrollmentResult } from './simulate.ts';
export { startMqttAgent, MqttAgent, MqttRefusedError } from './mqtt-agent.ts';
export type { MqttAgentOptions, MqttAgentEvent, MqttAgentState, MqttAgentEndReason } from './mqtt-agent.ts';
