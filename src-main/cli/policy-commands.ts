// `policies`, `policy set|unset|status` and `compliance`: thin clients of the admin API. Values are
// read by the catalogue of the contract (the table the server validates with), so
// `policy set disableCamera yes` and `policy set passwordEnabled pin` mean what they say.
import { findView, selectionOf } from './view-commands.ts';
import type { ViewAssignment } from '../../src-shared/contract/index.ts';
import {
  COMPLIANCE_STATES,
  POLICY_CATALOGUE,
  type ComplianceState,
  policyDefinition,
  type Assignment,
  type DeviceCompliance,
  type EffectivePolicy,
  type PolicyDefinition,
} from '../../src-shared/contract/index.ts';
import { output as print, parse, positiveInt, type Handler } from './handler.ts';
import { findFleet } from './deploy-commands.ts';
import { verificationLine } from './deployment-status.ts';
import { CliError } from './server-file.ts';

const TRUE = ['true', 'yes', 'on', '1'];
const FALSE = ['false', 'no', 'off', '0'];

/** What `VALUE` means for this policy, or a CliError saying what it takes. */
export function parsePolicyValue(policy: PolicyDefinition, text: string): boolean | number | string {
  const clean = text.trim();
  switch (policy.type) {
    case 'bool':
      if (TRUE.includes(clean.toLowerCase())) return true;
      if (FALSE.includes(clean.toLowerCase())) return false;
      throw new CliError(`${policy.symbol} takes true or false (yes/no, on/off), not "${text}"`);
    case 'int': {
      const { minimum, maximum } = policy.schema as { minimum: number; maximum: number };
      const n = Number(clean);
      if (!/^\d+$/.test(clean) || n < minimum || n > maximum)
        throw new CliError(
          `${policy.symbol} takes a whole number from ${minimum} to ${maximum}${policy.unit ? ` (${policy.unit})` : ''}, not "${text}"`,
        );
      return n;
    }
    case 'dropdown': {
      const lower = clean.toLowerCase();
      const choice = policy.choices!.find(
        (c) => c.value.toLowerCase() === lower || c.label.toLowerCase() === lower || c.value.toLowerCase().endsWith(`_${lower}`),
      );
      if (!choice)
        throw new CliError(
          `${policy.symbol} takes one of ${policy.choices!.map((c) => `${c.value} (${c.label})`).join(', ')}, not "${text}"`,
        );
      return choice.value;
    }
    case 'deployment': {
      // deployApp / deployFile: the package's or file's id (package:ID and file:ID as deploy takes them);
      // removeApp: an Android package name; removeFile: a path on the device.
      if (policy.symbol === 'removeApp' || policy.symbol === 'removeFile') {
        if (clean === '')
          throw new CliError(
            `${policy.symbol} takes ${policy.symbol === 'removeApp' ? 'an Android package name' : 'a path on the device'}`,
          );
        return clean;
      }
      const kind = policy.symbol === 'deployApp' ? 'package' : 'file';
      const id = new RegExp(`^(?:${kind}:)?([1-9]\\d*)$`).exec(clean)?.[1];
      if (id === undefined || !Number.isSafeInteger(Number(id)))
        throw new CliError(
          `${policy.symbol} takes a ${kind} id (see: ${kind === 'package' ? 'packages' : 'files'}), not "${text}"`,
        );
      return Number(id);
    }
  }
}

function known(symbol: string | undefined): PolicyDefinition {
  const policy = symbol === undefined ? undefined : policyDefinition(symbol);
  if (!policy) {
    const near = symbol ? POLICY_CATALOGUE.filter((p) => p.symbol.toLowerCase() === symbol.toLowerCase()) : [];
    throw new CliError(`Unknown policy "${symbol ?? ''}"${near[0] ? ` (did you mean ${near[0].symbol}?)` : ''} (see: policies)`);
  }
  return policy;
}

const show = (value: unknown) => (value === null || value === undefined ? '-' : String(value));

function describeType(p: PolicyDefinition): string {
  if (p.type === 'int') {
    const { minimum, maximum } = p.schema as { minimum: number; maximum: number };
    return `int ${minimum}..${maximum}${p.unit ? ` ${p.unit}` : ''}`;
  }
  if (p.type === 'dropdown') return `one of ${p.choices!.map((c) => c.value).join('|')}`;
  return p.type;
}

const assignmentLine = (a: Assignment) =>
  `#${a.id}  ${a.policy}${a.value === null ? ` "${a.item_name}"` : ` = ${show(a.value)}`} → ${a.target_name}  ${a.state}  ${a.progress}`;

const effectiveLine = (p: EffectivePolicy) =>
  `  ${p.policy}${p.value === null ? ` "${p.item_name}"` : ` = ${show(p.value)}`}  from ${p.source === 'device' ? 'the device' : p.source_name}` +
  `  ${p.status}${p.reason ? ` (${p.reason})` : ''}${p.effective ? '' : '  [not applied]'}  #${p.assignment_id} task ${p.task_id}` +
  verificationLine(p.verification);

const complianceLine = (c: DeviceCompliance) =>
  `${c.agent_name} (agent ${c.agent_id}, fleet ${c.fleet_id})  ${c.state}  ${c.summary}`;

const policies: Handler = async (argv) => {
  const { values, json } = parse(argv, { category: { type: 'string' } });
  const filter = ((values.category as string | undefined) ?? '').toLowerCase();
  const items = POLICY_CATALOGUE.filter((p) => p.category.toLowerCase().includes(filter));
  return print(json, items, () => {
    const lines: string[] = [];
    let category = '';
    for (const p of items) {
      if (p.category !== category) lines.push(`${lines.length ? '\n' : ''}${(category = p.category)}`);
      lines.push(
        `  ${p.symbol.padEnd(30)} ${p.label}: ${p.explanation}\n` +
          `  ${''.padEnd(30)} ${describeType(p)}; default ${show(p.default)}, recommended ${show(p.recommended)}; Android ≥ ${p.androidMinVersion}${p.systemOnly ? '; system agent only' : ''}`,
      );
    }
    return lines.join('\n') || 'No policy in that category.';
  });
};

/** `--fleet NAME|ID` or `--agent ID`, exactly one. */
type Target = { fleet: string; agent_id?: undefined } | { agent_id: number; fleet?: undefined };

function target(values: Record<string, string | boolean | undefined>, usage: string): Target {
  if ((values.fleet === undefined) === (values.agent === undefined))
    throw new CliError(`${usage}: give exactly one of --fleet NAME|ID or --agent ID`);
  return values.fleet !== undefined
    ? { fleet: values.fleet as string }
    : { agent_id: positiveInt(values.agent as string, 'the agent id') };
}

const policy: Handler = async (argv) => {
  const { positionals, values, admin, json } = parse(argv, {
    fleet: { type: 'string' },
    agent: { type: 'string' },
    view: { type: 'string' },
    destination: { type: 'string' },
    'keep-on-remove': { type: 'boolean' },
  });
  const [action, symbol, ...rest] = positionals;
  if (values.view !== undefined) {
    // A saved view as the target: carried to each device in it, following who enters and leaves.
    if (values.fleet !== undefined || values.agent !== undefined)
      throw new CliError(`policy ${action ?? ''}: give exactly one of --fleet NAME|ID, --agent ID or --view NAME`);
    const view = await findView(admin(), values.view as string);
    const line = (a: ViewAssignment) =>
      `#${a.id}  ${a.policy} ${a.value === null ? a.item_name : JSON.stringify(a.value)}  view "${a.view}"  ${a.devices} device(s), ${a.done} done, ${a.pending} pending, ${a.failed} failed`;
    if (action === 'set' && rest.length === 1) {
      const definition = known(symbol);
      const deploys = definition.symbol === 'deployApp' || definition.symbol === 'deployFile';
      const created = await admin().views.assign({
        params: { id: view.id },
        body: {
          policy: definition.symbol,
          value: parsePolicyValue(definition, rest[0]!),
          ...(deploys ? { remove_on_delete: values['keep-on-remove'] !== true } : {}),
          ...(values.destination !== undefined ? { destination: values.destination as string } : {}),
        },
      });
      return print(json, created, () => `Policy ${line(created)}`);
    }
    const { items } = await admin().views.assignments({ params: { id: view.id } });
    const active = items.filter((a) => a.state === 'active');
    if (action === 'unset' && symbol !== undefined && rest.length === 0) {
      const definition = known(symbol);
      const found = active.filter((a) => a.policy === definition.symbol);
      if (found.length === 0)
        throw new CliError(`${definition.symbol} is not set on view "${view.name}" (see: policy status --view)`);
      if (found.length > 1) throw new CliError(`${definition.symbol} is set ${found.length} times on view "${view.name}"`);
      const removed = await admin().views.unassign({ params: { id: found[0]!.id } });
      return print(json, removed, () => `Unset: ${line(removed)}`);
    }
    if (action === 'status' && symbol === undefined)
      return print(json, active, () => `View "${view.name}":\n${active.map((a) => `  ${line(a)}`).join('\n') || '  no policy'}`);
  }
  if (action === 'set' && rest.length === 1) {
    const definition = known(symbol);
    const value = parsePolicyValue(definition, rest[0]!);
    const deploys = definition.symbol === 'deployApp' || definition.symbol === 'deployFile';
    if (values.destination !== undefined && definition.symbol !== 'deployFile')
      throw new CliError('--destination is for deployFile only');
    if (values['keep-on-remove'] !== undefined && !deploys)
      throw new CliError('--keep-on-remove is for deployApp and deployFile only');
    const created = await admin().policies.set({
      body: {
        policy: definition.symbol,
        value,
        ...target(values, 'policy set'),
        // As deploy does: what the device installed is removed with the assignment unless --keep-on-remove.
        ...(deploys ? { remove_on_delete: values['keep-on-remove'] !== true } : {}),
        ...(values.destination !== undefined ? { destination: values.destination as string } : {}),
      },
    });
    const tasks = created.tasks.map(
      (t) => `    ${t.agent_name} (agent ${t.agent_id}): ${t.status}${t.reason ? ` — ${t.reason}` : ''}`,
    );
    return print(
      json,
      created,
      () => `Policy ${assignmentLine(created)}\n  topic ${created.topic}\n${tasks.join('\n') || '    (no device in scope yet)'}`,
    );
  }
  if (action === 'unset' && symbol !== undefined && rest.length === 0) {
    let id: number;
    if (/^\d+$/.test(symbol) && values.fleet === undefined && values.agent === undefined)
      id = positiveInt(symbol, 'the assignment id');
    else {
      const definition = known(symbol);
      const where = target(values, 'policy unset');
      const filter =
        where.fleet !== undefined ? { fleet_id: (await findFleet(admin(), where.fleet)).id } : { agent_id: where.agent_id };
      const { items } = await admin().policies.list({ query: { ...filter, policy: definition.symbol, state: 'active' } });
      if (items.length === 0) throw new CliError(`${definition.symbol} is not set there (see: policy status)`);
      if (items.length > 1) throw new CliError(`${definition.symbol} is set ${items.length} times there: unset one by its id`);
      id = items[0]!.id;
    }
    const result = await admin().policies.unset({ params: { id } });
    return print(
      json,
      result,
      () =>
        `Unset: ${assignmentLine(result.removed)}` +
        (result.removal ? `\nRemoval published: ${assignmentLine(result.removal)}` : ''),
    );
  }
  if (action === 'status' && symbol === undefined) {
    const where = target(values, 'policy status');
    if (where.agent_id !== undefined) {
      const agentId = where.agent_id;
      const { items } = await admin().policies.ofAgent({ params: { id: agentId } });
      return print(json, items, () => `Agent ${agentId}:\n${items.map(effectiveLine).join('\n') || '  no policy'}`);
    }
    const fleet = await findFleet(admin(), where.fleet);
    const { items } = await admin().policies.list({ query: { fleet_id: fleet.id, state: 'active' } });
    return print(
      json,
      items,
      () => `Fleet "${fleet.name}" (#${fleet.id}):\n${items.map((a) => `  ${assignmentLine(a)}`).join('\n') || '  no policy'}`,
    );
  }
  throw new CliError(
    'usage: policy set SYMBOL VALUE (--fleet NAME|ID | --agent ID | --view NAME) [--destination PATH] [--keep-on-remove] | policy unset SYMBOL (--fleet NAME|ID | --agent ID | --view NAME) | policy unset ID | policy status (--fleet NAME|ID | --agent ID | --view NAME)',
  );
};

const compliance: Handler = async (argv) => {
  const { values, admin, json } = parse(argv, {
    fleet: { type: 'string' },
    state: { type: 'string' },
    view: { type: 'string' },
    where: { type: 'string' },
  });
  const state = values.state as string | undefined;
  if (state !== undefined && !(COMPLIANCE_STATES as readonly string[]).includes(state))
    throw new CliError(`--state takes one of ${COMPLIANCE_STATES.join(', ')}, not "${state}"`);
  const fleetId = values.fleet === undefined ? undefined : (await findFleet(admin(), values.fleet as string)).id;
  const { items: all } = await admin().policies.compliance({
    query: { fleet_id: fleetId, ...(state === undefined ? {} : { state: state as ComplianceState }) },
  });
  // --view NAME / --where EXPR: only the devices they select (docs/where.md).
  const selection = selectionOf({ view: values.view, where: values.where });
  const selected =
    Object.keys(selection).length === 0
      ? null
      : new Set((await admin().agents.list({ query: selection })).items.map((agent) => agent.id));
  const items = selected === null ? all : all.filter((item) => selected.has(item.agent_id));
  return print(json, items, () => items.map(complianceLine).join('\n') || 'No enrolled device.');
};

export const policyCommands: Record<string, Handler> = { policies, policy, compliance };
