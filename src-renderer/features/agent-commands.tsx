import { Button, Group, Select, Stack, Text, Tooltip } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { IconListDetails, IconLock, IconLockOpen, IconLogout, IconMapPin, IconRadar, IconTrashX } from '@tabler/icons-react';
import { useState } from 'react';
import { admin, AdminApiError } from '../api/client.ts';
import { keys, useFleets } from '../api/queries.ts';
import type { AgentSummary as Agent } from '../../src-shared/contract/index.ts';
import { confirmAction, notifyError, notifySuccess } from '../components/common.tsx';
import type { AgentCommand } from '../../src-shared/contract/rules.ts';

const COMMANDS: {
  command: AgentCommand;
  label: string;
  icon: typeof IconRadar;
  color?: string;
  confirm?: { title: string; message: (agent: Agent) => string; label: string };
}[] = [
  { command: 'ping', label: 'Ping', icon: IconRadar },
  { command: 'inventory', label: 'Inventory', icon: IconListDetails },
  { command: 'geolocate', label: 'Geolocate', icon: IconMapPin },
  {
    command: 'lock',
    label: 'Lock',
    icon: IconLock,
    confirm: {
      title: 'Lock this device?',
      message: (a) => `${a.name} locks its screen as soon as it receives the command.`,
      label: 'Lock',
    },
  },
  { command: 'unlock', label: 'Unlock', icon: IconLockOpen },
  {
    command: 'wipe',
    label: 'Wipe',
    icon: IconTrashX,
    color: 'red',
    confirm: {
      title: 'Wipe this device?',
      message: (a) => `${a.name} will be reset to factory settings: everything on it is erased. This cannot be undone.`,
      label: 'Wipe the device',
    },
  },
  {
    command: 'unenroll',
    label: 'Unenroll',
    icon: IconLogout,
    color: 'orange',
    confirm: {
      title: 'Unenroll this device?',
      message: (a) => `${a.name} leaves management: its agent removes its configuration. It needs a new invitation to come back.`,
      label: 'Unenroll',
    },
  },
];

const unavailable = (error: unknown) =>
  error instanceof AdminApiError && (error.status === 404 || error.status === 501) && error.code !== 'ERROR_ITEM_NOT_FOUND';

/** Ping, lock, unlock, wipe, unenroll and move to another fleet; destructive ones confirmed. */
export function AgentCommands({ agent }: { agent: Agent }) {
  const client = useQueryClient();
  const fleets = useFleets();
  const [fleet, setFleet] = useState<string | null>(null);
  const [missing, setMissing] = useState(false);

  const refresh = (updated?: Agent) => {
    if (updated)
      client.setQueryData<Agent[]>(keys.agentList, (list) => list?.map((a) => (a.id === updated.id ? { ...a, ...updated } : a)));
    return client.invalidateQueries({ queryKey: keys.agent(agent.id) });
  };

  const send = useMutation({
    mutationFn: (command: AgentCommand) => admin.agents.command({ params: { id: agent.id }, body: { command } }),
    onSuccess: (result, command) => {
      const label = COMMANDS.find((c) => c.command === command)!.label;
      notifySuccess(
        result.online
          ? `${label} sent to ${agent.name}.`
          : result.retained
            ? `${label} is waiting for ${agent.name}: it is delivered when the device connects.`
            : `${agent.name} is offline: the ${label.toLowerCase()} was not delivered.`,
      );
      void refresh(result.agent);
    },
    onError: (error) => (unavailable(error) ? setMissing(true) : notifyError('The command was not sent', error)),
  });

  const move = useMutation({
    mutationFn: (fleetId: number) => admin.agents.move({ params: { id: agent.id }, body: { fleet_id: fleetId } }),
    onSuccess: (updated) => {
      notifySuccess(`${agent.name} moved to ${updated.fleet}`);
      setFleet(null);
      void refresh(updated);
      void client.invalidateQueries({ queryKey: keys.fleets });
    },
    onError: (error) => (unavailable(error) ? setMissing(true) : notifyError('The device was not moved', error)),
  });

  const run = (entry: (typeof COMMANDS)[number]) => {
    const sendIt = () => send.mutate(entry.command);
    if (!entry.confirm) return sendIt();
    confirmAction(
      { title: entry.confirm.title, message: entry.confirm.message(agent), confirmLabel: entry.confirm.label },
      sendIt,
    );
  };

  const others = (fleets.data ?? []).filter((f) => f.id !== agent.fleet_id);
  return (
    <Stack gap="sm">
      {missing ? (
        <Text size="sm" c="orange">
          This server has no MQTT broker: commands and fleet moves are not available.
        </Text>
      ) : null}
      <Group gap="xs">
        {COMMANDS.map((entry) => (
          <Button
            key={entry.command}
            size="xs"
            variant={entry.color ? 'light' : 'default'}
            color={entry.color}
            leftSection={<entry.icon size={14} />}
            loading={send.isPending && send.variables === entry.command}
            disabled={missing || (send.isPending && send.variables !== entry.command)}
            onClick={() => run(entry)}
          >
            {entry.label}
          </Button>
        ))}
      </Group>
      <Group gap="xs" align="flex-end">
        <Select
          label="Move to fleet"
          placeholder={others.length ? 'Choose a fleet' : 'No other fleet'}
          data={others.map((f) => ({ value: String(f.id), label: f.name }))}
          value={fleet}
          onChange={setFleet}
          size="xs"
          w={200}
          disabled={missing || others.length === 0}
        />
        <Tooltip label="The agent is told to follow the new fleet's topic" disabled={!fleet}>
          <Button
            size="xs"
            variant="default"
            disabled={!fleet || missing}
            loading={move.isPending}
            onClick={() => fleet && move.mutate(Number(fleet))}
          >
            Move
          </Button>
        </Tooltip>
      </Group>
    </Stack>
  );
}
