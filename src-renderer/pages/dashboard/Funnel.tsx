import { FunnelChart } from '@mantine/charts';
import { Card, Group, Table, Text, Title } from '@mantine/core';
import type { ServerStatus } from '../../../src-shared/contract/index.ts';
import { EmptyState } from '../../components/common.tsx';
import { funnelOf } from '../../lib/dashboard.ts';

export function Funnel({ status }: { status: ServerStatus }) {
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
