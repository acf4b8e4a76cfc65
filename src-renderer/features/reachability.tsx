import { Alert, Button, Group, Text } from '@mantine/core';
import { IconAlertTriangle } from '@tabler/icons-react';
import { useChoosePublicHost, useStatus } from '../api/queries.ts';
import { notifyError, notifySuccess } from '../components/common.tsx';
import { isLoopback } from '../../src-shared/contract/rules.ts';
import { Gate } from '../components/permissions.tsx';

/**
 * "Phones cannot reach this server", wherever codes are made or sent: the public host goes into
 * every QR code, deeplink and email, and a loopback one only works on this machine. One click on
 * a LAN address of this machine fixes it for every code, those already made included (they are
 * built from the public host when shown or sent).
 */
export function UnreachableWarning({ what = 'QR codes and links' }: { what?: string }) {
  const status = useStatus();
  const choose = useChoosePublicHost();
  const data = status.data;
  if (!data || !isLoopback(data.public_host)) return null;
  const lan = data.lan_addresses.filter((address) => !isLoopback(address));
  return (
    <Alert
      color="orange"
      variant="light"
      icon={<IconAlertTriangle size={18} />}
      title="Phones cannot reach this server"
      data-testid="loopback-warning"
    >
      <Text size="sm">
        {what} point at {data.public_host}, an address of this computer only: a phone that scans or opens them cannot connect.
        {lan.length > 0
          ? ' Use a network address of this computer instead:'
          : ' This computer has no network address right now: connect it to the network the phones use.'}
      </Text>
      {lan.length > 0 ? (
        <Group gap="xs" mt="xs">
          {lan.map((address) => (
            <Gate permission="settings.server">
              <Button
                key={address}
                size="xs"
                variant="default"
                loading={choose.isPending && choose.variables === address}
                onClick={() =>
                  choose.mutate(address, {
                    onSuccess: () => notifySuccess(`Phones now reach this server at ${address}`, 'Public host changed'),
                    onError: (error) => notifyError('The public host was not changed', error),
                  })
                }
                data-testid="use-lan-address"
              >
                Use {address}
              </Button>
            </Gate>
          ))}
        </Group>
      ) : null}
    </Alert>
  );
}
