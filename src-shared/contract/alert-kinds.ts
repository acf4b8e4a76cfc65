// A plain module (no TypeBox): the console's bundle imports the alert kinds from here.
/**
 * What an alert rule watches. Each kind says whether it takes a threshold and in which unit:
 * a device not seen for N days, a device waiting for approval for N hours, an invitation that
 * expires within N hours unused; the others take none.
 */
export const ALERT_KINDS = [
  'device_silent',
  'task_failed',
  'approval_waiting',
  'compliance_lost',
  'invitation_expiring',
  'broker_unreachable',
  'smtp_unreachable',
] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];

/** Each kind's threshold (unit, default, bounds) or null, and how it reads. */
export const ALERT_KIND_INFO: Readonly<
  Record<AlertKind, { label: string; threshold: { unit: 'days' | 'hours'; default: number; max: number } | null }>
> = {
  device_silent: { label: 'Device not seen', threshold: { unit: 'days', default: 7, max: 365 } },
  task_failed: { label: 'Task failed (deployment or policy)', threshold: null },
  approval_waiting: { label: 'Device waiting for approval', threshold: { unit: 'hours', default: 24, max: 24 * 90 } },
  compliance_lost: { label: 'Device out of compliance', threshold: null },
  invitation_expiring: { label: 'Invitation about to expire unused', threshold: { unit: 'hours', default: 24, max: 24 * 180 } },
  broker_unreachable: { label: 'MQTT broker unreachable', threshold: null },
  smtp_unreachable: { label: 'SMTP server unreachable', threshold: null },
};

/** "Device not seen for 7 days", "Task failed (deployment or policy)". */
export function describeAlertCondition(kind: AlertKind, threshold: number | null): string {
  const info = ALERT_KIND_INFO[kind];
  if (!info.threshold || threshold === null) return info.label;
  const unit = threshold === 1 ? info.threshold.unit.slice(0, -1) : info.threshold.unit;
  if (kind === 'invitation_expiring') return `Invitation expiring within ${threshold} ${unit}, unused`;
  return `${info.label} for ${threshold} ${unit}`;
}
