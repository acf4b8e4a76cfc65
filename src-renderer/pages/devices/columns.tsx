import { Badge, Group, Text, Tooltip } from '@mantine/core';
import { IconCircleFilled, IconEraser, IconLock } from '@tabler/icons-react';
import {
  columnFilteringFeature,
  columnSizingFeature,
  createColumnHelper,
  createFilteredRowModel,
  createSortedRowModel,
  filterFn_equalsString,
  globalFilteringFeature,
  rowSortingFeature,
  sortFn_alphanumeric,
  sortFn_basic,
  sortFn_datetime,
  tableFeatures,
} from '@tanstack/react-table';
import type { ReactNode } from 'react';
import type { AgentSummary, DeviceCompliance } from '../../../src-shared/contract/index.ts';
import { useNow } from '../../components/common.tsx';
import { enrollStatusOf } from '../../lib/devices.ts';
import { fullName, relativeTime } from '../../lib/format.ts';
import { ComplianceLine } from './compliance.tsx';

/** A row of the devices table: the device, and its compliance (null for a device not counted: unenrolled). */
export type DeviceRow = AgentSummary & { compliance: DeviceCompliance | null };
type Agent = DeviceRow;

// The devices table's features, its five columns and their cells.
export const features = tableFeatures({
  columnSizingFeature,
  rowSortingFeature,
  sortedRowModel: createSortedRowModel(),
  sortFns: { alphanumeric: sortFn_alphanumeric, basic: sortFn_basic, datetime: sortFn_datetime },
  columnFilteringFeature,
  globalFilteringFeature,
  filteredRowModel: createFilteredRowModel(),
  filterFns: { equalsString: filterFn_equalsString },
});

const helper = createColumnHelper<typeof features, Agent>();
export const ROW_HEIGHT = 44;

/** Plain text cut with an ellipsis when the column is too narrow (cells are flex boxes). */
const plainCell = (info: { getValue: () => unknown }) => (
  <Text size="sm" truncate title={String(info.getValue() ?? '')}>
    {String(info.getValue() ?? '')}
  </Text>
);

/** A main value over a dimmed second one (type and version, model and OS), each cut with an ellipsis. */
function TwoLines({ first, second }: { first: string | null | undefined; second: string | null | undefined }) {
  return (
    <div style={{ minWidth: 0, lineHeight: 1.25 }}>
      <Text size="sm" truncate title={first ?? undefined}>
        {first || '—'}
      </Text>
      {second ? (
        <Text size="xs" c="dimmed" truncate title={second}>
          {second}
        </Text>
      ) : null}
    </div>
  );
}

/** A small icon beside the status that marks a state (locked, wipe ordered), named for screen readers. */
function StateIcon({
  tooltip,
  color,
  testId,
  label,
  children,
}: {
  tooltip: string;
  color: string;
  testId: string;
  label: string;
  children: ReactNode;
}) {
  return (
    <Tooltip label={tooltip}>
      <Text span c={color} lh={0} data-testid={testId} aria-label={label} role="img">
        {children}
      </Text>
    </Tooltip>
  );
}

/** What the device is: its model and OS once it has sent an inventory, else its agent app. */
function modelLine(agent: Agent): { line: string; full: string } {
  const app = `${agent.type} agent ${agent.version}`;
  const hardware = [agent.model, [agent.os_name, agent.os_version].filter(Boolean).join(' ')].filter(Boolean).join(' · ');
  return { line: hardware || app, full: hardware ? `${hardware} · ${app}` : app };
}

// Widths in px; the person column takes what is left. Five columns of two lines each (what was
// nine: the model under the device, online beside the last contact, compliance under the status)
// add up to 860 px (with the 32 px selection box: 892), so every column shows uncut in a 1,280 px window with the navigation open.
export const columns = helper.columns([
  helper.accessor('name', {
    id: 'name',
    header: 'Device',
    size: 150,
    sortFn: 'alphanumeric',
    cell: (info) => {
      const agent = info.row.original;
      const id = agent.serial ?? agent.uuid ?? '';
      const model = modelLine(agent);
      return (
        <div style={{ minWidth: 0, lineHeight: 1.25 }}>
          <Text
            size="sm"
            fw={500}
            truncate
            title={id && id !== info.getValue() ? `${info.getValue()} (serial ${id})` : info.getValue()}
          >
            {info.getValue()}
          </Text>
          <Text size="xs" c="dimmed" truncate title={model.full} data-testid="device-model">
            {model.line}
          </Text>
        </div>
      );
    },
  }),
  helper.accessor((agent) => agent.email ?? '', {
    id: 'person',
    header: 'Person',
    size: 220,
    sortFn: 'alphanumeric',
    cell: (info) => {
      const agent = info.row.original;
      const name = fullName(agent);
      return <TwoLines first={agent.email ?? '—'} second={name} />;
    },
  }),
  helper.accessor('fleet', {
    id: 'fleet',
    header: 'Fleet',
    size: 160,
    filterFn: 'equalsString',
    sortFn: 'alphanumeric',
    cell: plainCell,
  }),
  helper.accessor('enroll_status', {
    id: 'enroll_status',
    header: 'Status, compliance',
    size: 190,
    filterFn: 'equalsString',
    sortFn: 'alphanumeric',
    // The enrollment status over the device's compliance (the policies in force on it).
    cell: (info) => {
      const status = enrollStatusOf(info.getValue());
      const { lock, wipe, compliance } = info.row.original;
      return (
        <div style={{ minWidth: 0, lineHeight: 1.25 }}>
          <Group gap={4} wrap="nowrap">
            <Badge color={status.color} variant="light" size="sm" data-testid="enroll-status">
              {status.label}
            </Badge>
            {lock ? (
              <StateIcon tooltip="Locked (a lock command was sent)" color="orange.8" testId="device-locked" label="Locked">
                <IconLock size={16} />
              </StateIcon>
            ) : null}
            {wipe ? (
              <StateIcon
                tooltip="Wipe ordered: the device erases itself when it gets the command"
                color="red.8"
                testId="device-wiped"
                label="Wipe ordered"
              >
                <IconEraser size={16} />
              </StateIcon>
            ) : null}
          </Group>
          <ComplianceLine compliance={compliance} />
        </div>
      );
    },
  }),
  // Online or not, over when the device was last heard from.
  helper.accessor((agent) => agent.last_contact ?? undefined, {
    id: 'last_contact',
    header: 'Last contact',
    size: 140,
    sortFn: 'alphanumeric',
    sortUndefined: 'last',
    cell: (info) => <LastContact iso={info.getValue() ?? null} online={info.row.original.is_online} />,
  }),
]);

function LastContact({ iso, online }: { iso: string | null; online: boolean }) {
  const now = useNow(30_000);
  return (
    <div style={{ minWidth: 0, lineHeight: 1.25 }}>
      <Group gap={6} wrap="nowrap" data-testid="online" data-online={String(online)}>
        <IconCircleFilled size={10} color={online ? 'var(--mantine-color-green-6)' : 'var(--mantine-color-gray-5)'} />
        <Text size="sm" c={online ? undefined : 'dimmed'}>
          {online ? 'Online' : 'Offline'}
        </Text>
      </Group>
      <Text size="xs" c="dimmed" title={iso ?? undefined}>
        {relativeTime(iso, Math.max(now, Date.now()), { past: true })}
      </Text>
    </div>
  );
}
