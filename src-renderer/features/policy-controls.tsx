import { Badge, Group, NumberInput, Select, Switch, Tooltip } from '@mantine/core';
import type { PolicyCatalogueEntry } from '../../src-shared/contract/index.ts';

// The controls the policy catalogue asks for, shared by a fleet's policies and a device's own values.

export type Value = boolean | number | string;

export const showValue = (policy: PolicyCatalogueEntry | undefined, value: Value | null) => {
  if (value === null) return '—';
  if (typeof value === 'boolean') return value ? 'Yes' : 'No';
  const choice = policy?.choices?.find((c) => c.value === value);
  if (choice) return choice.label;
  if (!policy?.unit) return String(value);
  // "1 character", "1 attempt", not "1 characters".
  return `${value} ${value === 1 ? policy.unit.replace(/s$/, '') : policy.unit}`;
};

/** The control the catalogue asks for: a switch, a bounded number with its unit, or a list of choices. */
export function ValueControl({
  policy,
  value,
  onChange,
}: {
  policy: PolicyCatalogueEntry;
  value: Value;
  onChange: (value: Value) => void;
}) {
  if (policy.type === 'bool')
    return (
      <Switch
        checked={value === true}
        onChange={(event) => onChange(event.currentTarget.checked)}
        aria-label={policy.label}
        label={value === true ? 'Yes' : 'No'}
      />
    );
  if (policy.type === 'int') {
    const schema = policy.schema as { minimum?: number; maximum?: number };
    return (
      <NumberInput
        size="xs"
        w={170}
        value={typeof value === 'number' ? value : 0}
        min={schema.minimum}
        max={schema.maximum}
        clampBehavior="strict"
        allowDecimal={false}
        allowNegative={false}
        suffix={policy.unit ? ` ${policy.unit === 'milliseconds' ? 'ms' : policy.unit === 'seconds' ? 's' : ''}` : undefined}
        onChange={(next) => onChange(typeof next === 'number' ? next : Number(next) || 0)}
        aria-label={policy.label}
      />
    );
  }
  return (
    <Select
      size="xs"
      w={170}
      data={(policy.choices ?? []).map((c) => ({ value: c.value, label: c.label }))}
      value={String(value)}
      onChange={(next) => next !== null && onChange(next)}
      allowDeselect={false}
      aria-label={policy.label}
    />
  );
}

export function Marks({ policy }: { policy: PolicyCatalogueEntry }) {
  return (
    <Group gap={4}>
      <Badge size="xs" variant="outline" color="gray">
        Android ≥ {policy.androidMinVersion}
      </Badge>
      {policy.systemOnly ? (
        <Tooltip label="Needs the agent installed as a system app; other devices report it incompatible">
          <Badge size="xs" variant="light" color="orange">
            system agent
          </Badge>
        </Tooltip>
      ) : null}
    </Group>
  );
}
