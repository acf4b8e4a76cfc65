import { Button, Group, Modal, Stack, Text, TextInput } from '@mantine/core';
import { IconDeviceFloppy, IconFilter, IconShieldCheck } from '@tabler/icons-react';
import { useState } from 'react';
import { useSaveView } from '../../api/queries.ts';
import { notifyError, notifySuccess } from '../../components/common.tsx';
import { useCan } from '../../components/permissions.tsx';
import { checkWhere } from '../../../src-shared/contract/where.ts';
import type { DeviceView } from '../../../src-shared/contract/index.ts';
import { ViewPoliciesModal } from '../../features/view-policies.tsx';

/** The filter language's mistake in `text`, as the bar shows it under the field; null when it parses. */
export function whereProblem(text: string): string | null {
  const checked = checkWhere(text);
  return checked.ok ? null : `Column ${checked.error.position + 1}: ${checked.error.detail}`;
}

/**
 * The Devices page's filter bar: an expression of the filter language (docs/where.md), checked as
 * one types (the mistake named under the field), run by the server once it parses; "Save as view"
 * keeps it as a saved view (and, with a view open, "Update view" changes that one).
 */
export function FilterBar({
  value,
  onChange,
  serverError,
  view,
  onSaved,
}: {
  value: string;
  onChange: (text: string) => void;
  /** The server's refusal of an expression that parsed here (should not happen; shown if it does). */
  serverError: string | null;
  /** The saved view open, if any. */
  view: DeviceView | null;
  onSaved: (view: DeviceView) => void;
}) {
  const problem = whereProblem(value) ?? serverError;
  const [naming, setNaming] = useState(false);
  const [policies, setPolicies] = useState(false);
  const [name, setName] = useState('');
  const save = useSaveView();
  const canSave = useCan('fleets.write').allowed;
  const valid = problem === null && value.trim() !== '';
  const changed = view !== null && view.where !== value.trim();
  return (
    <>
      <Group gap="sm" mb="sm" align="flex-start" wrap="nowrap">
        <TextInput
          aria-label="Filter devices"
          placeholder='Filter: os<10 last_contact>7d fleet=Warehouse app=com.example.app model~"Galaxy"'
          leftSection={<IconFilter size={16} />}
          value={value}
          onChange={(e) => onChange(e.currentTarget.value)}
          error={problem}
          styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)' } }}
          spellCheck={false}
          autoComplete="off"
          style={{ flex: 1 }}
          data-testid="where-input"
        />
        {view !== null ? (
          <Button variant="default" leftSection={<IconShieldCheck size={16} />} onClick={() => setPolicies(true)}>
            Policies{view.assignments ? ` (${view.assignments})` : ''}
          </Button>
        ) : null}
        {canSave && view !== null && changed && valid ? (
          <Button
            variant="light"
            loading={save.isPending}
            onClick={() =>
              save.mutate(
                { id: view.id, name: view.name, where: value.trim() },
                {
                  onSuccess: (saved) => (notifySuccess(`View "${saved.name}" updated`), onSaved(saved)),
                  onError: (e) => notifyError('Not saved', e),
                },
              )
            }
          >
            Update view
          </Button>
        ) : null}
        {canSave && valid && (view === null || changed) ? (
          <Button
            variant="light"
            leftSection={<IconDeviceFloppy size={16} />}
            onClick={() => {
              setName('');
              setNaming(true);
            }}
          >
            Save as view
          </Button>
        ) : null}
      </Group>
      {view !== null ? <ViewPoliciesModal view={view} opened={policies} onClose={() => setPolicies(false)} /> : null}
      <Modal opened={naming} onClose={() => setNaming(false)} title="Save as view">
        <form
          onSubmit={(event) => {
            event.preventDefault();
            save.mutate(
              { name: name.trim(), where: value.trim() },
              {
                onSuccess: (saved) => {
                  notifySuccess(`View "${saved.name}" saved: ${saved.count} device${saved.count === 1 ? '' : 's'}`);
                  setNaming(false);
                  onSaved(saved);
                },
                onError: (e) => notifyError('Not saved', e),
              },
            );
          }}
        >
          <Stack>
            <Text size="sm" c="dimmed" style={{ fontFamily: 'var(--mantine-font-family-monospace)', wordBreak: 'break-all' }}>
              {value.trim()}
            </Text>
            <TextInput
              label="Name"
              description="Shown in the sidebar with how many devices match, kept current as devices change"
              data-autofocus
              value={name}
              onChange={(e) => setName(e.currentTarget.value)}
              maxLength={100}
              required
            />
            <Group justify="flex-end">
              <Button type="submit" loading={save.isPending} disabled={name.trim() === ''}>
                Save view
              </Button>
            </Group>
          </Stack>
        </form>
      </Modal>
    </>
  );
}
