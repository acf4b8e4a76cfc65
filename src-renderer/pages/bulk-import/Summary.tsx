import { Alert, Badge, Button, Group, List, Stack } from '@mantine/core';
import { IconPrinter } from '@tabler/icons-react';
import type { Invitation } from '../../../src-shared/contract/index.ts';
import { navigate } from '../../lib/router.tsx';
import type { BulkOutcome } from '../../lib/bulk-create.ts';
import { printQuery } from '../../lib/print-layout.ts';
import { MailBatchesProgress } from '../../features/mail.tsx';

/** What the import did: created, skipped, failed (with why), the emails' progress, a print sheet. */
export function Summary({
  outcome,
  skipped,
  onClose,
  batchIds,
}: {
  outcome: BulkOutcome<Invitation>;
  skipped: number;
  onClose: () => void;
  batchIds: string[];
}) {
  const ids = outcome.created.map(({ item }) => item.id);
  return (
    <Stack data-testid="bulk-summary">
      <Group gap="sm">
        <Badge color="teal" size="lg" variant="light">
          {outcome.created.length.toLocaleString()} created
        </Badge>
        {skipped ? (
          <Badge color="orange" size="lg" variant="light">
            {skipped.toLocaleString()} skipped (problems in the preview)
          </Badge>
        ) : null}
        {outcome.failed.length ? (
          <Badge color="red" size="lg" variant="light">
            {outcome.failed.length.toLocaleString()} failed
          </Badge>
        ) : null}
      </Group>
      <MailBatchesProgress batchIds={batchIds} />
      {outcome.failed.length ? (
        <Alert color="red" variant="light" title="Not created">
          <List size="sm">
            {outcome.failed.slice(0, 50).map(({ row, message }) => (
              <List.Item key={`${row.source}-${row.email}`}>
                Line {row.source} ({row.email || 'no email'}): {message}
              </List.Item>
            ))}
          </List>
        </Alert>
      ) : null}
      <Group justify="flex-end" gap="sm">
        {ids.length ? (
          <Button
            variant="light"
            leftSection={<IconPrinter size={16} />}
            onClick={() => {
              onClose();
              navigate(`/print${printQuery(ids.slice(0, 600))}`);
            }}
          >
            Print sheet for these
          </Button>
        ) : null}
        <Button onClick={onClose}>Done</Button>
      </Group>
    </Stack>
  );
}
