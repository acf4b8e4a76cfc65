// `code create|revoke|rotate`, `codes`, `approve`, `reject`: enrollment codes and the devices waiting for approval.
import { output, parse, positiveInt, type Handler } from './handler.ts';
import { CliError } from './server-file.ts';
import type { CodeApproval, EnrollmentCode } from '../../src-shared/contract/index.ts';

const codeLine = (c: EnrollmentCode) =>
  `#${c.id}  ${c.name}  ${c.status}  uses ${c.uses}/${c.max_uses ?? '∞'}  ${c.expires_at ? `expires ${c.expires_at}` : 'never expires'}  ` +
  `fleet ${c.fleet ?? '-'}  domains ${c.domains.join(', ') || 'any'}  approval ${c.approval}` +
  `${c.pending_approval ? ` (${c.pending_approval} waiting)` : ''}\n    ${c.deeplink}`;

const code: Handler = async (argv) => {
  const [action, ...rest] = argv;
  if (action === 'create') {
    const { values, admin, json } = parse(rest, {
      name: { type: 'string' },
      fleet: { type: 'string' },
      domain: { type: 'string', multiple: true },
      'max-uses': { type: 'string' },
      days: { type: 'string' },
      approval: { type: 'string' },
    });
    if (!values.name) throw new CliError('code create needs --name NAME');
    const approval = values.approval as string | undefined;
    if (approval !== undefined && approval !== 'manual' && approval !== 'auto')
      throw new CliError(`--approval must be manual or auto, not "${approval}"`);
    const domains = values.domain as unknown as string[] | undefined;
    const created = await admin().codes.create({
      name: values.name as string,
      ...(values.fleet ? { fleet: values.fleet as string } : {}),
      ...(domains?.length ? { domains } : {}),
      ...(values['max-uses'] === undefined ? {} : { max_uses: positiveInt(values['max-uses'] as string, '--max-uses') }),
      ...(values.days === undefined ? {} : { days: positiveInt(values.days as string, '--days') }),
      ...(approval ? { approval: approval as CodeApproval } : {}),
    });
    return output(json, created, () => `Enrollment code created\n${codeLine(created)}`);
  }
  if (action === 'revoke' || action === 'rotate') {
    const { positionals, admin, json } = parse(rest, {});
    const id = positiveInt(positionals[0], 'the code id');
    const result = await admin().codes[action](id);
    return output(json, result, () =>
      action === 'revoke'
        ? `Enrollment code #${id} revoked`
        : `Enrollment code #${id} rotated: printed and shared copies no longer work. The new link:\n${codeLine(result)}`,
    );
  }
  throw new CliError(
    'usage: code create --name NAME [--fleet F] [--domain D]... [--max-uses K] [--days D] [--approval manual] | code revoke ID | code rotate ID',
  );
};

const codes: Handler = async (argv) => {
  const { admin, json } = parse(argv, {});
  const result = await admin().codes.list();
  return output(json, result.items, () => result.items.map(codeLine).join('\n') || 'No enrollment codes.');
};

const decide =
  (decision: 'approve' | 'reject'): Handler =>
  async (argv) => {
    const { positionals, admin, json } = parse(argv, {});
    const id = positiveInt(positionals[0], 'the agent id');
    const agent = await admin().agents[decision](id);
    return output(
      json,
      agent,
      () =>
        `Agent #${id} ${agent.name} ${decision === 'approve' ? 'approved: it may connect now' : 'rejected: the device is free again'}`,
    );
  };

export const codeCommands: Record<string, Handler> = { code, codes, approve: decide('approve'), reject: decide('reject') };
