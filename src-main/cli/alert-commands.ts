// `alerts`, `alert add|rm|enable|disable`, `webhooks`, `webhook add|rm|enable|disable|test|log`:
// alert rules, their incidents, and the webhooks they notify (docs/alerts.md).
import { readFileSync } from 'node:fs';
import { output, parse, positiveInt, type Handler } from './handler.ts';
import { CliError } from './server-file.ts';
import { fleetIds } from './token-commands.ts';
import {
  ALERT_KIND_INFO,
  ALERT_KINDS,
  type AlertIncident,
  type AlertKind,
  type AlertRule,
  type Webhook,
  type WebhookDelivery,
} from '../../src-shared/contract/index.ts';
import type { AdminClient } from '../../src-shared/contract/admin-client.ts';

const ruleLine = (r: AlertRule) =>
  `#${r.id}  ${r.enabled ? 'enabled ' : 'disabled'}  ${r.name}` +
  (r.name.startsWith(r.condition) ? '' : `  (${r.condition})`) +
  (r.fleet_name ? `  fleet ${r.fleet_name}` : '') +
  `\n     notifies: ${[...r.emails, ...r.webhook_ids.map((id) => `webhook #${id}`)].join(', ') || 'nobody (console only)'}` +
  `  open incidents: ${r.open_incidents}`;

const incidentLine = (i: AlertIncident) =>
  `#${i.id}  ${i.state === 'open' ? 'OPEN    ' : 'resolved'}  ${i.rule_name}: ${i.subject} — ${i.detail}` +
  `\n     opened ${i.opened_at}${i.resolved_at ? `, resolved ${i.resolved_at}` : `, last seen ${i.last_seen_at}`}`;

const deliveryLine = (d: WebhookDelivery) =>
  `#${d.id}  ${d.created_at}  ${d.event}  ${d.state}  attempt ${d.attempts}/${d.max_attempts}` +
  (d.response_code === null ? '' : `  HTTP ${d.response_code}`) +
  (d.response_ms === null ? '' : `  ${d.response_ms} ms`) +
  (d.error ? `  ${d.error}` : '') +
  (d.next_attempt_at ? `  next attempt ${d.next_attempt_at}` : '');

const webhookLine = (w: Webhook) =>
  `#${w.id}  ${w.enabled ? 'enabled ' : 'disabled'}  ${w.name}  ${w.url}  secret ${w.secret_hint}` +
  (w.rule_ids.length > 0 ? `  rules #${w.rule_ids.join(', #')}` : '') +
  (w.last_delivery ? `\n     last: ${deliveryLine(w.last_delivery)}` : '');

/** `alerts [--state open|resolved|all] [--limit N]`: the rules, then their incidents (open ones by default). */
const alerts: Handler = async (argv) => {
  const { values, admin, json } = parse(argv, { state: { type: 'string' }, limit: { type: 'string' } });
  const state = (values.state as string | undefined) ?? 'open';
  if (!['open', 'resolved', 'all'].includes(state)) throw new CliError(`--state must be open, resolved or all, not "${state}"`);
  const client = admin();
  const rules = (await client.alerts.rules()).items;
  const incidents = (
    await client.alerts.incidents({
      query: {
        ...(state === 'all' ? {} : { state: state as 'open' | 'resolved' }),
        ...(values.limit === undefined ? {} : { limit: positiveInt(values.limit as string, '--limit') }),
      },
    })
  ).items;
  return output(json, { rules, incidents }, () => {
    const ruleText = rules.length > 0 ? rules.map(ruleLine).join('\n') : 'No alert rules (add one: alert add KIND …).';
    const what = state === 'all' ? 'Incidents' : `${state === 'open' ? 'Open' : 'Resolved'} incidents`;
    const incidentText = incidents.length > 0 ? incidents.map(incidentLine).join('\n') : 'none';
    return `Rules:\n${ruleText}\n\n${what}:\n${incidentText}`;
  });
};

const ALERT_USAGE =
  `usage: alert add ${ALERT_KINDS.join('|')} [--days N | --hours N] [--fleet NAME|ID] [--email ADDR]... [--webhook ID]... [--name N] [--disabled]\n` +
  `       alert rm ID | alert enable ID | alert disable ID`;

const alert: Handler = async (argv) => {
  const [action, ...rest] = argv;
  if (action === 'add') {
    const { values, positionals, admin, json } = parse(rest, {
      days: { type: 'string' },
      hours: { type: 'string' },
      fleet: { type: 'string' },
      email: { type: 'string', multiple: true },
      webhook: { type: 'string', multiple: true },
      name: { type: 'string' },
      disabled: { type: 'boolean' },
    });
    const kind = positionals[0];
    if (!kind || !(ALERT_KINDS as readonly string[]).includes(kind)) {
      throw new CliError(`alert add needs a kind: ${ALERT_KINDS.join(', ')}${kind ? ` (not "${kind}")` : ''}\n${ALERT_USAGE}`);
    }
    const info = ALERT_KIND_INFO[kind as AlertKind].threshold;
    let threshold: number | undefined;
    for (const unit of ['days', 'hours'] as const) {
      if (values[unit] === undefined) continue;
      if (info?.unit !== unit) {
        throw new CliError(info ? `${kind} takes --${info.unit}, not --${unit}` : `${kind} takes no threshold (no --${unit})`);
      }
      threshold = positiveInt(values[unit] as string, `--${unit}`);
    }
    const client = admin();
    const [fleetId] = values.fleet === undefined ? [] : await fleetIds(client, [values.fleet as string]);
    const webhooks = ((values.webhook as unknown as string[] | undefined) ?? []).map((id) => positiveInt(id, '--webhook'));
    const rule = await client.alerts.createRule({
      body: {
        kind: kind as AlertKind,
        ...(threshold === undefined ? {} : { threshold }),
        ...(fleetId === undefined ? {} : { fleet_id: fleetId }),
        ...(values.email === undefined ? {} : { emails: values.email as unknown as string[] }),
        ...(webhooks.length > 0 ? { webhook_ids: webhooks } : {}),
        ...(values.name === undefined ? {} : { name: values.name as string }),
        ...(values.disabled ? { enabled: false } : {}),
      },
    });
    return output(json, rule, () => `Alert rule created\n${ruleLine(rule)}`);
  }
  if (action === 'rm' || action === 'enable' || action === 'disable') {
    const { positionals, admin, json } = parse(rest, {});
    const id = positiveInt(positionals[0], 'the rule id');
    const client = admin();
    if (action === 'rm') {
      const removed = await client.alerts.deleteRule({ params: { id } });
      return output(json, removed, () => `Alert rule #${removed.id} "${removed.name}" deleted`);
    }
    const rule = await client.alerts.updateRule({ params: { id }, body: { enabled: action === 'enable' } });
    return output(json, rule, () => `Alert rule ${action}d\n${ruleLine(rule)}`);
  }
  throw new CliError(ALERT_USAGE);
};

const webhooks: Handler = async (argv) => {
  const { admin, json } = parse(argv, {});
  const { items } = await admin().webhooks.list();
  return output(json, items, () => items.map(webhookLine).join('\n') || 'No webhooks (add one: webhook add URL).');
};

const WEBHOOK_USAGE =
  'usage: webhook add URL [--secret S | --secret-file FILE] [--name N] [--disabled]\n' +
  '       webhook rm ID | webhook enable ID | webhook disable ID | webhook test ID [--no-wait] | webhook log ID [--limit N]';

/** Polls the delivery until it is delivered or failed, or a retry is scheduled (then says when). */
async function waitForDelivery(client: AdminClient, webhookId: number, deliveryId: number): Promise<WebhookDelivery> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const { items } = await client.webhooks.deliveries({ params: { id: webhookId }, query: { limit: 20 } });
    const delivery = items.find((d) => d.id === deliveryId);
    if (!delivery) throw new CliError(`Delivery #${deliveryId} is no longer in the log`);
    if (delivery.state !== 'sending' && (delivery.state !== 'queued' || delivery.attempts > 0)) return delivery;
    if (Date.now() > deadline) return delivery;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const webhook: Handler = async (argv) => {
  const [action, ...rest] = argv;
  if (action === 'add') {
    const { values, positionals, admin, json } = parse(rest, {
      secret: { type: 'string' },
      'secret-file': { type: 'string' },
      name: { type: 'string' },
      disabled: { type: 'boolean' },
    });
    const url = positionals[0];
    if (!url) throw new CliError(WEBHOOK_USAGE);
    if (values.secret !== undefined && values['secret-file'] !== undefined)
      throw new CliError('give --secret or --secret-file, not both');
    let secret = values.secret as string | undefined;
    if (values['secret-file'] !== undefined) {
      try {
        secret = readFileSync(values['secret-file'] as string, 'utf8')
          .split(/\r?\n/)[0]!
          .trim();
      } catch (error) {
        throw new CliError(`Cannot read --secret-file: ${(error as Error).message}`);
      }
    }
    const created = await admin().webhooks.create({
      body: {
        url,
        ...(secret === undefined ? {} : { secret }),
        ...(values.name === undefined ? {} : { name: values.name as string }),
        ...(values.disabled ? { enabled: false } : {}),
      },
    });
    return output(json, created, () =>
      created.secret
        ? `Webhook added. Its secret (shown this once: give it to the receiver now)\n  ${created.secret}\n${webhookLine(created)}`
        : `Webhook added\n${webhookLine(created)}`,
    );
  }
  if (action === 'rm' || action === 'enable' || action === 'disable') {
    const { positionals, admin, json } = parse(rest, {});
    const id = positiveInt(positionals[0], 'the webhook id');
    const client = admin();
    if (action === 'rm') {
      const removed = await client.webhooks.delete({ params: { id } });
      return output(json, removed, () => `Webhook #${removed.id} "${removed.name}" deleted`);
    }
    const changed = await client.webhooks.update({ params: { id }, body: { enabled: action === 'enable' } });
    return output(json, changed, () => `Webhook ${action}d\n${webhookLine(changed)}`);
  }
  if (action === 'test') {
    const { values, positionals, admin, json } = parse(rest, { 'no-wait': { type: 'boolean' } });
    const id = positiveInt(positionals[0], 'the webhook id');
    const client = admin();
    const queued = await client.webhooks.test({ params: { id } });
    const delivery = values['no-wait'] ? queued : await waitForDelivery(client, id, queued.id);
    if (json) return output(json, delivery, () => '');
    console.log(`Test event: ${deliveryLine(delivery)}`);
    // Delivered: 0; still waiting or failed: the receiver did not take it (yet).
    return delivery.state === 'delivered' || values['no-wait'] ? 0 : 1;
  }
  if (action === 'log') {
    const { values, positionals, admin, json } = parse(rest, { limit: { type: 'string' } });
    const id = positiveInt(positionals[0], 'the webhook id');
    const { items } = await admin().webhooks.deliveries({
      params: { id },
      query: values.limit === undefined ? {} : { limit: positiveInt(values.limit as string, '--limit') },
    });
    return output(json, items, () => items.map(deliveryLine).join('\n') || 'No deliveries yet (send one: webhook test ID).');
  }
  throw new CliError(WEBHOOK_USAGE);
};

export const alertCommands: Record<string, Handler> = { alerts, alert, webhooks, webhook };
