import { Button, Card, Group, Stack, Table, Text, Title } from '@mantine/core';
import { IconSettings } from '@tabler/icons-react';
import type { ReactNode } from 'react';
import type { ServerStatus } from '../../../src-shared/contract/index.ts';
import { Link } from '../../lib/router.tsx';
import { AgentAppNote } from '../../features/agent-app.tsx';
import { CopyIcon, RelativeTime } from '../../components/common.tsx';

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

export function ServerCard({ status }: { status: ServerStatus }) {
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
