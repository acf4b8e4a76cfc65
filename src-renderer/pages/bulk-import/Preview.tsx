import { Alert, ScrollArea, Stack, Table, Text, ThemeIcon } from '@mantine/core';
import { IconAlertTriangle, IconCheck } from '@tabler/icons-react';
import { fullName } from '../../lib/format.ts';
import { Email } from '../../components/common.tsx';
import type { ImportRow } from '../../lib/invitation-import.ts';

const PREVIEW_LIMIT = 500;

/** The rows as read, each with the console's (and the server's) verdict; the first 500 shown. */
export function Preview({ rows, errors }: { rows: ImportRow[]; errors: string[] }) {
  const shown = rows.slice(0, PREVIEW_LIMIT);
  return (
    <Stack gap="xs">
      <Text fw={500} size="sm">
        Preview
      </Text>
      {errors.map((error) => (
        <Alert key={error} color="orange" variant="light" p="xs" icon={<IconAlertTriangle size={16} />}>
          {error}
        </Alert>
      ))}
      <ScrollArea
        h={320}
        type="auto"
        offsetScrollbars
        style={{ border: '1px solid var(--mantine-color-default-border)', borderRadius: 'var(--mantine-radius-md)' }}
      >
        {rows.length === 0 ? (
          <Text c="dimmed" size="sm" p="md">
            Rows appear here, each checked, as soon as you paste or drop them.
          </Text>
        ) : (
          <Table stickyHeader striped verticalSpacing={4} fz="sm" data-testid="bulk-preview">
            <Table.Thead>
              <Table.Tr>
                <Table.Th w={48}>Line</Table.Th>
                <Table.Th>Email</Table.Th>
                <Table.Th>Name</Table.Th>
                <Table.Th>Fleet</Table.Th>
                <Table.Th>Check</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {shown.map((row, index) => (
                <Table.Tr key={`${row.source}-${index}`} data-valid={row.problems.length === 0}>
                  <Table.Td c="dimmed">{row.source}</Table.Td>
                  <Table.Td className="mono email">
                    {row.email ? (
                      <Email address={row.email} />
                    ) : (
                      <Text span c="dimmed">
                        (empty)
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>{fullName(row)}</Table.Td>
                  <Table.Td>{row.fleet ?? ''}</Table.Td>
                  <Table.Td>
                    {row.problems.length === 0 ? (
                      <ThemeIcon color="teal" variant="light" size="sm" radius="xl" aria-label="OK">
                        <IconCheck size={12} />
                      </ThemeIcon>
                    ) : (
                      <Text c="red" size="xs">
                        {row.problems.join('; ')}
                      </Text>
                    )}
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
        {rows.length > PREVIEW_LIMIT ? (
          <Text size="xs" c="dimmed" p="xs">
            …and {(rows.length - PREVIEW_LIMIT).toLocaleString()} more rows (
            {rows.slice(PREVIEW_LIMIT).filter((r) => r.problems.length).length} with problems).
          </Text>
        ) : null}
      </ScrollArea>
    </Stack>
  );
}
