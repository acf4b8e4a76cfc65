import { ActionIcon, Badge, Button, Group, Stack, Table, Text, TextInput, Tooltip } from '@mantine/core';
import { IconCheck, IconPencil, IconPlus, IconX } from '@tabler/icons-react';
import { useState } from 'react';
import { useCreateFleet, useFleets, useRenameFleet } from '../../api/queries.ts';
import type { Fleet } from '../../../src-shared/contract/index.ts';
import { notifyError, QueryView } from '../../components/common.tsx';

import { Section } from './Section.tsx';
import { Gate } from '../../components/permissions.tsx';

function FleetRow({ fleet }: { fleet: Fleet }) {
  const rename = useRenameFleet();
  const [editing, setEditing] = useState(false);
  const [name, setName] = useState(fleet.name);
  return (
    <Table.Tr>
      <Table.Td>
        {editing ? (
          <Group gap={4} wrap="nowrap">
            <TextInput
              size="xs"
              value={name}
              onChange={(e) => setName(e.currentTarget.value)}
              aria-label={`New name of ${fleet.name}`}
              data-autofocus
              autoFocus
              onKeyDown={(e) => {
                if (e.key === 'Escape') setEditing(false);
              }}
            />
            <ActionIcon
              aria-label="Save the name"
              variant="light"
              loading={rename.isPending}
              disabled={name.trim() === '' || name.trim() === fleet.name}
              onClick={() =>
                rename.mutate(
                  { id: fleet.id, name: name.trim() },
                  { onSuccess: () => setEditing(false), onError: (e) => notifyError('Not renamed', e) },
                )
              }
            >
              <IconCheck size={14} />
            </ActionIcon>
            <ActionIcon aria-label="Cancel" variant="subtle" color="gray" onClick={() => setEditing(false)}>
              <IconX size={14} />
            </ActionIcon>
          </Group>
        ) : (
          <Group gap={6}>
            <Text size="sm">{fleet.name}</Text>
            {fleet.is_default ? (
              <Badge size="xs" variant="light">
                default
              </Badge>
            ) : null}
          </Group>
        )}
      </Table.Td>
      <Table.Td ta="right">{fleet.agent_count.toLocaleString()}</Table.Td>
      <Table.Td w={50}>
        {!editing ? (
          <Gate permission="fleets.write">
            <Tooltip label="Rename">
              <ActionIcon
                variant="subtle"
                color="gray"
                aria-label={`Rename ${fleet.name}`}
                onClick={() => {
                  setName(fleet.name);
                  setEditing(true);
                }}
              >
                <IconPencil size={16} />
              </ActionIcon>
            </Tooltip>
          </Gate>
        ) : null}
      </Table.Td>
    </Table.Tr>
  );
}

/** The fleets: each renamed in place, and a new one added. */
export function FleetsSection() {
  const fleets = useFleets();
  const create = useCreateFleet();
  const [name, setName] = useState('');
  return (
    <Section title="Fleets" description="Groups of devices: an invitation names the fleet its device joins.">
      <QueryView query={fleets}>
        {(items) => (
          <Stack>
            <Table verticalSpacing={6} data-testid="fleets">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Name</Table.Th>
                  <Table.Th ta="right">Devices</Table.Th>
                  <Table.Th />
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {items.map((fleet) => (
                  <FleetRow key={fleet.id} fleet={fleet} />
                ))}
              </Table.Tbody>
            </Table>
            <form
              onSubmit={(e) => {
                e.preventDefault();
                if (!name.trim()) return;
                create.mutate(name.trim(), {
                  onSuccess: () => setName(''),
                  onError: (err) => notifyError('No fleet created', err),
                });
              }}
            >
              <Group gap="sm" align="flex-end">
                <TextInput
                  label="New fleet"
                  placeholder="Sales phones"
                  value={name}
                  onChange={(e) => setName(e.currentTarget.value)}
                  maxLength={100}
                />
                <Gate permission="fleets.write">
                  <Button
                    type="submit"
                    variant="default"
                    leftSection={<IconPlus size={16} />}
                    loading={create.isPending}
                    disabled={!name.trim()}
                  >
                    Add fleet
                  </Button>
                </Gate>
              </Group>
            </form>
          </Stack>
        )}
      </QueryView>
    </Section>
  );
}
