// The admin API's contract: the shapes on the wire, shared by the backend (request and response
// schemas of its routes), the console, the CLI, the tests and the bench. One shape per name.
export * from './common.ts';
export * from './errors.ts';
export * from './server-info.ts';
export * from './status.ts';
export * from './events.ts';
export * from './event-stream.ts';
export * from './commands.ts';
export * from './agents.ts';
export * from './invitations.ts';
export * from './codes.ts';
export * from './fleets.ts';
export * from './files.ts';
export * from './deployments.ts';
export * from './mail.ts';
export * from './settings.ts';
export * from './simulate.ts';
export * from './rules.ts';
export * from './policies.ts';
export * from './accounts.ts';
export * from './admins.ts';
export * from './alerts.ts';
export * from './bulk.ts';
export * from './jobs.ts';
export * from './views.ts';
export * from './where.ts';
export * from './reports.ts';
