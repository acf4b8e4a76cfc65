import { Group, Tabs, Text, Textarea } from '@mantine/core';
import { Dropzone } from '@mantine/dropzone';
import { IconClipboardText, IconFileSpreadsheet, IconUpload, IconX } from '@tabler/icons-react';

/** Where the rows come from: addresses pasted in, or one CSV file dropped or chosen. */
export function SourceTabs({
  tab,
  onTab,
  text,
  onText,
  fileName,
  fileError,
  onFiles,
  onReject,
}: {
  tab: string | null;
  onTab: (tab: string | null) => void;
  text: string;
  onText: (text: string) => void;
  fileName: string | null;
  fileError: string | null;
  onFiles: (files: File[]) => void;
  onReject: () => void;
}) {
  return (
    <Tabs value={tab} onChange={onTab} keepMounted={false}>
      <Tabs.List>
        <Tabs.Tab value="paste" leftSection={<IconClipboardText size={16} />}>
          Paste addresses
        </Tabs.Tab>
        <Tabs.Tab value="csv" leftSection={<IconFileSpreadsheet size={16} />}>
          CSV file
        </Tabs.Tab>
      </Tabs.List>
      <Tabs.Panel value="paste" pt="sm">
        <Textarea
          label="Addresses"
          description="One or more a line, separated by commas or semicolons; “Name <address>” works, and so does a spreadsheet selection or a CSV with a header."
          placeholder={'ada@example.com\nAlan Turing <alan@example.com>\ngrace@example.com; linus@example.com'}
          autosize
          minRows={8}
          maxRows={16}
          value={text}
          onChange={(e) => onText(e.currentTarget.value)}
          data-autofocus
          styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)', fontSize: 13 } }}
        />
      </Tabs.Panel>
      <Tabs.Panel value="csv" pt="sm">
        <Dropzone
          onDrop={onFiles}
          onReject={onReject}
          maxFiles={1}
          multiple={false}
          // MIME types with their extensions (a bare ".csv" in a list is not a MIME type: the
          // drop zone warned about each one on every render).
          accept={{
            'text/csv': ['.csv'],
            'text/plain': ['.txt'],
            'text/tab-separated-values': ['.tsv'],
            'application/vnd.ms-excel': ['.csv'],
          }}
          aria-label="CSV file"
        >
          <Group justify="center" gap="md" mih={140} style={{ pointerEvents: 'none' }}>
            <Dropzone.Accept>
              <IconUpload size={40} stroke={1.4} />
            </Dropzone.Accept>
            <Dropzone.Reject>
              <IconX size={40} stroke={1.4} />
            </Dropzone.Reject>
            <Dropzone.Idle>
              <IconFileSpreadsheet size={40} stroke={1.4} />
            </Dropzone.Idle>
            <div>
              <Text fw={600}>{fileName ?? 'Drop a CSV file here, or click to choose one'}</Text>
              <Text size="sm" c="dimmed">
                Columns: email (required), firstname, lastname, fleet, days. A header row names them; without one, the first
                column is the email.
              </Text>
            </div>
          </Group>
        </Dropzone>
        {fileError ? (
          <Text c="red" size="sm" mt="xs">
            {fileError}
          </Text>
        ) : null}
      </Tabs.Panel>
    </Tabs>
  );
}
