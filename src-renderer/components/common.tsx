import {
  ActionIcon,
  Alert,
  Badge,
  Button,
  Center,
  CopyButton,
  Group,
  Loader,
  Stack,
  Text,
  Title,
  Tooltip,
  type BadgeProps,
} from '@mantine/core';
import { modals } from '@mantine/modals';
import { notifications } from '@mantine/notifications';
import { IconAlertTriangle, IconCheck, IconCopy, IconInbox } from '@tabler/icons-react';
import type { UseQueryResult } from '@tanstack/react-query';
import { Fragment, useEffect, useState, type ReactNode } from 'react';
import { errorMessage } from '../api/client.ts';
import { formatDateTime, INVITATION_STATUS, relativeTime } from '../lib/format.ts';

export function PageHeader({ title, description, actions }: { title: ReactNode; description?: ReactNode; actions?: ReactNode }) {
  return (
    <Group justify="space-between" align="flex-start" mb="lg" wrap="wrap" gap="sm">
      <div>
        <Title order={1} size="h2">
          {title}
        </Title>
        {description ? (
          <Text c="dimmed" size="sm" mt={4}>
            {description}
          </Text>
        ) : null}
      </div>
      {actions ? <Group gap="sm">{actions}</Group> : null}
    </Group>
  );
}

export function LoadingState({ label = 'Loading…' }: { label?: string }) {
  return (
    <Center py="xl" role="status" aria-live="polite">
      <Group gap="sm">
        <Loader size="sm" />
        <Text c="dimmed">{label}</Text>
      </Group>
    </Center>
  );
}

export function ErrorState({
  error,
  onRetry,
  title = 'Could not load this',
}: {
  error: unknown;
  onRetry?: () => void;
  title?: string;
}) {
  return (
    <Alert color="red" variant="light" icon={<IconAlertTriangle size={18} />} title={title} role="alert">
      <Stack gap="xs" align="flex-start">
        <Text size="sm">{errorMessage(error)}</Text>
        {onRetry ? (
          <Button size="xs" variant="light" color="red" onClick={onRetry}>
            Try again
          </Button>
        ) : null}
      </Stack>
    </Alert>
  );
}

export function EmptyState({
  title,
  children,
  action,
  icon,
}: {
  title: string;
  children?: ReactNode;
  action?: ReactNode;
  icon?: ReactNode;
}) {
  return (
    <Center py={48}>
      <Stack align="center" gap="xs" maw={420} ta="center">
        {icon ?? <IconInbox size={40} stroke={1.3} color="var(--mantine-color-dimmed)" />}
        <Text fw={600}>{title}</Text>
        {children ? (
          <Text c="dimmed" size="sm">
            {children}
          </Text>
        ) : null}
        {action}
      </Stack>
    </Center>
  );
}

/** Renders loading and error states of a query, then its data. */
export function QueryView<T>({
  query,
  children,
  loading,
}: {
  query: UseQueryResult<T>;
  children: (data: T) => ReactNode;
  loading?: string;
}) {
  if (query.isPending) return <LoadingState {...(loading ? { label: loading } : {})} />;
  if (query.isError) return <ErrorState error={query.error} onRetry={() => void query.refetch()} />;
  return <>{children(query.data)}</>;
}

export function InvitationStatusBadge({ status, ...props }: { status: string } & BadgeProps) {
  const known = INVITATION_STATUS[status] ?? { label: status, color: 'gray' };
  return (
    <Badge color={known.color} variant="light" {...props}>
      {known.label}
    </Badge>
  );
}

/** Re-renders every `ms` so relative times stay true. */
export function useNow(ms = 30_000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(timer);
  }, [ms]);
  return now;
}

/** `future` for times that are ahead (expiry, next retry); anything else is a past event. */
export function RelativeTime({ iso, now, future = false }: { iso: string | null | undefined; now?: number; future?: boolean }) {
  const tick = useNow();
  if (!iso)
    return (
      <Text span c="dimmed" size="inherit">
        never
      </Text>
    );
  // The tick is up to 30 s old: an event that just arrived is newer than it.
  const current = Math.max(now ?? tick, Date.now());
  return (
    <Tooltip label={formatDateTime(iso)} openDelay={400}>
      <time dateTime={iso}>{relativeTime(iso, current, { past: !future })}</time>
    </Tooltip>
  );
}

/** `label` names what is copied ("Copy SHA-256"): several copy buttons on a page must be told apart. */
export function CopyIcon({ value, label }: { value: string; label: string }) {
  return (
    <CopyButton value={value} timeout={1500}>
      {({ copied, copy }) => (
        <Tooltip label={copied ? 'Copied' : label} withArrow position="left">
          <ActionIcon color={copied ? 'teal' : 'gray'} variant="subtle" onClick={copy} aria-label={label}>
            {copied ? <IconCheck size={16} /> : <IconCopy size={16} />}
          </ActionIcon>
        </Tooltip>
      )}
    </CopyButton>
  );
}

/**
 * A confirmation dialog for destructive actions: `onConfirm` runs when the admin confirms, nothing when
 * they cancel or close it. A callback rather than a promise, so a click handler stays synchronous.
 */
export function confirmAction(
  {
    title,
    message,
    confirmLabel,
    danger = true,
  }: {
    title: string;
    message: ReactNode;
    confirmLabel: string;
    danger?: boolean;
  },
  onConfirm: () => void,
): void {
  modals.openConfirmModal({
    title,
    children: <Text size="sm">{message}</Text>,
    labels: { confirm: confirmLabel, cancel: 'Cancel' },
    confirmProps: { color: danger ? 'red' : undefined, 'data-autofocus': true } as Record<string, unknown>,
    onConfirm,
  });
}

export function notifyError(title: string, error: unknown) {
  notifications.show({ color: 'red', title, message: errorMessage(error), autoClose: 8000 });
}

export function notifySuccess(message: string, title?: string) {
  notifications.show({ color: 'teal', icon: <IconCheck size={16} />, message, ...(title ? { title } : {}) });
}

/** An email address that may wrap after its @ and before each dot, not in the middle of a word. */
export function Email({ address }: { address: string }) {
  const parts = address.split(/(?=\.)|(?<=@)/);
  return (
    <span className="email">
      {parts.map((part, index) => (
        <Fragment key={index}>
          {index > 0 ? <wbr /> : null}
          {part}
        </Fragment>
      ))}
    </span>
  );
}
