import { Badge, Card, Group, Stack, Table, Text, Title } from '@mantine/core';
import type { ClusterNode, ServerStatus } from '../../../src-shared/contract/index.ts';
import { useStatus } from '../../api/queries.ts';
import { RelativeTime } from '../../components/common.tsx';

const BROKER_NAMES: Record<string, string> = { embedded: 'embedded', mosquitto: 'Mosquitto', rabbitmq: 'RabbitMQ' };

function State({ node }: { node: ClusterNode }) {
  if (node.live)
    return (
      <Badge color="teal" variant="light">
        live
      </Badge>
    );
  if (node.stopped_at)
    return (
      <Badge color="gray" variant="light">
        stopped
      </Badge>
    );
  return (
    <Badge color="red" variant="light" title="No recent heartbeat, and not stopped cleanly: killed, or cut off from the database">
      silent
    </Badge>
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
            <Table.Th>Version</Table.Th>
            <Table.Th>Heartbeat</Table.Th>
            <Table.Th>State</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {status.nodes.map((node) => (
            <Table.Tr key={node.name} data-testid="node-row">
              <Table.Td>
                <Stack gap={0}>
                  <Text size="sm" fw={500}>
                    {node.name}
                  </Text>
                  <Text size="xs" c="dimmed">
                    {node.this_node ? 'this node · ' : ''}broker {BROKER_NAMES[node.mqtt_broker] ?? node.mqtt_broker}
                  </Text>
                </Stack>
              </Table.Td>
              <Table.Td>
                <Stack gap={0}>
                  <Text size="sm" className="mono">
                    {node.admin_url}
                  </Text>
                  <Text size="xs" c="dimmed" className="mono">
                    {node.agent_url}
                  </Text>
                </Stack>
              </Table.Td>
              <Table.Td>
                <Text size="sm">{node.version}</Text>
              </Table.Td>
              <Table.Td>
                <Text size="sm">
                  <RelativeTime iso={node.last_heartbeat} />
                </Text>
              </Table.Td>
              <Table.Td>
                <State node={node} />
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Card>
  );
}
