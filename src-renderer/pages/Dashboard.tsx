import { FunnelChart } from '@mantine/charts';
import {
  Alert,
  Anchor,
  Button,
  Card,
  Group,
  Paper,
  ScrollArea,
  SimpleGrid,
  Stack,
  Table,
  Text,
  ThemeIcon,
  Title,
} from '@mantine/core';
import {
  IconAlertTriangle,
  IconBan,
  IconCircleCheck,
  IconDeviceMobile,
  IconFile,
  IconInfoCircle,
  IconMail,
  IconSettings,
  IconTrash,
  IconWifi,
} from '@tabler/icons-react';
import type { ReactNode } from 'react';
import { useCompliance, useFeed, useFleets, useStatus } from '../api/queries.ts';
import type { LiveEvent, ServerStatus } from '../../src-shared/contract/index.ts';
import { Link } from '../lib/router.tsx';
import { AgentAppNote } from '../features/agent-app.tsx';
import { CopyIcon, EmptyState, PageHeader, QueryView, RelativeTime } from '../components/common.tsx';
import { funnelOf } from '../lib/dashboard.ts';
import { UnreachableWarning } from '../features/reachability.tsx';

function Stat({
  label,
  value,
  hint,
  color,
  icon,
}: {
  label: string;
  value: number;
  hint?: string;
  color: string;
  icon: ReactNode;
}) {
  return (
    <Paper withBorder p="md" radius="md">
      <Group justify="space-between" align="flex-start" wrap="nowrap">
        <div>
          <Text c="dimmed" size="xs" tt="uppercase" fw={700}>
            {label}
          </Text>
          <Text fw={700} fz={28} lh={1.2} data-testid={`stat-${label.toLowerCase().replace(/\s+/g, '-')}`}>
            {value.toLocaleString()}
          </Text>
          {hint ? (
            <Text c="dimmed" size="xs">
              {hint}
            </Text>
          ) : null}
        </div>
        <ThemeIcon color={color} variant="light" size={38} radius="md">
          {icon}
        </ThemeIcon>
      </Group>
    </Paper>
  );
}

function Funnel({ status }: { status: ServerStatus }) {
  const steps = funnelOf(status.counts);
  return (
    <Card withBorder radius="md" p="md">
      <Title order={4} mb={4}>
        Enrollment funnel
      </Title>
      <Text c="dimmed" size="sm" mb="md">
        From an invitation or an enrollment code to a device that is connected right now.
      </Text>
      {steps[0]!.value === 0 ? (
        <EmptyState title="Nothing to show yet">
          Invite someone and the funnel fills as their device enrolls and comes online.
        </EmptyState>
      ) : (
        <Group align="center" wrap="wrap" gap="xl">
          {/* A picture of the table beside it: hidden from screen readers and out of the tab order. */}
          <div aria-hidden inert>
            <FunnelChart
              data={steps.map((step) => ({ name: step.label, value: step.value, color: step.color }))}
              size={200}
              withTooltip={false}
              valueFormatter={(value) => value.toLocaleString()}
            />
          </div>
          <Table withRowBorders={false} verticalSpacing={6} w="auto" aria-label="Enrollment funnel">
            <Table.Tbody>
              {steps.map((step) => (
                <Table.Tr key={step.label} data-testid={`funnel-${step.label.toLowerCase().split(' ')[0]}`}>
                  <Table.Td style={{ verticalAlign: 'top' }}>
                    <Group gap={8} wrap="nowrap">
                      <span
                        style={{
                          width: 10,
                          height: 10,
                          borderRadius: 3,
                          background: `var(--mantine-color-${step.color.replace('.', '-')})`,
                        }}
                      />
                      <Text size="sm">{step.label}</Text>
                    </Group>
                    <Text size="xs" c="dimmed" ml={18} maw={260} data-testid="funnel-means">
                      {step.means}
                    </Text>
                  </Table.Td>
                  <Table.Td ta="right" style={{ verticalAlign: 'top' }}>
                    <Text size="sm" fw={600} data-testid="funnel-value">
                      {step.value.toLocaleString()}
                    </Text>
                  </Table.Td>
                  <Table.Td ta="right" style={{ verticalAlign: 'top' }}>
                    <Text size="xs" c="dimmed" style={{ whiteSpace: 'nowrap' }}>
                      {step.rate}
                    </Text>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Group>
      )}
    </Card>
  );
}

function Row({ label, children }: { label: string; children: ReactNode }) {
  return (
    <Table.Tr>
      <Table.Th w={170} fw={500} c="dimmed" style={{ verticalAlign: 'top' }}>
        {label}
      </Table.Th>
      <Table.Td>{children}</Table.Td>
    </Table.Tr>
  );
}

function Copyable({ value, what }: { value: string; what: string }) {
  return (
    <Group gap={4} wrap="nowrap" justify="space-between">
      <Text className="mono" size="sm">
        {value}
      </Text>
      <CopyIcon value={value} label={`Copy ${what}`} />
    </Group>
  );
}

const BROKER_NAMES: Record<string, string> = { embedded: 'Embedded', mosquitto: 'Mosquitto', rabbitmq: 'RabbitMQ cluster' };

/** The broker mode, where agents connect, and whether the backend reaches an external broker. */
function BrokerLine({ status }: { status: ServerStatus }) {
  const mqtt = status.mqtt;
  const mode = status.mqtt_broker;
  if (mode === 'embedded') {
    return (
      <Text size="sm" data-testid="broker-mode">
        Embedded · port {status.mqtt_port} · TLS port {status.mqtt_tls_port}
      </Text>
    );
  }
  const endpoint = mqtt?.agent_endpoint;
  return (
    <Stack gap={2} data-testid="broker-mode">
      <Text size="sm">
        {BROKER_NAMES[mode] ?? mode} {mqtt?.url ? <span className="mono">{mqtt.url}</span> : null}
      </Text>
      {endpoint ? (
        <Text size="xs" c="dimmed">
          agents connect to {endpoint.host}:{endpoint.port}
          {endpoint.tls ? ' (TLS)' : ''}
        </Text>
      ) : null}
      <Text size="xs" c={mqtt?.connected ? 'teal' : 'red'}>
        {mqtt?.connected ? 'connected' : `not connected: ${mqtt?.problem ?? 'unknown'} (retrying)`}
      </Text>
    </Stack>
  );
}

function ServerCard({ status }: { status: ServerStatus }) {
  const fingerprint = status.mqtt_tls_fingerprint;
  return (
    <Card withBorder radius="md" p="md">
      <Group justify="space-between" mb="xs">
        <Title order={4}>Server</Title>
        <Button component={Link} to="/settings" variant="subtle" size="xs" leftSection={<IconSettings size={14} />}>
          Settings
        </Button>
      </Group>
      <Table verticalSpacing={6} data-testid="server-status">
        <Table.Tbody>
          <Row label="Agent API (base URL)">
            <Copyable value={status.api_url} what="agent API URL" />
          </Row>
          <Row label="Deeplink page">
            <Copyable value={`${status.deeplink_url}/deeplink/`} what="deeplink page URL" />
          </Row>
          <Row label="Agent app">
            <AgentAppNote />
          </Row>
          <Row label="Public host">
            <Text size="sm">{status.public_host}</Text>
          </Row>
          <Row label="MQTT broker">
            <BrokerLine status={status} />
          </Row>
          <Row label="TLS fingerprint">
            {fingerprint ? (
              <Copyable value={fingerprint} what="TLS fingerprint" />
            ) : (
              <Text size="sm" c="dimmed">
                Not reported by this server
              </Text>
            )}
          </Row>
          <Row label="Connected agents">
            <Text size="sm" data-testid="connected-agents">
              {status.counts.online.toLocaleString()} of {status.counts.agents.toLocaleString()}
            </Text>
          </Row>
          <Row label="Running since">
            <Text size="sm">
              <RelativeTime iso={status.started_at} />
            </Text>
          </Row>
          <Row label="Data folder">
            <Copyable value={status.data_dir} what="data folder path" />
          </Row>
        </Table.Tbody>
      </Table>
    </Card>
  );
}

const EVENT_ICONS: Record<string, { icon: ReactNode; color: string }> = {
  'agent.enrolled': { icon: <IconCircleCheck size={16} />, color: 'teal' },
  'agent.reenrolled': { icon: <IconCircleCheck size={16} />, color: 'teal' },
  'agent.deleted': { icon: <IconTrash size={16} />, color: 'gray' },
  'agent.online': { icon: <IconWifi size={16} />, color: 'teal' },
  'invitation.created': { icon: <IconMail size={16} />, color: 'indigo' },
  'invitation.refused': { icon: <IconBan size={16} />, color: 'red' },
  'enrollment.refused': { icon: <IconBan size={16} />, color: 'red' },
  'invitation.revoked': { icon: <IconBan size={16} />, color: 'orange' },
  'admin.sign_in_failed': { icon: <IconBan size={16} />, color: 'red' },
  'admin.sign_in_throttled': { icon: <IconBan size={16} />, color: 'orange' },
};

function iconOf(type: string) {
  if (EVENT_ICONS[type]) return EVENT_ICONS[type];
  if (type.startsWith('agent.')) return { icon: <IconDeviceMobile size={16} />, color: 'blue' };
  if (type.startsWith('file.') || type.startsWith('package.')) return { icon: <IconFile size={16} />, color: 'grape' };
  if (type.startsWith('invitation.') || type.startsWith('mail.')) return { icon: <IconMail size={16} />, color: 'indigo' };
  return { icon: <IconInfoCircle size={16} />, color: 'gray' };
}

function FeedItem({ event }: { event: LiveEvent }) {
  const { icon, color } = iconOf(event.type);
  const target =
    event.agent_id !== null && event.type !== 'agent.deleted'
      ? `/devices?agent=${event.agent_id}`
      : event.invitation_id !== null && event.type !== 'invitation.deleted'
        ? `/invitations/${event.invitation_id}`
        : null;
  return (
    <Group className="feed-item" gap="sm" py={8} wrap="nowrap" align="flex-start" data-event-type={event.type}>
      <ThemeIcon color={color} variant="light" size={28} radius="xl">
        {icon}
      </ThemeIcon>
      <div style={{ flex: 1, minWidth: 0 }}>
        {target ? (
          <Anchor component={Link} to={target} size="sm" c="var(--mantine-color-text)" style={{ overflowWrap: 'anywhere' }}>
            {event.message}
          </Anchor>
        ) : (
          <Text size="sm" style={{ overflowWrap: 'anywhere' }}>
            {event.message}
          </Text>
        )}
        <Text size="xs" c="dimmed">
          <RelativeTime iso={event.at} /> · {event.type}
        </Text>
      </div>
    </Group>
  );
}

function ActivityFeed() {
  const feed = useFeed();
  return (
    <Card withBorder radius="md" p="md" h="100%">
      <Title order={4} mb={4}>
        Live activity
      </Title>
      <Text c="dimmed" size="sm" mb="xs">
        What happens on this server, as it happens.
      </Text>
      <QueryView query={feed}>
        {(events) =>
          events.length === 0 ? (
            <EmptyState title="No activity yet" />
          ) : (
            <ScrollArea.Autosize mah={620} type="auto" scrollbars="y" offsetScrollbars>
              <div aria-live="polite" aria-relevant="additions" data-testid="activity-feed">
                {events.map((event) => (
                  <FeedItem key={event.id} event={event} />
                ))}
              </div>
            </ScrollArea.Autosize>
          )
        }
      </QueryView>
    </Card>
  );
}

/** Per fleet: how many of its devices follow every policy, are still applying some, or fail some. */
function ComplianceCard() {
  const compliance = useCompliance(null);
  const fleets = useFleets();
  return (
    <Card withBorder radius="md" p="md">
      <Title order={4} mb={4}>
        Compliance
      </Title>
      <Text c="dimmed" size="sm" mb="xs">
        Devices per fleet that follow every policy, are still applying some, or fail some (failed or incompatible).
      </Text>
      <QueryView query={compliance}>
        {(devices) => {
          const rows = (fleets.data ?? [])
            .map((fleet) => {
              const mine = devices.filter((d) => d.fleet_id === fleet.id);
              const count = (state: string) => mine.filter((d) => d.state === state).length;
              return {
                fleet,
                total: mine.length,
                compliant: count('compliant'),
                pending: count('pending'),
                failing: count('failing'),
              };
            })
            .filter((row) => row.total > 0);
          return rows.length === 0 ? (
            <EmptyState title="No enrolled device yet" />
          ) : (
            <Table fz="sm" verticalSpacing={4} data-testid="compliance-summary">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Fleet</Table.Th>
                  <Table.Th>Compliant</Table.Th>
                  <Table.Th>Applying</Table.Th>
                  <Table.Th>Failing</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {rows.map((row) => (
                  <Table.Tr key={row.fleet.id} data-fleet-id={row.fleet.id}>
                    <Table.Td>
                      <Link to={`/fleets/${row.fleet.id}`}>{row.fleet.name}</Link>
                    </Table.Td>
                    <Table.Td>
                      {row.compliant} of {row.total}
                    </Table.Td>
                    <Table.Td>{row.pending}</Table.Td>
                    <Table.Td c={row.failing > 0 ? 'red' : undefined}>{row.failing}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          );
        }}
      </QueryView>
    </Card>
  );
}

export function Dashboard() {
  const status = useStatus();
  return (
    <>
      <PageHeader
        title="Dashboard"
        description="Invitations, devices and the server at a glance."
        actions={
          <Button component={Link} to="/invitations?new=1" leftSection={<IconMail size={16} />}>
            Invite someone
          </Button>
        }
      />
      <QueryView query={status}>
        {(data) => (
          <Stack gap="lg">
            <UnreachableWarning />
            {data.warnings
              .filter((warning) => !/loopback/i.test(warning))
              .map((warning) => (
                <Alert key={warning} color="orange" variant="light" icon={<IconAlertTriangle size={18} />} title="Warning">
                  <Text size="sm">{warning}</Text>
                </Alert>
              ))}
            {data.counts.pending_approval > 0 ? (
              <Alert
                color="orange"
                variant="light"
                icon={<IconDeviceMobile size={18} />}
                title="Devices waiting for approval"
                data-testid="waiting-approval"
              >
                <Group justify="space-between">
                  <Text size="sm">
                    <Text span fw={700} data-testid="waiting-approval-count">
                      {data.counts.pending_approval.toLocaleString()}
                    </Text>{' '}
                    {data.counts.pending_approval === 1
                      ? "device enrolled with an enrollment code waits for an admin's approval before it can connect."
                      : "devices enrolled with an enrollment code wait for an admin's approval before they can connect."}
                  </Text>
                  <Button component={Link} to="/approvals" size="xs" variant="light" color="orange">
                    Review
                  </Button>
                </Group>
              </Alert>
            ) : null}
            <SimpleGrid cols={{ base: 2, md: 4 }}>
              <Stat
                label="Invitations"
                value={data.counts.invitations}
                hint={`${data.counts.used.toLocaleString()} used so far`}
                color="indigo"
                icon={<IconMail size={20} />}
              />
              <Stat
                label="Pending"
                value={data.counts.pending}
                hint="not used, not expired"
                color="blue"
                icon={<IconMail size={20} />}
              />
              <Stat
                label="Enrolled"
                value={data.counts.enrolled}
                hint={`${data.counts.agents.toLocaleString()} device${data.counts.agents === 1 ? '' : 's'} in all`}
                color="teal"
                icon={<IconDeviceMobile size={20} />}
              />
              <Stat
                label="Online"
                value={data.counts.online}
                hint="connected to the broker"
                color="green"
                icon={<IconWifi size={20} />}
              />
            </SimpleGrid>
            <SimpleGrid cols={{ base: 1, lg: 2 }} spacing="lg">
              <Stack gap="lg">
                <Funnel status={data} />
                <ComplianceCard />
                <ServerCard status={data} />
              </Stack>
              <ActivityFeed />
            </SimpleGrid>
          </Stack>
        )}
      </QueryView>
    </>
  );
}
