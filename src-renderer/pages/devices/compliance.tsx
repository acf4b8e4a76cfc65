import { Text, Tooltip } from '@mantine/core';
import type { ComplianceState, DeviceCompliance } from '../../../src-shared/contract/index.ts';

// The devices table's compliance, under each device's status: its tasks of the policies in force on
// it, counted by the server (GET /api/compliance): all done, n pending, n failed or incompatible.

/** The filter's choices, in the order an admin looks for them. */
export const COMPLIANCE_CHOICES: { value: ComplianceState; label: string }[] = [
  { value: 'failing', label: 'Failed or incompatible' },
  { value: 'pending', label: 'Pending' },
  { value: 'compliant', label: 'All done' },
  { value: 'none', label: 'No policy' },
];

// Dark enough for 4.5:1 on white at 12 px (teal.8 and red.8 are not).
const COLORS: Record<ComplianceState, string> = { compliant: 'teal.9', pending: 'blue.8', failing: 'red.9', none: 'dimmed' };

/** "Policies: all 12 done"; nothing for a device the server does not count (unenrolled). */
export function ComplianceLine({ compliance }: { compliance: DeviceCompliance | null }) {
  if (!compliance) return null;
  const counts = [
    `${compliance.done} of ${compliance.total} done`,
    compliance.failed ? `${compliance.failed} failed` : '',
    compliance.incompatible ? `${compliance.incompatible} incompatible` : '',
    compliance.pending + compliance.in_progress ? `${compliance.pending + compliance.in_progress} pending` : '',
    compliance.overriden ? `${compliance.overriden} overriden by the device's own value` : '',
  ].filter(Boolean);
  return (
    <Tooltip
      label={compliance.state === 'none' ? 'No policy or deployment applies to this device' : `Policies: ${counts.join(' · ')}`}
      openDelay={300}
    >
      <Text size="xs" truncate>
        <Text span size="xs" c="dimmed">
          Policies:{' '}
        </Text>
        <Text
          span
          size="xs"
          fw={compliance.state === 'failing' ? 600 : undefined}
          c={COLORS[compliance.state]}
          data-testid="device-compliance"
          data-compliance={compliance.state}
        >
          {compliance.summary}
        </Text>
      </Text>
    </Tooltip>
  );
}
