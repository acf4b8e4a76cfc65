import { Button, Checkbox, Group, Modal, NumberInput, Progress, Select, SimpleGrid, Stack, Text } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useState } from 'react';
import { admin, AdminApiError, errorMessage } from '../api/client.ts';
import { createInvitations, keys, useFleets, useSettings, validateInvitations } from '../api/queries.ts';
import type { Invitation } from '../../src-shared/contract/index.ts';
import { notifyError } from '../components/common.tsx';
import { createInBatches, validateInChunks, type BulkOutcome } from '../lib/bulk-create.ts';
import {
  mergeServerErrors,
  parseCsvText,
  parsePasted,
  toInvitationInput,
  validateRows,
  type ImportResult,
  type ImportRow,
} from '../lib/invitation-import.ts';
import { INVITATION_LIFETIME_DAYS as LIFETIME } from '../../src-shared/contract/rules.ts';
import { UnreachableWarning } from '../features/reachability.tsx';
import { Preview } from './bulk-import/Preview.tsx';
import { Summary } from './bulk-import/Summary.tsx';
import { SourceTabs } from './bulk-import/SourceTabs.tsx';

type Phase = 'input' | 'creating' | 'done';

/** Many invitations at once: paste addresses or drop a CSV, check every row, create, summarize. */
export function BulkImportModal({ opened, onClose }: { opened: boolean; onClose: () => void }) {
  const client = useQueryClient();
  const fleets = useFleets();
  const settings = useSettings();
  const [tab, setTab] = useState<string | null>('paste');
  const [text, setText] = useState('');
  const [file, setFile] = useState<{ name: string; result: ImportResult } | null>(null);
  const [fleet, setFleet] = useState<string | null>(null);
  const [days, setDays] = useState<number | string>('');
  const [serverErrors, setServerErrors] = useState<{ sent: ImportRow[]; errors: string[] } | null>(null);
  const [phase, setPhase] = useState<Phase>('input');
  const [progress, setProgress] = useState({ done: 0, total: 0 });
  const [outcome, setOutcome] = useState<BulkOutcome<Invitation> | null>(null);
  const [fileError, setFileError] = useState<string | null>(null);
  const [sendEmail, setSendEmail] = useState<boolean | null>(null);
  // Addresses with a pending invitation are refused unless this says to invite them again.
  const [alsoPending, setAlsoPending] = useState(false);
  // The CLI's rule too: all or nothing, unless the admin chooses to create the valid rows only.
  const [skipInvalid, setSkipInvalid] = useState(false);
  const [batchIds, setBatchIds] = useState<string[]>([]);
  const mailOn = typeof settings.data?.mail_send_on_create === 'boolean';
  const emailThem = sendEmail ?? settings.data?.mail_send_on_create === true;

  const [debouncedText] = useDebouncedValue(text, 200);
  const parsed: ImportResult = useMemo(
    () => (tab === 'csv' ? (file?.result ?? { rows: [], errors: [] }) : parsePasted(debouncedText)),
    [tab, file, debouncedText],
  );
  const fleetNames = useMemo(() => fleets.data?.map((f) => f.name), [fleets.data]);
  // Fleets the rows name that do not exist yet: created first when the admin asks for it.
  const [createFleets, setCreateFleets] = useState(false);
  const missingFleets = useMemo(() => {
    if (!fleetNames) return [];
    const known = new Set(fleetNames.map((name) => name.toLowerCase()));
    const missing = new Map<string, string>();
    for (const row of parsed.rows) {
      const name = row.fleet?.trim();
      if (name && !known.has(name.toLowerCase()) && name.length <= 100) missing.set(name.toLowerCase(), name);
    }
    return [...missing.values()];
  }, [parsed, fleetNames]);
  const acceptedFleets = useMemo(
    () => (fleetNames && createFleets ? [...fleetNames, ...missingFleets] : fleetNames),
    [fleetNames, createFleets, missingFleets],
  );
  const checked = useMemo(
    () => validateRows(parsed.rows, acceptedFleets ? { fleets: acceptedFleets } : {}),
    [parsed, acceptedFleets],
  );
  const rows = useMemo(
    () =>
      serverErrors
        ? mergeServerErrors(
            checked,
            serverErrors.sent,
            createFleets ? serverErrors.errors.filter((e) => !/unknown fleet/i.test(e)) : serverErrors.errors,
          )
        : checked,
    [checked, serverErrors, createFleets],
  );
  const valid = rows.filter((row) => row.problems.length === 0);
  const invalid = rows.length - valid.length;
  const daysValue = days === '' ? null : Number(days);
  const defaults = { fleet, days: daysValue };

  // The server has the last word (e.g. rules the console does not know): ask it about the rows
  // that look fine here, and show its answers in the same preview.
  useEffect(() => {
    setServerErrors(null);
    const candidates = checked.filter((row) => row.problems.length === 0);
    if (candidates.length === 0) return;
    const controller = new AbortController();
    const timer = setTimeout(() => {
      // Large imports are asked about in requests of 5,000 rows (the endpoint's limit).
      validateInChunks(
        candidates,
        async (part) =>
          (
            await validateInvitations(
              part.map((row) => toInvitationInput(row, defaults)),
              alsoPending,
            )
          ).errors,
      )
        .then((errors) => {
          if (!controller.signal.aborted) setServerErrors({ sent: candidates, errors });
        })
        // The server's check is a preview on top of the console's own: when it fails (or is aborted by
        // a newer edit), the rows keep the console's verdict and the import itself reports any refusal.
        .catch(() => {});
    }, 250);
    return () => {
      controller.abort();
      clearTimeout(timer);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- `defaults` is rebuilt each render from fleet and daysValue, which are listed
  }, [checked, fleet, daysValue, alsoPending]);

  const readFile = async (files: File[]) => {
    const picked = files[0];
    if (!picked) return;
    setFileError(null);
    try {
      const content = await picked.text();
      setFile({ name: picked.name, result: parseCsvText(content) });
    } catch (error) {
      setFileError(`Could not read ${picked.name}: ${errorMessage(error)}`);
    }
  };

  const close = () => {
    if (phase === 'creating') return;
    onClose();
    // Start afresh next time, unless rows were left to fix.
    if (phase === 'done') {
      setText('');
      setFile(null);
      setOutcome(null);
      setPhase('input');
    }
  };

  const create = async () => {
    if (valid.length === 0 || (invalid > 0 && !skipInvalid)) return;
    setPhase('creating');
    if (createFleets) {
      for (const name of missingFleets) {
        try {
          await admin.fleets.create({ body: { name } });
        } catch (error) {
          // Created meanwhile (by someone else): fine; anything else stops here, nothing sent yet.
          if (!(error instanceof AdminApiError && error.status === 409)) {
            notifyError(`Fleet "${name}" could not be created`, error);
            setPhase('input');
            return;
          }
        }
      }
      void client.invalidateQueries({ queryKey: keys.fleets });
    }
    const batches: string[] = [];
    const result = await createInBatches<Invitation>(
      valid,
      async (batch) => {
        const created = await createInvitations(
          batch.map((row) => toInvitationInput(row, defaults)),
          mailOn ? emailThem : undefined,
          alsoPending,
        );
        if (created.mail.batch_id && created.mail.queued > 0) batches.push(created.mail.batch_id);
        return created.items;
      },
      {
        batchSize: 25,
        onProgress: (done, total) => setProgress({ done, total }),
        errorOf: (error) => ({ message: errorMessage(error), errors: error instanceof AdminApiError ? error.errors : [] }),
      },
    );
    setOutcome(result);
    setBatchIds(batches);
    setPhase('done');
    void client.invalidateQueries({ queryKey: keys.invitations });
  };

  return (
    <Modal
      opened={opened}
      onClose={close}
      title="Invite many people"
      size="85rem"
      closeOnClickOutside={phase !== 'creating'}
      closeOnEscape={phase !== 'creating'}
      withCloseButton={phase !== 'creating'}
    >
      {phase === 'done' && outcome ? (
        <Summary outcome={outcome} skipped={invalid} onClose={close} batchIds={batchIds} />
      ) : phase === 'creating' ? (
        <Stack py="xl" gap="sm" data-testid="bulk-progress">
          <Text fw={600}>
            Creating invitations… {progress.done.toLocaleString()} of {progress.total.toLocaleString()}
          </Text>
          <Progress
            value={progress.total ? (progress.done / progress.total) * 100 : 0}
            size="xl"
            striped
            animated
            aria-label="Invitations created"
          />
          <Text size="sm" c="dimmed">
            Keep this window open until it finishes.
          </Text>
        </Stack>
      ) : (
        <Stack>
          <SimpleGrid cols={{ base: 1, md: 2 }} spacing="lg">
            <Stack gap="sm">
              <SourceTabs
                tab={tab}
                onTab={setTab}
                text={text}
                onText={setText}
                fileName={file?.name ?? null}
                fileError={fileError}
                onFiles={(files) => void readFile(files)}
                onReject={() => setFileError('Drop one CSV or text file')}
              />
              <SimpleGrid cols={2}>
                <Select
                  label="Fleet for rows without one"
                  placeholder="Default fleet"
                  data={(fleets.data ?? []).map((f) => f.name)}
                  value={fleet}
                  onChange={setFleet}
                  clearable
                />
                <NumberInput
                  label="Valid for (days)"
                  placeholder={`${settings.data?.invitation_lifetime_days ?? 7} (default)`}
                  min={LIFETIME.min}
                  max={LIFETIME.max}
                  allowDecimal={false}
                  value={days}
                  onChange={setDays}
                />
              </SimpleGrid>
              {missingFleets.length > 0 ? (
                <Checkbox
                  label={`Create the fleet${missingFleets.length === 1 ? '' : 's'} the rows name: ${missingFleets.slice(0, 5).join(', ')}${missingFleets.length > 5 ? ` and ${missingFleets.length - 5} more` : ''}`}
                  description="Otherwise those rows are refused as naming an unknown fleet."
                  checked={createFleets}
                  onChange={(e) => setCreateFleets(e.currentTarget.checked)}
                  data-testid="create-fleets"
                />
              ) : null}
              {mailOn ? (
                <Checkbox
                  label="Email each person their invitation"
                  description="Sent in the background; the summary shows how it goes."
                  checked={emailThem}
                  onChange={(e) => setSendEmail(e.currentTarget.checked)}
                />
              ) : null}
              <Checkbox
                label="Also invite people who already have a pending invitation"
                description="Off: they are listed as problems and skipped (resend their invitation from its page instead)."
                checked={alsoPending}
                onChange={(e) => setAlsoPending(e.currentTarget.checked)}
              />
            </Stack>
            <Preview rows={rows} errors={parsed.errors} />
          </SimpleGrid>
          <UnreachableWarning
            what={
              emailThem ? 'The emails, QR codes and links of these invitations' : 'The QR codes and links of these invitations'
            }
          />
          <Group justify="space-between">
            <Stack gap={4}>
              <Text size="sm" c="dimmed" data-testid="bulk-counts">
                {rows.length === 0
                  ? 'Nothing to import yet.'
                  : `${rows.length.toLocaleString()} row${rows.length === 1 ? '' : 's'}: ${valid.length.toLocaleString()} ready${invalid ? `, ${invalid.toLocaleString()} with problems (${skipInvalid ? 'they will be skipped' : 'fix them, or skip them'})` : ''}.`}
              </Text>
              {invalid > 0 && valid.length > 0 ? (
                <Checkbox
                  size="xs"
                  label={`Skip the ${invalid.toLocaleString()} row${invalid === 1 ? '' : 's'} with problems and create the others`}
                  checked={skipInvalid}
                  onChange={(e) => setSkipInvalid(e.currentTarget.checked)}
                  data-testid="skip-invalid"
                />
              ) : null}
            </Stack>
            <Group gap="sm">
              <Button variant="default" onClick={close}>
                Cancel
              </Button>
              <Button
                onClick={() => void create()}
                disabled={
                  valid.length === 0 ||
                  (invalid > 0 && !skipInvalid) ||
                  (daysValue !== null && (daysValue < LIFETIME.min || daysValue > LIFETIME.max))
                }
              >
                {valid.length
                  ? `Create ${valid.length.toLocaleString()} invitation${valid.length === 1 ? '' : 's'}`
                  : 'Create invitations'}
              </Button>
            </Group>
          </Group>
        </Stack>
      )}
    </Modal>
  );
}
