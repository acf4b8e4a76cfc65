import { Card, Table, Text, Title } from '@mantine/core';
import { useCompliance, useFleets } from '../../api/queries.ts';
import { Link } from '../../lib/router.tsx';
import { EmptyState, QueryView } from '../../components/common.tsx';

export function ComplianceCard() {
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
