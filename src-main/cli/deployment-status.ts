// `deployment ID`: one deployment (or any assignment) with each device's task, its history and,
// for packages, whether the device's inventory shows the install.
import { verificationText, type DeviceTask, type TaskVerification } from '../../src-shared/contract/index.ts';
import { output as print, parse, positiveInt, type Handler } from './handler.ts';
import { CliError } from './server-file.ts';

/** "verified (inventory of 2026-11-26T17:02:11.000Z: org.example.app 4.2 is installed …)" */
export function verificationLine(verification: TaskVerification | null | undefined): string {
  if (!verification) return '';
  const when = verification.inventory_at ? `inventory of ${verification.inventory_at}: ` : '';
  return `  [${verificationText(verification)}: ${when}${verification.detail}]`;
}

const taskLine = (task: DeviceTask) =>
  `    ${task.agent_name} (agent ${task.agent_id}): ${task.status_text}${task.reason ? ` — ${task.reason}` : ''}` +
  `${verificationLine(task.verification)}\n      ${(task.history ?? []).map((h) => h.status).join(' → ')}`;

const deployment: Handler = async (argv) => {
  const { positionals, admin, json } = parse(argv, {});
  if (positionals.length !== 1 && !(positionals.length === 2 && positionals[0] === 'status'))
    throw new CliError('usage: deployment [status] ID');
  const id = positiveInt(positionals.at(-1), 'the deployment id');
  const d = await admin().deployments.get({ params: { id } });
  return print(
    json,
    d,
    () =>
      `#${d.id}  ${d.policy} "${d.item_name}" → ${d.target_name}  ${d.state}  ${d.progress}\n  topic ${d.topic}\n` +
      (d.tasks.map(taskLine).join('\n') || '    (no device in scope yet)'),
  );
};

export const deploymentStatusCommands: Record<string, Handler> = { deployment };
