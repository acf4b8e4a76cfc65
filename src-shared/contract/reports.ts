import { Type, type Static } from 'typebox';
import { Literals, Nullable } from './common.ts';
import { REPORT_NAMES } from './report-names.ts';

// Reports: the fleet's trends, day by day, from the daily figures the server keeps as it runs
// (backend/reports/): devices enrolled, devices online, compliance, OS versions, models, and
// deployment tasks that succeeded or failed. Days are UTC calendar days (`2026-11-26`).

export { REPORT_NAMES, REPORT_RANGES, type ReportName } from './report-names.ts';

/** GET /api/reports/:report */
export const ReportParams = Type.Object({ report: Literals(REPORT_NAMES) });
export type ReportParams = Static<typeof ReportParams>;

/** `?days=` the last N days, today included; `?fleet_id=` one fleet (else every fleet the caller sees). */
export const ReportQuery = Type.Object({
  days: Type.Optional(Type.Integer({ minimum: 1, maximum: 366, default: 30 })),
  fleet_id: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })),
});
export type ReportQuery = Static<typeof ReportQuery>;

/** One line of a chart: `key` names it in each point's values, `label` is what a person reads. */
export const ReportSeriesKey = Type.Object({ key: Type.String(), label: Type.String() });
export type ReportSeriesKey = Static<typeof ReportSeriesKey>;

/**
 * One day of a report: a value per series key. Counted figures (enrollments, deployments) are 0 on
 * a day when nothing happened; sampled ones (online, compliance, OS versions, models) are null on a
 * day when the server took no sample (it was not running).
 */
export const ReportPoint = Type.Object({
  day: Type.String(),
  values: Type.Record(Type.String(), Nullable(Type.Number())),
});
export type ReportPoint = Static<typeof ReportPoint>;

export const ReportShare = Type.Object({ key: Type.String(), devices: Type.Integer() });
export type ReportShare = Static<typeof ReportShare>;

export const Report = Type.Object({
  report: Literals(REPORT_NAMES),
  title: Type.String(),
  /** What the figures are and when they are taken, in one sentence. */
  description: Type.String(),
  fleet_id: Nullable(Type.Integer()),
  days: Type.Integer(),
  /** First and last day of the range (UTC), both included; `to` is today. */
  from: Type.String(),
  to: Type.String(),
  time_zone: Type.Literal('UTC'),
  series: Type.Array(ReportSeriesKey),
  points: Type.Array(ReportPoint),
  /** OS versions and models: the distribution now, from each device's latest inventory; null for the other reports. */
  current: Nullable(Type.Array(ReportShare)),
  /** When the server last sampled devices (online, compliance, OS, models); null before the first sample. */
  sampled_at: Nullable(Type.String()),
  /** How often it samples, in seconds. */
  sample_every_s: Type.Integer(),
});
export type Report = Static<typeof Report>;
