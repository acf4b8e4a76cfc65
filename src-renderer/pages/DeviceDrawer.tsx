import { Badge, Button, Divider, Drawer, Group, ScrollArea, Stack, Table, Text, Title } from '@mantine/core';
import { IconCircleFilled, IconTrash } from '@tabler/icons-react';
import { AdminApiError } from '../api/client.ts';
import { useAgent, useAgentTasks, useDeleteAgent } from '../api/queries.ts';
import { DeviceTasks } from '../features/deployments.tsx';
import { DevicePolicies } from '../features/policies.tsx';
import type { AgentDetail } from '../../src-shared/contract/index.ts';
import { whoDid } from '../lib/who-did.ts';
import { Link } from '../lib/router.tsx';
import {
  confirmAction,
  EmptyState,
  CopyIcon,
  ErrorState,
  LoadingState,
  notifyError,
  notifySuccess,
  RelativeTime,
} from '../components/common.tsx';
import { AgentCommands } from '../features/agent-commands.tsx';
import { DecideButtons } from '../features/approval.tsx';
import { enrollStatusOf } from '../lib/devices.ts';
import { formatDateTime, fullName } from '../lib/format.ts';
import { Gate } from '../components/permissions.tsx';

/**
 * The agent record in an admin's words, in this order. Each row keeps the admin API's field name
 * (shown on hover, copied with the value's button) for whoever scripts against the API.
 */
const FIELD_LABELS: Record<string, string> = {
  id: 'Agent id',
  name: 'Name',
  serial: 'Serial number',
  uuid: 'UUID',
  model: 'Model',
  manufacturer: 'Manufacturer',
  os_name: 'Operating system',
  os_version: 'OS version',
  type: 'Agent app',
  version: 'Agent version',
  enroll_status: 'Status',
  is_online: 'Online',
  last_contact: 'Last contact',
  last_report: 'Last report',
  lock: 'Locked',
  wipe: 'Wipe requested',
  fleet: 'Fleet',
  fleet_id: 'Fleet id',
  email: 'Enrolled by',
  firstname: 'First name',
  lastname: 'Last name',
  invitation_id: 'Invitation',
  enrollment_code_id: 'Enrollment code',
  computer_id: 'Computer id',
  topic: 'MQTT topic',
  entity_id: 'Entity id',
  created_at: 'Enrolled',
  updated_at: 'Updated',
};
/** Shown elsewhere in the row above (the code's name beside its link). */
const FOLDED = new Set(['events', 'inventory', 'positions', 'enrollment_code']);
/** Values an admin may need elsewhere (a broker's ACL, a support ticket): with a copy button. */
const COPYABLE = new Set(['serial', 'uuid', 'topic']);

/** A field the list above does not name yet, in words rather than as `snake_case`. */
export const fieldLabel = (key: string) => FIELD_LABELS[key] ?? (key.charAt(0).toUpperCase() + key.slice(1)).replace(/_/g, ' ');

function value(key: string, raw: unknown, agent: AgentDetail) {
  if (raw === null || raw === undefined || raw === '')
    return (
      <Text span c="dimmed">
        —
      </Text>
    );
  if (key === 'invitation_id') return <Link to={`/invitations/${String(raw)}`}>Invitation {String(raw)}</Link>;
  if (key === 'enrollment_code_id')
    return (
      <Link to={`/codes/${String(raw)}`}>{agent.enrollment_code ? `“${agent.enrollment_code}”` : `Code ${String(raw)}`}</Link>
    );
  if (key === 'enroll_status') return enrollStatusOf(String(raw)).label;
  if (key === 'type') return String(raw) === 'apple' ? 'Apple (iOS)' : String(raw) === 'android' ? 'Android' : String(raw);
  if (key.endsWith('_at') || key === 'last_contact' || key === 'last_report') {
    return (
      <>
        {formatDateTime(String(raw))} (<RelativeTime iso={String(raw)} />)
      </>
    );
  }
  if (typeof raw === 'boolean' || key === 'lock' || key === 'wipe') return raw ? 'yes' : 'no';
  if (typeof raw === 'object') return <span className="mono">{JSON.stringify(raw)}</span>;
  if (COPYABLE.has(key))
    return (
      <Group gap={4} wrap="nowrap" justify="space-between">
        <span className="mono">{String(raw)}</span>
        <CopyIcon value={String(raw)} label={`Copy the ${fieldLabel(key).toLowerCase()}`} />
      </Group>
    );
  return String(raw);
}

function Record({ agent }: { agent: AgentDetail }) {
  const entries = Object.entries(agent).filter(([key]) => !FOLDED.has(key));
  entries.sort(([a], [b]) => {
    const order = Object.keys(FIELD_LABELS);
    const ia = order.indexOf(a);
    const ib = order.indexOf(b);
    return (ia === -1 ? 999 : ia) - (ib === -1 ? 999 : ib);
  });
  return (
    <Table verticalSpacing={4} fz="sm" data-testid="agent-record">
      <Table.Tbody>
        {entries.map(([key, raw]) => (
          <Table.Tr key={key} data-field={key}>
            <Table.Th
              w={140}
              fw={500}
              c="dimmed"
              style={{ verticalAlign: 'top', whiteSpace: 'nowrap' }}
              title={`${key} in the admin API`}
            >
              {fieldLabel(key)}
            </Table.Th>
            <Table.Td style={{ wordBreak: 'break-word' }}>{value(key, raw, agent)}</Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}

const megabytes = (mb: number | null) => (mb === null ? '—' : mb >= 1024 ? `${(mb / 1024).toFixed(1)} GB` : `${mb} MB`);

/** What the device reported about itself: its inventory (FusionInventory XML, parsed by the server) and position. */
function InventorySection({ agent }: { agent: AgentDetail }) {
  const inventory = agent.inventory;
  const position = agent.positions[0];
  const rows: [string, React.ReactNode][] = [];
  if (inventory) {
    rows.push(['Model', [inventory.manufacturer, inventory.model].filter(Boolean).join(' ') || '—']);
    rows.push(['OS', [inventory.os_name, inventory.os_version].filter(Boolean).join(' ') || '—']);
    if (inventory.serial) rows.push(['Serial', <span className="mono">{inventory.serial}</span>]);
    if (inventory.imei) rows.push(['IMEI', <span className="mono">{inventory.imei}</span>]);
    if (inventory.battery) {
      const b = inventory.battery;
      rows.push([
        'Battery',
        [b.level, b.status, b.health && `health ${b.health}`, b.chemistry, b.capacity].filter(Boolean).join(', ') || '—',
      ]);
    }
    for (const drive of inventory.storage)
      rows.push([`Storage ${drive.name}`, `${megabytes(drive.free_mb)} free of ${megabytes(drive.total_mb)}`]);
    rows.push(['Memory', megabytes(inventory.memory_mb)]);
    rows.push([
      'Reported',
      <>
        {formatDateTime(inventory.received_at)} (<RelativeTime iso={inventory.received_at} />
        ), {inventory.source === 'enrollment' ? 'at enrollment' : `over ${inventory.source.toUpperCase()}`}
      </>,
    ]);
  }
  if (position) {
    rows.push([
      'Position',
      position.latitude === null ? (
        'GPS off'
      ) : (
        <a
          href={`https://www.openstreetmap.org/?mlat=${position.latitude}&mlon=${position.longitude}#map=15/${position.latitude}/${position.longitude}`}
          target="_blank"
          rel="noreferrer"
        >
          {position.latitude}, {position.longitude}
        </a>
      ),
    ]);
    rows.push([
      'Located',
      <>
        {formatDateTime(position.located_at)} (<RelativeTime iso={position.located_at} />)
      </>,
    ]);
  }
  return (
    <div data-testid="agent-inventory">
      <Title order={5} mb="xs">
        Inventory
      </Title>
      {rows.length === 0 ? (
        <Text size="sm" c="dimmed">
          No inventory yet. Ask a connected device with Inventory above (the Flyve agents also send one at enrollment).
        </Text>
      ) : (
        <Table verticalSpacing={4} fz="sm">
          <Table.Tbody>
            {rows.map(([label, content]) => (
              <Table.Tr key={label}>
                <Table.Th w={140} fw={500} c="dimmed" style={{ whiteSpace: 'nowrap' }}>
                  {label}
                </Table.Th>
                <Table.Td style={{ wordBreak: 'break-word' }}>{content}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      {inventory && inventory.applications.length > 0 ? (
        <details style={{ marginTop: 8 }}>
          <summary style={{ cursor: 'pointer', fontSize: 14 }}>Installed applications ({inventory.applications.length})</summary>
          <Table verticalSpacing={2} fz="xs" data-testid="agent-applications">
            <Table.Tbody>
              {inventory.applications.map((app, i) => (
                <Table.Tr key={`${app.package ?? app.name}-${i}`}>
                  <Table.Td>{app.name}</Table.Td>
                  <Table.Td className="mono">{app.package ?? ''}</Table.Td>
                  <Table.Td>{app.version ?? ''}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </details>
      ) : null}
    </div>
  );
}

function Body({ agent, onClose }: { agent: AgentDetail; onClose: () => void }) {
  const remove = useDeleteAgent();
  const tasks = useAgentTasks(agent.id);
  const status = enrollStatusOf(agent.enroll_status);
  return (
    <Stack gap="md">
      <Group justify="space-between" align="flex-start">
        <div>
          <Title order={3}>{agent.name}</Title>
          <Text c="dimmed" size="sm">
            {agent.email ?? '—'}
            {fullName(agent) ? ` · ${fullName(agent)}` : ''}
          </Text>
        </div>
        <Group gap={6}>
          <Badge color={status.color} variant="light" data-testid="drawer-enroll-status">
            {status.label}
          </Badge>
          <Badge color={agent.is_online ? 'green' : 'gray'} variant="dot" leftSection={null}>
            {agent.is_online ? 'Online' : 'Offline'}
          </Badge>
        </Group>
      </Group>
      {agent.enroll_status === 'pending_approval' ? (
        <Group gap="sm" data-testid="drawer-approval">
          <Text size="sm">Enrolled with an enrollment code that needs approval: it cannot connect until approved.</Text>
          <DecideButtons agentId={agent.id} />
        </Group>
      ) : null}
      <div>
        <Title order={5} mb="xs">
          Actions
        </Title>
        <AgentCommands agent={agent} />
        <Gate permission="devices.delete">
          <Button
            mt="sm"
            size="xs"
            color="red"
            variant="subtle"
            leftSection={<IconTrash size={14} />}
            loading={remove.isPending}
            onClick={() =>
              confirmAction(
                {
                  title: 'Delete this device?',
                  message: `${agent.name} is removed from the console and its agent account is closed: it can no longer talk to this server. The device itself is not wiped.`,
                  confirmLabel: 'Delete',
                },
                () => {
                  remove.mutate(agent.id, {
                    onSuccess: () => {
                      notifySuccess(`${agent.name} deleted`);
                      onClose();
                    },
                    onError: (e) => notifyError('Not deleted', e),
                  });
                },
              )
            }
          >
            Delete device
          </Button>
        </Gate>
      </div>
      <Divider />
      <InventorySection agent={agent} />
      <Divider />
      <div>
        <Title order={5} mb="xs">
          Policies
        </Title>
        <DevicePolicies agentId={agent.id} />
      </div>
      <Divider />
      <div>
        <Title order={5} mb="xs">
          Tasks
        </Title>
        {tasks.data ? (
          <DeviceTasks tasks={tasks.data} />
        ) : (
          <Text size="sm" c="dimmed">
            Loading…
          </Text>
        )}
      </div>
      <Divider />
      <div>
        <Title order={5} mb="xs">
          Agent record
        </Title>
        <Record agent={agent} />
      </div>
      <Divider />
      <div>
        <Title order={5} mb="xs">
          History
        </Title>
        {agent.events.length === 0 ? (
          <Text size="sm" c="dimmed">
            No events.
          </Text>
        ) : (
          <Stack gap={6} data-testid="agent-history">
            {agent.events.map((event) => (
              <Group key={event.id} gap="sm" wrap="nowrap" align="baseline">
                <IconCircleFilled size={8} color="var(--mantine-color-dimmed)" style={{ flexShrink: 0 }} />
                <div>
                  {whoDid(event) ? (
                    <Text size="sm" fw={500} data-testid="history-actor">
                      {whoDid(event)}
                    </Text>
                  ) : null}
                  <Text size="sm">{event.message}</Text>
                  <Text size="xs" c="dimmed">
                    <RelativeTime iso={event.at} /> · {event.type}
                  </Text>
                </div>
              </Group>
            ))}
          </Stack>
        )}
      </div>
    </Stack>
  );
}

/** The detail panel of one device: the whole record, its history and its actions. */
export function DeviceDrawer({ id, onClose }: { id: number | null; onClose: () => void }) {
  const agent = useAgent(id);
  return (
    <Drawer
      opened={id !== null}
      onClose={onClose}
      position="right"
      size="lg"
      title="Device"
      scrollAreaComponent={ScrollArea.Autosize}
      data-testid="device-drawer"
    >
      {id === null ? null : agent.isPending ? (
        <LoadingState />
      ) : agent.isError ? (
        agent.error instanceof AdminApiError && agent.error.status === 404 ? (
          <EmptyState title="This device no longer exists">It was deleted.</EmptyState>
        ) : (
          <ErrorState error={agent.error} onRetry={() => void agent.refetch()} />
        )
      ) : (
        <Body agent={agent.data} onClose={onClose} />
      )}
    </Drawer>
  );
}
