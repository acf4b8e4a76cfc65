import { Button, Group, Select, Stack, Text } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { notifications } from '@mantine/notifications';
import {
  IconCheck,
  IconListDetails,
  IconLock,
  IconLockOpen,
  IconLogout,
  IconMapPin,
  IconRadar,
  IconTrashX,
} from '@tabler/icons-react';
import { useState } from 'react';
import { admin, AdminApiError } from '../api/client.ts';
import { keys, useFleets } from '../api/queries.ts';
import type { AgentSummary as Agent, StreamEvent } from '../../src-shared/contract/index.ts';
import { onLiveEvent } from '../live/LiveProvider.tsx';
import { confirmAction, notifyError, notifySuccess } from '../components/common.tsx';
import type { AgentCommand } from '../../src-shared/contract/rules.ts';
import { COMMAND_PERMISSIONS } from '../../src-shared/contract/admin-routes.ts';
import { Gate } from '../components/permissions.tsx';

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

/** How long a ping's toast waits for the answer before saying there was none. */
const PING_WAIT_MS = 30_000;
let pings = 0;

/**
 * One toast per ping: "waiting for the answer" until the device's answer (sent after
 * `afterEventId`) arrives on the live stream, then the answer and its latency; or, after
 * PING_WAIT_MS, that none came.
 */
function followPing(
  agentId: number,
  name: string,
  afterEventId: number,
  early: Array<StreamEvent & { type: 'agent.ping_reply' }>,
) {
  const id = `ping-${++pings}`;
  notifications.show({
    id,
    loading: true,
    title: `Ping sent to ${name}`,
    message: 'Waiting for its answer…',
    autoClose: false,
    withCloseButton: true,
  });
  let done = false;
  const answer = (event: StreamEvent & { type: 'agent.ping_reply' }) => {
    if (done || event.id <= afterEventId) return;
    done = true;
    stop();
    clearTimeout(timer);
    const data: Partial<NonNullable<typeof event.data>> = event.data ?? {};
    notifications.update({
      id,
      loading: false,
      color: 'teal',
      icon: <IconCheck size={16} />,
      title: `${name} answered the ping`,
      message: `Round trip ${data.rtt_ms ?? '?'} ms${data.transport ? ` over ${data.transport.toUpperCase()}` : ''}${data.payload ? ` (reply “${data.payload}”)` : ''}.`,
      autoClose: 8000,
    });
  };
  const stop = onLiveEvent((event) => {
    if (event.type === 'agent.ping_reply' && event.agent_id === agentId) answer(event);
  });
  const timer = setTimeout(() => {
    if (done) return;
    done = true;
    stop();
    notifications.update({
      id,
      loading: false,
      color: 'orange',
      title: `No answer from ${name}`,
      message: `The ping was delivered, but ${name} did not answer within ${PING_WAIT_MS / 1000} s.`,
      autoClose: 10_000,
    });
  }, PING_WAIT_MS);
  for (const event of early) answer(event);
}

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
    mutationFn: async (command: AgentCommand) => {
      // A ping's answer may arrive on the live stream before the request returns: listen first.
      const replies: Array<StreamEvent & { type: 'agent.ping_reply' }> = [];
      const stop =
        command === 'ping'
          ? onLiveEvent((event) => {
              if (event.type === 'agent.ping_reply' && event.agent_id === agent.id) replies.push(event);
            })
          : null;
      try {
        const result = await admin.agents.command({ params: { id: agent.id }, body: { command } });
        if (command === 'ping' && result.online) followPing(agent.id, agent.name, result.event_id, replies);
        return result;
      } finally {
        stop?.();
      }
    },
    onSuccess: (result, command) => {
      void refresh(result.agent);
      // A ping sent: its toast follows the answer (see followPing).
      if (command === 'ping' && result.online) return;
      const label = COMMANDS.find((c) => c.command === command)!.label;
      notifySuccess(
        result.online
          ? `${label} sent to ${agent.name}.`
          : result.retained
            ? `${label} is waiting for ${agent.name}: it is delivered when the device connects.`
            : `${agent.name} is offline: the ${label.toLowerCase()} was not delivered.`,
      );
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
          <Gate key={entry.command} permission={COMMAND_PERMISSIONS[entry.command]}>
            <Button
              size="xs"
              variant={entry.color ? 'light' : 'default'}
              color={entry.color}
              leftSection={<entry.icon size={14} />}
              loading={send.isPending && send.variables === entry.command}
              disabled={missing || (send.isPending && send.variables !== entry.command)}
              onClick={() => run(entry)}
              data-command={entry.command}
            >
              {entry.label}
            </Button>
          </Gate>
        ))}
      </Group>
      <Group gap="xs" align="flex-end">
        <Gate permission="devices.move">
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
        </Gate>
        <Gate permission="devices.move">
          <Button
            size="xs"
            variant="default"
            disabled={!fleet || missing}
            loading={move.isPending}
            onClick={() => fleet && move.mutate(Number(fleet))}
            title="The agent is told to follow the new fleet's topic"
          >
            Move
          </Button>
        </Gate>
      </Group>
    </Stack>
  );
}
