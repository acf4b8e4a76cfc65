import { ActionIcon, Button, Group, Select, Stack, Text, Tooltip } from '@mantine/core';
import { IconTrash } from '@tabler/icons-react';
import { useMemo, useState } from 'react';
import { useAgentPolicies, usePolicyCatalogue, useSetPolicies, useUnsetPolicy } from '../api/queries.ts';
import type { EffectivePolicy } from '../../src-shared/contract/index.ts';
import { notifyError, notifySuccess } from '../components/common.tsx';
import { Gate } from '../components/permissions.tsx';
import { Marks, showValue, ValueControl, type Value } from './policy-controls.tsx';

// A device's own policy values, set and unset from its panel: the same catalogue forms as a fleet's.
// A device-level value beats its fleet's (the fleet's task of that device shows overriden).

/** Unsets a value set on the device itself: its fleet's value (if any) applies again. */
export function UnsetOwnValue({ policy }: { policy: EffectivePolicy }) {
  const unset = useUnsetPolicy();
  return (
    <Gate permission="policies.write">
      <Tooltip label="Unset this device's own value (its fleet's applies again)">
        <ActionIcon
          variant="subtle"
          color="red"
          aria-label={`Unset the device's ${policy.label}`}
          loading={unset.isPending}
          onClick={() =>
            unset.mutate(policy.assignment_id, {
              onSuccess: () => notifySuccess(`${policy.label}: the device's own value is unset`),
              onError: (e) => notifyError('Not unset', e),
            })
          }
        >
          <IconTrash size={16} />
        </ActionIcon>
      </Tooltip>
    </Gate>
  );
}

/** Picks a policy of the catalogue and sets (or changes) its value on this one device, showing what applies now and from where. */
export function DevicePolicyForm({ agentId }: { agentId: number }) {
  const catalogue = usePolicyCatalogue();
  const effective = useAgentPolicies(agentId);
  const set = useSetPolicies();
  const [symbol, setSymbol] = useState<string | null>(null);
  const [draft, setDraft] = useState<Value | null>(null);
  const values = useMemo(() => (catalogue.data ?? []).filter((p) => p.type !== 'deployment'), [catalogue.data]);
  const groups = useMemo(
    () =>
      [...new Set(values.map((p) => p.category))].map((category) => ({
        group: category,
        items: values.filter((p) => p.category === category).map((p) => ({ value: p.symbol, label: p.label })),
      })),
    [values],
  );
  const policy = values.find((p) => p.symbol === symbol);
  const entries = (effective.data ?? []).filter((e) => e.policy === symbol);
  const own = entries.find((e) => e.source === 'device');
  const applying = entries.find((e) => e.effective) ?? null;
  const current = (own?.value ?? applying?.value ?? null) as Value | null;
  const shown = draft ?? current ?? ((policy?.recommended ?? false) as Value);
  const changed = !own || shown !== own.value;
  return (
    <Stack gap={6} data-testid="device-policy-form">
      <Text size="sm" fw={500}>
        A value for this device only
      </Text>
      <Text size="xs" c="dimmed">
        It beats its fleet's value of the same policy; unset it and the fleet's applies again.
      </Text>
      <Group gap="xs" align="flex-end" wrap="wrap">
        <Select
          label="Policy"
          placeholder="Choose a policy"
          searchable
          data={groups}
          value={symbol}
          onChange={(next) => {
            setSymbol(next);
            setDraft(null);
          }}
          size="xs"
          w={260}
          comboboxProps={{ withinPortal: true }}
        />
        {policy ? <ValueControl policy={policy} value={shown} onChange={setDraft} /> : null}
        {policy ? (
          <Gate permission="policies.write">
            <Button
              size="xs"
              disabled={!changed}
              loading={set.isPending}
              onClick={() =>
                set.mutate([{ set: { policy: policy.symbol, value: shown, agent_id: agentId }, replaces: own?.assignment_id }], {
                  onSuccess: () => {
                    notifySuccess(`${policy.label}: ${showValue(policy, shown)} on this device`);
                    setDraft(null);
                  },
                  onError: (e) => notifyError('Not applied', e),
                })
              }
            >
              {own ? 'Change for this device' : 'Set for this device'}
            </Button>
          </Gate>
        ) : null}
      </Group>
      {policy ? (
        <Stack gap={4}>
          <Text size="xs" c="dimmed">
            {policy.explanation} Recommended: {showValue(policy, policy.recommended as Value)}.
          </Text>
          <Marks policy={policy} />
          <Text size="xs" data-testid="device-policy-current">
            {applying
              ? `In force: ${showValue(policy, applying.value as Value)}, from ${applying.source === 'device' ? 'this device' : applying.source_name} (${applying.status})`
              : 'Not set on this device or its fleet: the device keeps its own setting.'}
          </Text>
        </Stack>
      ) : null}
    </Stack>
  );
}
