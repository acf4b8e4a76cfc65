import { Badge, Button, Group, Stack, Text, Tooltip } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { IconListDetails } from '@tabler/icons-react';
import { admin } from '../api/client.ts';
import type { TaskVerification } from '../../src-shared/contract/index.ts';
import { notifyError, notifySuccess, RelativeTime } from '../components/common.tsx';
import { Gate } from '../components/permissions.tsx';

// The contract's verificationText, here too: the console imports no schema module of the contract.
const LABELS: Record<TaskVerification['state'], string> = {
  verified: 'verified',
  not_found: 'not found in inventory',
  awaiting_inventory: 'awaiting inventory',
};

const COLORS: Record<TaskVerification['state'], string> = {
  verified: 'teal',
  not_found: 'red',
  awaiting_inventory: 'gray',
};

/** A package task checked against the device's own inventory: verified, not found, or awaiting one (with that inventory's time). */
export function VerificationBadge({ verification }: { verification: TaskVerification | null | undefined }) {
  if (!verification) return null;
  return (
    <Group gap={4} wrap="wrap" data-testid="task-verification" data-verification={verification.state}>
      <Tooltip label={verification.detail} multiline maw={360} openDelay={200}>
        <Badge
          size="sm"
          variant={verification.state === 'awaiting_inventory' ? 'outline' : 'light'}
          color={COLORS[verification.state]}
          style={{ flexShrink: 0, maxWidth: 'none' }}
          styles={{ label: { overflow: 'visible' } }}
        >
          {LABELS[verification.state]}
        </Badge>
      </Tooltip>
      {verification.inventory_at ? (
        <Text size="xs" c="dimmed">
          inventory <RelativeTime iso={verification.inventory_at} />
        </Text>
      ) : null}
    </Group>
  );
}

/** Sends the device the Inventory command: its answer is checked against the package tasks as it arrives. */
export function AskInventoryButton({ agentId, agentName }: { agentId: number; agentName: string }) {
  const ask = useMutation({
    mutationFn: () => admin.agents.command({ params: { id: agentId }, body: { command: 'inventory' } }),
    onSuccess: (result) =>
      notifySuccess(
        result.online
          ? `${agentName} was asked for its inventory: the install is checked when it arrives.`
          : result.retained
            ? `${agentName} is offline: it is asked for its inventory when it connects.`
            : `${agentName} is offline: the inventory request was not delivered.`,
      ),
    onError: (error) => notifyError('The inventory was not asked for', error),
  });
  return (
    <Gate permission="devices.inventory">
      <Tooltip label={`Ask ${agentName} for its inventory now, to check the install`} openDelay={300}>
        <Button
          size="compact-xs"
          variant="default"
          leftSection={<IconListDetails size={12} />}
          loading={ask.isPending}
          onClick={(event) => {
            event.stopPropagation();
            ask.mutate();
          }}
          aria-label={`Ask ${agentName} for an inventory`}
        >
          Ask for inventory
        </Button>
      </Tooltip>
    </Gate>
  );
}

/** The verification of a package task, and the button that asks for the inventory that decides it. */
export function TaskVerificationCell({
  verification,
  agentId,
  agentName,
}: {
  verification: TaskVerification | null | undefined;
  agentId: number;
  agentName: string;
}) {
  if (!verification) return null;
  return (
    <Stack gap={2} align="flex-start">
      <VerificationBadge verification={verification} />
      <AskInventoryButton agentId={agentId} agentName={agentName} />
    </Stack>
  );
}
