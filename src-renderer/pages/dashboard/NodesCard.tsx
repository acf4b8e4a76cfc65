import { Card, Group, Stack, Table, Text, Title } from '@mantine/core';
import type { ClusterNode, ServerStatus } from '../../../src-shared/contract/index.ts';
import { useStatus } from '../../api/queries.ts';
import { RelativeTime } from '../../components/common.tsx';

const BROKER_NAMES: Record<string, string> = { embedded: 'embedded broker', mosquitto: 'Mosquitto', rabbitmq: 'RabbitMQ' };

// The light variants' text colours: those the theme makes pass 4.5:1 on white (app/theme.ts).
function State({ node }: { node: ClusterNode }) {
  const [color, label, title] = node.live
    ? ['var(--mantine-color-teal-light-color)', 'live', 'Heard from within the last seconds']
    : node.stopped_at
      ? ['dimmed', 'stopped', 'Stopped cleanly']
      : [
          'var(--mantine-color-red-light-color)',
          'silent',
          'No recent heartbeat, and not stopped cleanly: killed, or cut off from the database',
        ];
  return (
    <Text size="sm" fw={500} c={color} title={title} style={{ whiteSpace: 'nowrap' }}>
      ● {label}
    </Text>
  );
}

/** The nodes serving this database (the node registry): one on SQLite, several behind a load balancer. */
export function NodesCard({ status }: { status: ServerStatus }) {
  // Heartbeats announce no event: with several nodes the card asks again every 15 s.
  useStatus({ refetchMs: status.nodes.length > 1 ? 15_000 : false });
  const live = status.nodes.filter((node) => node.live).length;
  return (
    <Card withBorder radius="md" p="md" data-testid="nodes-card">
      <Group justify="space-between" mb="xs">
        <Title order={4}>Nodes</Title>
        <Text size="sm" c="dimmed">
          {live} of {status.nodes.length} live
        </Text>
      </Group>
      <Table verticalSpacing={6} data-testid="nodes">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Node</Table.Th>
            <Table.Th>Address</Table.Th>
            <Table.Th>State</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {status.nodes.map((node) => (
            <Table.Tr key={node.name} data-testid="node-row">
              <Table.Td>
                <Stack gap={0}>
                  <Text size="sm" fw={500} style={{ whiteSpace: 'nowrap' }}>
                    {node.name}
                  </Text>
                  <Text size="xs" c="dimmed">
                    {node.this_node ? 'this node · ' : ''}
                    {node.version} · {BROKER_NAMES[node.mqtt_broker] ?? node.mqtt_broker}
                  </Text>
                </Stack>
              </Table.Td>
              <Table.Td>
                <Stack gap={0}>
                  <Text size="sm" className="mono" style={{ whiteSpace: 'nowrap' }} title="Admin API and console">
                    {node.admin_url}
                  </Text>
                  <Text size="xs" c="dimmed" className="mono" style={{ whiteSpace: 'nowrap' }} title="Agent API">
                    {node.agent_url}
                  </Text>
                </Stack>
              </Table.Td>
              <Table.Td>
                <State node={node} />
                <Text size="xs" c="dimmed" style={{ whiteSpace: 'nowrap' }}>
                  heard <RelativeTime iso={node.last_heartbeat} />
                </Text>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Card>
  );
}
