import {
  ActionIcon,
  Badge,
  Button,
  Card,
  Grid,
  Group,
  Modal,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
  Tooltip,
} from '@mantine/core';
import { IconPencil, IconPlus, IconTrash } from '@tabler/icons-react';
import { useMemo, useState } from 'react';
import { useAgents, useCreateFleet, useDeleteFleet, useFleets, useRenameFleet } from '../api/queries.ts';
import type { Fleet } from '../../src-shared/contract/index.ts';
import { Link, navigate } from '../lib/router.tsx';
import { confirmAction, EmptyState, notifyError, notifySuccess, PageHeader, QueryView } from '../components/common.tsx';
import { DeploymentList } from '../features/deployments.tsx';
import { ExportMenu } from '../components/export-menu.tsx';
import { FleetPolicies } from '../features/policies.tsx';
import { Gate } from '../components/permissions.tsx';

function RenameModal({ fleet, onClose }: { fleet: Fleet | null; onClose: () => void }) {
  const rename = useRenameFleet();
  const [name, setName] = useState('');
  return (
    <Modal opened={fleet !== null} onClose={onClose} title={fleet ? `Rename "${fleet.name}"` : ''}>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (!fleet) return;
          rename.mutate(
            { id: fleet.id, name },
            {
              onSuccess: () => (notifySuccess(`Fleet renamed to "${name}"`), onClose()),
              onError: (e) => notifyError('Not renamed', e),
            },
          );
        }}
      >
        <Stack>
          <TextInput
            label="New name"
            data-autofocus
            defaultValue={fleet?.name}
            onChange={(e) => setName(e.currentTarget.value)}
            maxLength={100}
            required
          />
          <Group justify="flex-end">
            <Gate permission="fleets.write">
              <Button type="submit" loading={rename.isPending} disabled={name.trim() === ''}>
                Rename
              </Button>
            </Gate>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

function FleetList({ fleets, selected }: { fleets: Fleet[]; selected: number | null }) {
  const create = useCreateFleet();
  const remove = useDeleteFleet();
  const [name, setName] = useState('');
  const [renaming, setRenaming] = useState<Fleet | null>(null);
  return (
    <Stack gap="sm">
      <form
        onSubmit={(event) => {
          event.preventDefault();
          create.mutate(name.trim(), {
            onSuccess: (fleet) => {
              setName('');
              notifySuccess(`Fleet "${fleet.name}" created`);
              navigate(`/fleets/${fleet.id}`);
            },
            onError: (e) => notifyError('Not created', e),
          });
        }}
      >
        <Group gap="xs" align="flex-end" wrap="nowrap">
          <TextInput
            label="New fleet"
            placeholder="e.g. Field sales"
            value={name}
            onChange={(e) => setName(e.currentTarget.value)}
            maxLength={100}
            style={{ flex: 1 }}
          />
          <Gate permission="fleets.write">
            <Button type="submit" leftSection={<IconPlus size={16} />} loading={create.isPending} disabled={name.trim() === ''}>
              Create
            </Button>
          </Gate>
        </Group>
      </form>
      <Table highlightOnHover verticalSpacing="xs" data-testid="fleet-list">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Fleet</Table.Th>
            <Table.Th ta="right">Devices</Table.Th>
            <Table.Th w={80} />
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {fleets.map((fleet) => (
            <Table.Tr
              key={fleet.id}
              data-fleet-name={fleet.name}
              bg={fleet.id === selected ? 'var(--mantine-primary-color-light)' : undefined}
            >
              <Table.Td>
                <Link to={`/fleets/${fleet.id}`}>{fleet.name}</Link>
                {fleet.is_default ? (
                  <Badge ml="xs" size="xs" variant="light" color="gray">
                    default
                  </Badge>
                ) : null}
              </Table.Td>
              <Table.Td ta="right" data-testid="fleet-device-count">
                {fleet.agent_count}
              </Table.Td>
              <Table.Td>
                <Group gap={2} wrap="nowrap" justify="flex-end">
                  <Gate permission="fleets.write">
                    <Tooltip label="Rename">
                      <ActionIcon
                        variant="subtle"
                        color="gray"
                        aria-label={`Rename ${fleet.name}`}
                        onClick={() => setRenaming(fleet)}
                      >
                        <IconPencil size={16} />
                      </ActionIcon>
                    </Tooltip>
                  </Gate>
                  <Gate permission="fleets.write">
                    <Tooltip
                      label={
                        fleet.is_default
                          ? 'The default fleet stays'
                          : fleet.agent_count > 0
                            ? 'Move its devices out first'
                            : 'Delete'
                      }
                    >
                      <ActionIcon
                        variant="subtle"
                        color="red"
                        aria-label={`Delete ${fleet.name}`}
                        disabled={fleet.is_default === 1 || fleet.agent_count > 0}
                        onClick={() =>
                          confirmAction(
                            {
                              title: `Delete fleet "${fleet.name}"?`,
                              message: 'Its deployments are removed; invitations that name it enroll into the default fleet.',
                              confirmLabel: 'Delete',
                            },
                            () => {
                              remove.mutate(fleet.id, {
                                onSuccess: () => {
                                  notifySuccess(`Fleet "${fleet.name}" deleted`);
                                  if (selected === fleet.id) navigate('/fleets');
                                },
                                onError: (e) => notifyError('Not deleted', e),
                              });
                            },
                          )
                        }
                      >
                        <IconTrash size={16} />
                      </ActionIcon>
                    </Tooltip>
                  </Gate>
                </Group>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      <RenameModal key={renaming?.id ?? 0} fleet={renaming} onClose={() => setRenaming(null)} />
    </Stack>
  );
}

function FleetDevices({ fleetId }: { fleetId: number }) {
  const agents = useAgents();
  const members = useMemo(() => (agents.data ?? []).filter((agent) => agent.fleet_id === fleetId), [agents.data, fleetId]);
  if (members.length === 0)
    return (
      <Text size="sm" c="dimmed">
        No devices in this fleet yet: invite people into it, or move devices here from their panel.
      </Text>
    );
  return (
    <Table fz="sm" verticalSpacing={4} data-testid="fleet-devices">
      <Table.Tbody>
        {members.slice(0, 200).map((agent) => (
          <Table.Tr key={agent.id}>
            <Table.Td>
              <Link to={`/devices?agent=${agent.id}`}>{agent.name}</Link>
            </Table.Td>
            <Table.Td>{agent.email ?? ''}</Table.Td>
            {/* Its own width: a long name or address beside it wraps instead of cutting the badge. */}
            <Table.Td style={{ width: 120, minWidth: 120 }}>
              <Badge size="sm" variant="dot" color={agent.is_online ? 'green' : 'gray'}>
                {agent.is_online ? 'Online' : 'Offline'}
              </Badge>
            </Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
      {members.length > 200 ? <Table.Caption>and {members.length - 200} more (see Devices)</Table.Caption> : null}
    </Table>
  );
}

/** Fleets: device counts kept live, create, rename, delete an empty one; a fleet's devices and deployments. */
export function FleetsPage({ id }: { id: number | null }) {
  const fleets = useFleets();
  return (
    <>
      <PageHeader
        title="Fleets"
        description="Groups of devices. What is deployed to a fleet reaches each of its devices, including the ones that join later."
      />
      <QueryView query={fleets}>
        {(items) => {
          const selected = items.find((fleet) => fleet.id === id) ?? null;
          return (
            <>
              <Grid gap="lg">
                <Grid.Col span={{ base: 12, md: 4 }}>
                  <Card withBorder radius="md" p="md">
                    <FleetList fleets={items} selected={selected?.id ?? null} />
                  </Card>
                </Grid.Col>
                <Grid.Col span={{ base: 12, md: 8 }}>
                  {selected ? (
                    <Stack gap="lg">
                      <Card withBorder radius="md" p="md" data-testid="fleet-deployments">
                        <Group justify="space-between" mb="sm" wrap="wrap" gap="xs">
                          <Title order={4} style={{ overflowWrap: 'anywhere' }}>
                            Deployments to {selected.name}
                          </Title>
                          <Group gap="xs">
                            <ExportMenu
                              path="/api/policy-results/export"
                              what="results"
                              filtered
                              params={{ fleet_id: selected.id, kind: 'deployment', state: 'active' }}
                              testId="fleet-deployment-results-export"
                              label="Export results"
                              size="xs"
                            />
                            <Button component={Link} to="/files" variant="light" size="xs">
                              Deploy a file or package…
                            </Button>
                          </Group>
                        </Group>
                        <DeploymentList
                          showTarget={false}
                          filter={{ fleet_id: selected.id, state: 'active' }}
                          emptyText="Nothing is deployed to this fleet. Use “Deploy to…” on a file or package."
                        />
                      </Card>
                      <Card withBorder radius="md" p="md">
                        <Title order={4} mb="sm">
                          Devices ({selected.agent_count})
                        </Title>
                        <FleetDevices fleetId={selected.id} />
                      </Card>
                    </Stack>
                  ) : (
                    <Card withBorder radius="md" p="md">
                      <EmptyState title="Choose a fleet">Its devices and what is deployed to it are shown here.</EmptyState>
                    </Card>
                  )}
                </Grid.Col>
              </Grid>
              {selected ? (
                <Card withBorder radius="md" p="md" mt="lg">
                  <Group justify="space-between" mb="sm" wrap="wrap" gap="xs">
                    <Title order={4} style={{ overflowWrap: 'anywhere' }}>
                      Policies of {selected.name}
                    </Title>
                    <ExportMenu
                      path="/api/policy-results/export"
                      what="results"
                      filtered
                      params={{ fleet_id: selected.id, kind: 'value', state: 'active' }}
                      testId="fleet-policy-results-export"
                      label="Export results"
                      size="xs"
                    />
                  </Group>
                  <FleetPolicies fleetId={selected.id} fleetName={selected.name} />
                </Card>
              ) : null}
            </>
          );
        }}
      </QueryView>
      <Card withBorder radius="md" p="md" mt="lg">
        <Group justify="space-between" mb="sm" wrap="wrap" gap="xs">
          <Title order={4}>All deployments</Title>
          <ExportMenu
            path="/api/policy-results/export"
            what="results"
            filtered
            params={{ kind: 'deployment', state: 'active' }}
            testId="deployment-results-export"
            label="Export results"
            size="xs"
          />
        </Group>
        <DeploymentList filter={{ state: 'active' }} emptyText="Nothing is deployed yet." />
      </Card>
    </>
  );
}
