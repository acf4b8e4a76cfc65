// Approve or reject a device enrolled with a code that needs approval; its enrollment status.
import { Badge, Button, Group, Text } from '@mantine/core';
import { IconCheck, IconX } from '@tabler/icons-react';
import { useApproveAgents, useRejectAgent } from '../api/codes.ts';
import { notifyError } from '../components/common.tsx';
import { enrollStatusOf } from '../lib/devices.ts';
import { Gate } from '../components/permissions.tsx';

export function EnrollStatusBadge({ status }: { status: string | null }) {
  if (!status)
    return (
      <Text span c="dimmed">
        deleted
      </Text>
    );
  const { label, color } = enrollStatusOf(status);
  return (
    <Badge color={color} variant="light" data-testid="enroll-status" style={{ flexShrink: 0, overflow: 'visible' }}>
      {label}
    </Badge>
  );
}

/** Approve / reject one device waiting for approval. */
export function DecideButtons({ agentId }: { agentId: number }) {
  const approve = useApproveAgents();
  const reject = useRejectAgent();
  return (
    <Group gap={4} wrap="nowrap">
      <Gate permission="devices.approve">
        <Button
          size="compact-xs"
          color="teal"
          leftSection={<IconCheck size={12} />}
          loading={approve.isPending}
          onClick={() => approve.mutate([agentId], { onError: (e) => notifyError('Not approved', e) })}
        >
          Approve
        </Button>
      </Gate>
      <Gate permission="devices.approve">
        <Button
          size="compact-xs"
          variant="default"
          color="red"
          leftSection={<IconX size={12} />}
          loading={reject.isPending}
          onClick={() => reject.mutate(agentId, { onError: (e) => notifyError('Not rejected', e) })}
        >
          Reject
        </Button>
      </Gate>
    </Group>
  );
}
