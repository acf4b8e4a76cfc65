import { Anchor, Breadcrumbs, Button, Card, Grid, Group, Stack, Table, Text, Title } from '@mantine/core';
import { IconPrinter } from '@tabler/icons-react';
import { AdminApiError } from '../api/client.ts';
import { useInvitation } from '../api/queries.ts';
import type { InvitationDetail } from '../../src-shared/contract/index.ts';
import { Link } from '../lib/router.tsx';
import { EmptyState, ErrorState, InvitationStatusBadge, LoadingState, RelativeTime } from '../components/common.tsx';
import { DetailsTable, LinksCard, LogCard, QrCard } from '../features/enrollment-page.tsx';
import { DeliveryCard } from '../features/mail.tsx';
import { UnreachableWarning } from '../features/reachability.tsx';
import { formatDateTime, fullName } from '../lib/format.ts';
import { shortFingerprint } from '../lib/hash.ts';
import { printQuery } from '../lib/print-layout.ts';
import { whoDid } from '../lib/who-did.ts';
import { Actions } from './invitation/Actions.tsx';

export function InvitationPage({ id }: { id: number }) {
  const invitation = useInvitation(id);
  if (invitation.isPending) return <LoadingState />;
  if (invitation.isError) {
    if (invitation.error instanceof AdminApiError && invitation.error.status === 404) {
      return (
        <EmptyState
          title="This invitation does not exist (any more)"
          action={
            <Button component={Link} to="/invitations" variant="light">
              Back to invitations
            </Button>
          }
        >
          It may have been deleted.
        </EmptyState>
      );
    }
    return <ErrorState error={invitation.error} onRetry={() => void invitation.refetch()} />;
  }
  return <InvitationView invitation={invitation.data} />;
}

function InvitationQrCard({ invitation }: { invitation: InvitationDetail }) {
  const why = { done: 'already used', expired: 'expired', revoked: 'revoked', pending: '' }[invitation.status];
  return (
    <QrCard
      apiPath={`/api/invitations/${invitation.id}`}
      version={shortFingerprint(invitation.deeplink)}
      alt={`QR code of the invitation for ${invitation.email}`}
      testId="invitation-qr"
      downloadName={`invitation-${invitation.id}`}
      blockedReason={why}
      hint="Scan with the phone's camera: it opens the enrollment page."
      extraAction={
        <Button
          component={Link}
          to={`/print${printQuery([invitation.id])}`}
          variant="default"
          leftSection={<IconPrinter size={16} />}
        >
          Print
        </Button>
      }
    />
  );
}

function Details({ invitation }: { invitation: InvitationDetail }) {
  const rows: [string, React.ReactNode][] = [
    ['Email', invitation.email],
    [
      'Name',
      fullName(invitation) || (
        <Text span c="dimmed">
          —
        </Text>
      ),
    ],
    ['Fleet', invitation.fleet ?? '—'],
    ['Created', formatDateTime(invitation.created_at)],
    [
      invitation.status === 'expired' ? 'Expired' : 'Expires',
      <>
        {formatDateTime(invitation.expires_at)} (<RelativeTime iso={invitation.expires_at} future />)
      </>,
    ],
  ];
  if (invitation.used_at) rows.push(['Used', formatDateTime(invitation.used_at)]);
  if (invitation.revoked_at) rows.push(['Revoked', formatDateTime(invitation.revoked_at)]);
  rows.push([
    'Device',
    invitation.agent ? (
      <Anchor component={Link} to={`/devices?agent=${invitation.agent.id}`} data-testid="invitation-device">
        {invitation.agent.name} · {invitation.agent.type} · {invitation.agent.enroll_status}
      </Anchor>
    ) : (
      <Text span c="dimmed">
        none yet
      </Text>
    ),
  ]);
  return <DetailsTable rows={rows} />;
}

function Helpdesk({ invitation }: { invitation: InvitationDetail }) {
  const { helpdesk } = invitation;
  const any = helpdesk.name || helpdesk.phone || helpdesk.email || helpdesk.website;
  return (
    <Card withBorder radius="md" p="md">
      <Group justify="space-between" mb="xs">
        <Title order={5}>Helpdesk in the invitation</Title>
        <Anchor component={Link} to="/settings#helpdesk" size="xs">
          Edit
        </Anchor>
      </Group>
      {any ? (
        <Table verticalSpacing={4} fz="sm" data-testid="invitation-helpdesk">
          <Table.Tbody>
            {(
              [
                ['Name', helpdesk.name],
                ['Phone', helpdesk.phone],
                ['Email', helpdesk.email],
                ['Website', helpdesk.website],
              ] as const
            ).map(([label, value]) => (
              <Table.Tr key={label}>
                <Table.Th w={90} fw={500} c="dimmed">
                  {label}
                </Table.Th>
                <Table.Td>
                  {value || (
                    <Text span c="dimmed">
                      —
                    </Text>
                  )}
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      ) : (
        <Text size="sm" c="dimmed">
          No helpdesk details are set: the device shows none. Add them in Settings.
        </Text>
      )}
    </Card>
  );
}

function RefusedLog({ invitation }: { invitation: InvitationDetail }) {
  const refused = invitation.log.filter((entry) => entry.outcome === 'refused');
  return (
    <LogCard
      title="Refused attempts"
      count={refused.length}
      badgeColor="red"
      empty="No device has been refused with this invitation."
      minWidth={640}
      testId="refused-log"
      columns={['When', 'Reason', 'Email given', 'Device', 'From']}
    >
      {refused.map((entry) => (
        <Table.Tr key={entry.id}>
          <Table.Td style={{ whiteSpace: 'nowrap' }}>
            <RelativeTime iso={entry.at} />
          </Table.Td>
          <Table.Td>{entry.message}</Table.Td>
          <Table.Td style={{ wordBreak: 'break-all' }}>{entry.email ?? '—'}</Table.Td>
          <Table.Td className="mono" style={{ whiteSpace: 'nowrap', wordBreak: 'normal' }}>
            {entry.serial ?? entry.uuid ?? '—'}
          </Table.Td>
          <Table.Td className="mono" style={{ whiteSpace: 'nowrap', wordBreak: 'normal' }}>
            {entry.remote_addr ?? '—'}
          </Table.Td>
        </Table.Tr>
      ))}
    </LogCard>
  );
}

function History({ invitation }: { invitation: InvitationDetail }) {
  return (
    <Card withBorder radius="md" p="md">
      <Title order={5} mb="xs">
        History
      </Title>
      {invitation.events.length === 0 ? (
        <Text size="sm" c="dimmed">
          Nothing yet.
        </Text>
      ) : (
        <Stack gap={6} data-testid="invitation-history">
          {invitation.events.map((event) => (
            <Group key={event.id} gap="sm" wrap="nowrap" align="baseline">
              <Text size="xs" c="dimmed" w={110} style={{ flexShrink: 0 }}>
                <RelativeTime iso={event.at} />
              </Text>
              <div>
                {whoDid(event) ? (
                  <Text size="sm" fw={500} data-testid="history-actor">
                    {whoDid(event)}
                  </Text>
                ) : null}
                <Text size="sm">{event.message}</Text>
              </div>
            </Group>
          ))}
        </Stack>
      )}
    </Card>
  );
}

function InvitationView({ invitation }: { invitation: InvitationDetail }) {
  const name = fullName(invitation);
  return (
    <>
      <title>{`${invitation.email} · Invitations · MDM Console`}</title>
      <Breadcrumbs mb="xs">
        <Anchor component={Link} to="/invitations" size="sm">
          Invitations
        </Anchor>
        <Text size="sm">{invitation.email}</Text>
      </Breadcrumbs>
      <Group justify="space-between" align="flex-start" mb="lg" wrap="wrap">
        <div>
          <Group gap="sm">
            <Title order={1} size="h2">
              {name || invitation.email}
            </Title>
            <InvitationStatusBadge status={invitation.status} size="lg" data-testid="invitation-status" />
          </Group>
          {name ? <Text c="dimmed">{invitation.email}</Text> : null}
        </div>
        <Actions invitation={invitation} />
      </Group>
      {invitation.status === 'pending' ? (
        <div className="page-warning">
          <UnreachableWarning what="This invitation's QR code, deeplink and email" />
        </div>
      ) : null}
      <Grid gap="lg">
        <Grid.Col span={{ base: 12, md: 5 }}>
          <Stack>
            <InvitationQrCard invitation={invitation} />
            <DeliveryCard invitation={invitation} />
            <Helpdesk invitation={invitation} />
          </Stack>
        </Grid.Col>
        <Grid.Col span={{ base: 12, md: 7 }}>
          <Stack>
            <Card withBorder radius="md" p="md">
              <Details invitation={invitation} />
            </Card>
            <LinksCard
              deeplink={invitation.deeplink}
              appLink={invitation.app_link}
              testIdPrefix="invitation"
              deeplinkHint="The enrollment page the QR code opens; send it by message to someone who cannot scan."
            />
            <RefusedLog invitation={invitation} />
            <History invitation={invitation} />
          </Stack>
        </Grid.Col>
      </Grid>
    </>
  );
}
