// The Export button of a list (issue 25, item 3): the list's current filter as a download, CSV or
// JSON lines. A plain link: the browser downloads what the server streams, from the first byte,
// with the session's cookie; the server names the file (what and when).
import { Button, Menu } from '@mantine/core';
import { IconDownload } from '@tabler/icons-react';
import type { ExportFormat } from '../../src-shared/contract/index.ts';

export type ExportParams = Record<string, string | number | boolean | null | undefined>;

/** The export's address: the filters set (empty ones left out) and the format. */
export function exportHref(path: string, params: ExportParams, format: ExportFormat): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === null || value === undefined || value === '') continue;
    query.set(key, String(value));
  }
  query.set('format', format);
  return `${path}?${query.toString()}`;
}

/** "Export" with CSV and JSON lines; `filtered` says whether the filter in force narrows the list. */
export function ExportMenu({
  path,
  params = {},
  filtered,
  what,
  testId = 'export',
  size = 'sm',
  label = 'Export',
}: {
  /** The export route: `/api/agents/export`. */
  path: string;
  params?: ExportParams;
  filtered: boolean;
  /** "devices", "invitations" …: what the menu says it downloads. */
  what: string;
  testId?: string;
  size?: 'xs' | 'sm';
  /** The button's text. */
  label?: string;
}) {
  return (
    <Menu position="bottom-end" withinPortal>
      <Menu.Target>
        <Button variant="default" size={size} leftSection={<IconDownload size={16} />} data-testid={testId}>
          {label}
        </Button>
      </Menu.Target>
      <Menu.Dropdown>
        <Menu.Label>{filtered ? `The ${what} these filters match` : `Every ${what.replace(/s$/, '')}`}</Menu.Label>
        <Menu.Item component="a" href={exportHref(path, params, 'csv')} download data-testid={`${testId}-csv`}>
          CSV (spreadsheets)
        </Menu.Item>
        <Menu.Item component="a" href={exportHref(path, params, 'jsonl')} download data-testid={`${testId}-jsonl`}>
          JSON lines
        </Menu.Item>
      </Menu.Dropdown>
    </Menu>
  );
}
