// Invitation email, as the mail capability reports it: delivery state, resend, bulk progress.
import { Alert, Badge, Button, Card, Group, Progress, Stack, Table, Text, Title, Tooltip } from '@mantine/core';
import { useMutation, useQueries, useQueryClient } from '@tanstack/react-query';
import {
  IconClockHour4,
  IconMail,
  IconMailCheck,
  IconMailExclamation,
  IconMailForward,
  IconMailOpened,
} from '@tabler/icons-react';
import { admin } from '../api/client.ts';
import { keys } from '../api/queries.ts';
import type { Invitation, InvitationDetail, MailBatch, MailDelivery } from '../../src-shared/contract/index.ts';
import { notifyError, notifySuccess, RelativeTime } from '../components/common.tsx';
import { Gate, useCan } from '../components/permissions.tsx';

export const DELIVERY: Record<string, { label: string; color: string; hint: string }> = {
  queued: { label: 'Email queued', color: 'blue', hint: 'Waiting for its turn to be sent' },
  sending: { label: 'Email sending', color: 'blue', hint: 'Being handed to the mail server' },
  sent: { label: 'Email sent', color: 'teal', hint: 'The mail server accepted it' },
  failed: { label: 'Email failed', color: 'red', hint: 'The mail server refused it or could not be reached' },
  outbox: { label: 'Email in outbox', color: 'gray', hint: 'No SMTP server: written as a .eml file to the outbox folder' },
  retrying: {
    label: 'Email will retry',
    color: 'orange',
    hint: 'The mail server was busy or unreachable; it is tried again by itself',
  },
};

/** `retrying` stands for a queued delivery that waits for its automatic retry. */
export function deliveryStateOf(delivery: MailDelivery): string {
  return delivery.state === 'queued' && delivery.retry_at ? 'retrying' : delivery.state;
}

export function deliveryOf(state: string) {
  return DELIVERY[state] ?? { label: `Email ${state}`, color: 'gray', hint: '' };
}

/** "14:32:05" today, else the date too. */
function clockTime(iso: string): string {
  const at = new Date(iso);
  const today = at.toDateString() === new Date().toDateString();
  return today ? at.toLocaleTimeString() : at.toLocaleString();
}

function DeliveryIcon({ state, size = 16 }: { state: string; size?: number }) {
  if (state === 'sent') return <IconMailCheck size={size} />;
  if (state === 'failed') return <IconMailExclamation size={size} />;
  if (state === 'outbox') return <IconMailOpened size={size} />;
  if (state === 'retrying') return <IconClockHour4 size={size} />;
  return <IconMail size={size} />;
}

/** A small mark in lists: the invitation email's state, with details on hover. */
export function DeliveryMark({ delivery }: { delivery: MailDelivery | null | undefined }) {
  if (!delivery) return null;
  const state = deliveryStateOf(delivery);
  const info = deliveryOf(state);
  const label = delivery.retry_at && state === 'retrying' ? `Email will retry at ${clockTime(delivery.retry_at)}` : info.label;
  return (
    <Tooltip label={delivery.error ? `${label}: ${delivery.error}` : `${label} — ${info.hint}`} multiline maw={320}>
      <Text span c={`${info.color}.8`} lh={0} aria-label={label} role="img" data-testid="delivery-mark" data-state={state}>
        <DeliveryIcon state={state} />
      </Text>
    </Tooltip>
  );
}

function useResend(invitation: Invitation) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: () => admin.invitations.resend({ params: { id: invitation.id } }),
    onSuccess: () => {
      notifySuccess(`The invitation email to ${invitation.email} is on its way again`);
      void client.invalidateQueries({ queryKey: keys.invitations });
    },
    onError: (error) => notifyError('Not resent', error),
  });
}

/** The "Resend email" action of an invitation page (same link, same expiry). */
export function MailPanel({ invitation }: { invitation: InvitationDetail }) {
  const resend = useResend(invitation);
  const mayResend = useCan('invitations.resend').allowed;
  if (!('delivery' in invitation)) return null; // a server without the mail capability
  const usable = invitation.status === 'pending';
  if (!mayResend)
    return (
      <Gate permission="invitations.resend">
        <Button variant="default" leftSection={<IconMailForward size={16} />}>
          {invitation.delivery ? 'Resend email' : 'Send email'}
        </Button>
      </Gate>
    );
  return (
    <Tooltip
      label={usable ? 'Sends the same invitation (same QR code, same expiry) again' : 'Only a pending invitation can be sent'}
    >
      <Button
        variant="default"
        leftSection={<IconMailForward size={16} />}
        disabled={!usable}
        loading={resend.isPending}
        onClick={() => resend.mutate()}
      >
        {invitation.delivery ? 'Resend email' : 'Send email'}
      </Button>
    </Tooltip>
  );
}

/** The invitation email's delivery, on the invitation page. */
export function DeliveryCard({ invitation }: { invitation: InvitationDetail }) {
  if (!('delivery' in invitation)) return null;
  const delivery = invitation.delivery;
  const state = delivery ? deliveryStateOf(delivery) : null;
  return (
    <Card withBorder radius="md" p="md">
      <Group justify="space-between" mb="xs">
        <Title order={5}>Invitation email</Title>
        {delivery ? (
          <Badge
            color={deliveryOf(state!).color}
            variant="light"
            leftSection={<DeliveryIcon state={state!} size={12} />}
            data-testid="delivery-state"
            data-state={state}
          >
            {deliveryOf(state!).label}
          </Badge>
        ) : null}
      </Group>
      {!delivery ? (
        <Text size="sm" c="dimmed">
          Not emailed. Use “Send email” to send it to {invitation.email}.
        </Text>
      ) : (
        <Stack gap="xs">
          {delivery.retry_at && state === 'retrying' ? (
            <Alert color="orange" variant="light" p="xs" data-testid="delivery-retry">
              Attempt {delivery.attempts} did not go through: {delivery.error}. Will retry at {clockTime(delivery.retry_at)} (
              <RelativeTime iso={delivery.retry_at} future />
              ), by itself.
            </Alert>
          ) : delivery.error ? (
            <Alert color="red" variant="light" p="xs">
              {delivery.error}
            </Alert>
          ) : null}
          <Table verticalSpacing={4} fz="sm">
            <Table.Tbody>
              {state === 'retrying' ? null : (
                <Table.Tr>
                  <Table.Th w={110} fw={500} c="dimmed">
                    Queued
                  </Table.Th>
                  <Table.Td>
                    <RelativeTime iso={delivery.queued_at} />
                  </Table.Td>
                </Table.Tr>
              )}
              {delivery.sent_at ? (
                <Table.Tr>
                  <Table.Th fw={500} c="dimmed">
                    {delivery.state === 'outbox' ? 'Written' : 'Sent'}
                  </Table.Th>
                  <Table.Td>
                    <RelativeTime iso={delivery.sent_at} />
                  </Table.Td>
                </Table.Tr>
              ) : null}
              <Table.Tr>
                <Table.Th fw={500} c="dimmed">
                  Attempts
                </Table.Th>
                <Table.Td>{delivery.attempts}</Table.Td>
              </Table.Tr>
              {delivery.response ? (
                <Table.Tr>
                  <Table.Th fw={500} c="dimmed">
                    Server said
                  </Table.Th>
                  <Table.Td className="mono">{delivery.response}</Table.Td>
                </Table.Tr>
              ) : null}
              {delivery.outbox_file ? (
                <Table.Tr>
                  <Table.Th fw={500} c="dimmed">
                    File
                  </Table.Th>
                  <Table.Td className="mono">{delivery.outbox_file}</Table.Td>
                </Table.Tr>
              ) : null}
            </Table.Tbody>
          </Table>
        </Stack>
      )}
    </Card>
  );
}

/** Email progress of a bulk import (one mail batch per request batch), live from the event stream. */
export function MailBatchesProgress({ batchIds }: { batchIds: string[] }) {
  const client = useQueryClient();
  const batches = useQueries({
    queries: batchIds.map((id) => ({
      queryKey: keys.mailBatch(id),
      queryFn: ({ signal }: { signal: AbortSignal }) => admin.mail.batch({ params: { batch_id: id }, signal }),
    })),
  });
  const retry = useMutation({
    mutationFn: () => Promise.all(batchIds.map((batch_id) => admin.mail.retry({ body: { batch_id } }))),
    onSuccess: (results) => {
      notifySuccess(`${results.reduce((n, r) => n + r.queued, 0)} email(s) queued again`);
      void client.invalidateQueries({ queryKey: keys.mail });
    },
    onError: (error) => notifyError('Not retried', error),
  });
  if (batchIds.length === 0) return null;
  const loaded = batches.map((b) => b.data).filter((b): b is MailBatch => b !== undefined);
  const total = loaded.reduce((n, b) => n + b.total, 0);
  const sent = loaded.reduce((n, b) => n + b.sent + b.outbox, 0);
  const failed = loaded.reduce((n, b) => n + b.failed, 0);
  const retrying = loaded.reduce((n, b) => n + b.retrying, 0);
  const waiting = loaded.reduce((n, b) => n + b.queued + b.sending, 0) - retrying;
  const outbox = loaded.reduce((n, b) => n + b.outbox, 0);
  return (
    <Card withBorder radius="md" p="sm" data-testid="mail-progress">
      <Group justify="space-between" mb={6}>
        <Text size="sm" fw={500}>
          Invitation emails: {sent.toLocaleString()} of {total.toLocaleString()}{' '}
          {outbox === sent && sent > 0 ? 'written to the outbox' : 'sent'}
          {failed ? `, ${failed.toLocaleString()} failed` : ''}
          {waiting ? `, ${waiting.toLocaleString()} waiting` : ''}
          {retrying ? `, ${retrying.toLocaleString()} will be retried` : ''}
        </Text>
        {failed || retrying ? (
          <Gate permission="invitations.resend">
            <Button size="compact-xs" variant="light" color="red" loading={retry.isPending} onClick={() => retry.mutate()}>
              Retry now
            </Button>
          </Gate>
        ) : null}
      </Group>
      <Progress.Root size="md" aria-label="Invitation emails">
        <Progress.Section value={total ? (sent / total) * 100 : 0} color="teal" />
        <Progress.Section value={total ? (failed / total) * 100 : 0} color="red" />
      </Progress.Root>
    </Card>
  );
}
