// The invitation page's actions: simulate a device (Android or Apple), email, revoke, delete.
import { Button, Group, Menu } from '@mantine/core';
import { IconBan, IconChevronDown, IconDeviceMobile, IconPlayerPlay, IconTrash } from '@tabler/icons-react';
import { useState } from 'react';
import { useDeleteInvitation, useRevokeInvitation, useSimulateDevice } from '../../api/queries.ts';
import type { InvitationDetail, SimulateResult } from '../../../src-shared/contract/index.ts';
import { navigate } from '../../lib/router.tsx';
import { confirmAction, notifyError, notifySuccess } from '../../components/common.tsx';
import { SimulationResult } from '../../features/enrollment-page.tsx';
import { MailPanel } from '../../features/mail.tsx';
import { Gate, useCan } from '../../components/permissions.tsx';

export function Actions({ invitation }: { invitation: InvitationDetail }) {
  const revoke = useRevokeInvitation();
  const remove = useDeleteInvitation();
  const simulate = useSimulateDevice();
  const [result, setResult] = useState<SimulateResult | null>(null);
  const mayRunSimulator = useCan('simulator.run').allowed;

  const run = (type: 'android' | 'apple') =>
    simulate.mutate(
      { id: invitation.id, type },
      { onSuccess: setResult, onError: (error) => notifyError('The simulator could not run', error) },
    );

  return (
    <Group gap="sm">
      {!mayRunSimulator ? (
        <Gate permission="simulator.run">
          <Button leftSection={<IconPlayerPlay size={16} />}>Simulate a device</Button>
        </Gate>
      ) : (
        <Group gap={0} wrap="nowrap">
          <Button
            leftSection={<IconPlayerPlay size={16} />}
            loading={simulate.isPending}
            onClick={() => run('android')}
            style={{ borderTopRightRadius: 0, borderBottomRightRadius: 0 }}
            title="Runs the device simulator against this invitation, as a phone would"
          >
            Simulate a device
          </Button>
          <Menu position="bottom-end">
            <Menu.Target>
              <Button
                aria-label="Choose the simulated device type"
                px={8}
                disabled={simulate.isPending}
                style={{ borderTopLeftRadius: 0, borderBottomLeftRadius: 0, borderLeft: '1px solid rgba(255,255,255,.35)' }}
              >
                <IconChevronDown size={16} />
              </Button>
            </Menu.Target>
            <Menu.Dropdown>
              <Menu.Item leftSection={<IconDeviceMobile size={16} />} onClick={() => run('android')}>
                Android device
              </Menu.Item>
              <Menu.Item leftSection={<IconDeviceMobile size={16} />} onClick={() => run('apple')}>
                Apple device
              </Menu.Item>
            </Menu.Dropdown>
          </Menu>
        </Group>
      )}
      <MailPanel invitation={invitation} />
      <Gate permission="invitations.revoke">
        <Button
          variant="default"
          color="orange"
          leftSection={<IconBan size={16} />}
          disabled={invitation.status !== 'pending' && invitation.status !== 'expired'}
          loading={revoke.isPending}
          onClick={() =>
            confirmAction(
              {
                title: 'Revoke this invitation?',
                message: `The QR code and deeplink sent to ${invitation.email} stop working at once. A device already enrolled is not affected.`,
                confirmLabel: 'Revoke',
              },
              () =>
                revoke.mutate(invitation.id, {
                  onSuccess: () => notifySuccess('Invitation revoked'),
                  onError: (e) => notifyError('Not revoked', e),
                }),
            )
          }
        >
          Revoke
        </Button>
      </Gate>
      <Gate permission="invitations.delete">
        <Button
          variant="default"
          color="red"
          leftSection={<IconTrash size={16} />}
          loading={remove.isPending}
          onClick={() =>
            confirmAction(
              {
                title: 'Delete this invitation?',
                message: `The invitation for ${invitation.email} and its log are deleted. ${invitation.agent ? 'The device it enrolled stays.' : 'Its QR code stops working.'}`,
                confirmLabel: 'Delete',
              },
              () => {
                remove.mutate(invitation.id, {
                  onSuccess: () => {
                    notifySuccess('Invitation deleted');
                    navigate('/invitations');
                  },
                  onError: (e) => notifyError('Not deleted', e),
                });
              },
            )
          }
        >
          Delete
        </Button>
      </Gate>
      <SimulationResult result={result} onClose={() => setResult(null)} />
    </Group>
  );
}
