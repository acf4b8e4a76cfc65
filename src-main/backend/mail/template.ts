/**
 * The invitation email templates: `{{name}}` inserts a value, escaped for where it goes (HTML
 * entities in the HTML part, line breaks folded in the subject); `{{#name}}…{{/name}}` keeps its
 * content only when the value is not empty, `{{^name}}…{{/name}}` only when it is. There is no
 * way to insert a value unescaped. Unknown names are errors, found before anything is saved.
 */
import { escapeHtml } from '../util/html.ts';

export const TEMPLATE_PLACEHOLDERS = {
  name: 'first and last name, or the email address when there is none',
  firstname: 'first name (may be empty)',
  lastname: 'last name (may be empty)',
  email: 'the invited address',
  inviter: 'who invites (settings: inviter, else the helpdesk name)',
  deeplink: 'the enrollment link (deeplink page URL with the invitation data)',
  app_link: 'the app link the agent opens directly (<scheme>://register?data=…)',
  qr_src: 'the QR code image source for <img src="…"> (an inline cid: attachment)',
  expires: 'expiry date and time, readable',
  expires_iso: 'expiry as an ISO 8601 timestamp',
  days_left: 'whole days until expiry',
  agent_app_url: 'where to get the agent app (may be empty)',
  helpdesk_name: 'helpdesk name (may be empty)',
  helpdesk_phone: 'helpdesk phone (may be empty)',
  helpdesk_email: 'helpdesk email (may be empty)',
  helpdesk_website: 'helpdesk website (may be empty)',
  helpdesk: 'non-empty when any helpdesk field is set (for {{#helpdesk}}…{{/helpdesk}})',
} as const;

export type PlaceholderName = keyof typeof TEMPLATE_PLACEHOLDERS;
export type TemplateValues = Record<PlaceholderName, string>;

type Node =
  | { kind: 'text'; text: string }
  | { kind: 'value'; name: PlaceholderName }
  | { kind: 'section'; name: PlaceholderName; inverted: boolean; body: Node[] };

export class TemplateError extends Error {
  readonly errors: string[];
  constructor(what: string, errors: string[]) {
    super(`${what} template: ${errors.join('; ')}`);
    this.errors = errors;
  }
}

const TAG = /^([#^/]?)\s*([A-Za-z_][A-Za-z0-9_]*)$/;

/** Counts lines as the parser advances, so a long template is read once, not once per tag. */
function lineCounter(source: string): (index: number) => number {
  let line = 1;
  let counted = 0;
  return (index) => {
    for (; counted < index; counted++) if (source.charCodeAt(counted) === 10) line++;
    return line;
  };
}

function isPlaceholder(name: string): name is PlaceholderName {
  return Object.hasOwn(TEMPLATE_PLACEHOLDERS, name);
}

/** Parses a template; every problem is reported with its line, not only the first. */
export function parseTemplate(source: string): ParsedTemplate {
  const cached = parsed.get(source);
  if (cached) return cached;
  const result = parse(source);
  // A handful of templates are in use at a time; a bulk send renders the same ones thousands of times.
  if (parsed.size >= 16) parsed.delete(parsed.keys().next().value!);
  parsed.set(source, result);
  return result;
}

type ParsedTemplate = { nodes: Node[]; errors: string[] };
const parsed = new Map<string, ParsedTemplate>();

function parse(source: string): ParsedTemplate {
  const errors: string[] = [];
  const root: Node[] = [];
  const stack: { name: string; body: Node[]; line: number }[] = [];
  let current = root;
  let at = 0;
  const lineOf = lineCounter(source);
  while (at < source.length) {
    const open = source.indexOf('{{', at);
    if (open === -1) {
      current.push({ kind: 'text', text: source.slice(at) });
      break;
    }
    if (open > at) current.push({ kind: 'text', text: source.slice(at, open) });
    const close = source.indexOf('}}', open + 2);
    const line = lineOf(open);
    if (close === -1) {
      errors.push(`line ${line}: "{{" is never closed by "}}"`);
      break;
    }
    at = close + 2;
    const inner = source.slice(open + 2, close).trim();
    const match = TAG.exec(inner);
    if (!match) {
      errors.push(
        `line ${line}: "{{${inner}}}" is not a placeholder (write {{name}}, {{#name}}…{{/name}} or {{^name}}…{{/name}})`,
      );
      continue;
    }
    const [, sigil, name] = match as unknown as [string, string, string];
    if (!isPlaceholder(name)) {
      errors.push(`line ${line}: unknown placeholder "${name}"`);
      if (sigil === '#' || sigil === '^') stack.push({ name, body: current, line });
      else if (sigil === '/' && stack.at(-1)?.name === name) current = stack.pop()!.body;
      continue;
    }
    if (sigil === '#' || sigil === '^') {
      const section: Node = { kind: 'section', name, inverted: sigil === '^', body: [] };
      current.push(section);
      stack.push({ name, body: current, line });
      current = section.body;
    } else if (sigil === '/') {
      const top = stack.at(-1);
      if (!top) errors.push(`line ${line}: "{{/${name}}}" closes nothing`);
      else if (top.name !== name)
        errors.push(`line ${line}: "{{/${name}}}" closes "{{#${top.name}}}" opened on line ${top.line}`);
      else current = stack.pop()!.body;
    } else {
      current.push({ kind: 'value', name });
    }
  }
  for (const open of stack.reverse()) errors.push(`line ${open.line}: "{{#${open.name}}}" is never closed`);
  return { nodes: root, errors };
}

export function checkTemplate(source: string): string[] {
  return parseTemplate(source).errors;
}

export { escapeHtml };

function renderNodes(nodes: Node[], values: TemplateValues, escape: (v: string) => string): string {
  let out = '';
  for (const node of nodes) {
    if (node.kind === 'text') out += node.text;
    else if (node.kind === 'value') out += escape(values[node.name]);
    else if ((values[node.name] !== '') !== node.inverted) out += renderNodes(node.body, values, escape);
  }
  return out;
}

export type TemplatePart = 'subject' | 'html' | 'text';

const ESCAPES: Record<TemplatePart, (v: string) => string> = {
  html: escapeHtml,
  text: (v) => v,
  subject: (v) => v.replace(/[\r\n\t]+/g, ' '),
};

/** Renders one part; throws TemplateError when the template is not valid. */
export function renderTemplate(part: TemplatePart, source: string, values: TemplateValues): string {
  const { nodes, errors } = parseTemplate(source);
  if (errors.length > 0) throw new TemplateError(part, errors);
  const out = renderNodes(nodes, values, ESCAPES[part]);
  return part === 'subject' ? out.replace(/\s+/g, ' ').trim() : out;
}

export const DEFAULT_SUBJECT_TEMPLATE = '{{inviter}} invites you to enroll your device';

export const DEFAULT_TEXT_TEMPLATE = `Hello {{name}},

{{inviter}} invites you to enroll your device in device management.

On the device to enroll, with the MDM agent app installed, open this link:

{{deeplink}}

Or open the attached QR code (enrollment-qr.png) on another screen and scan it with the MDM agent app.
{{#agent_app_url}}
No agent app yet? Get it here: {{agent_app_url}}
{{/agent_app_url}}{{^agent_app_url}}
No agent app yet? Install the MDM agent app from your device's app store first.
{{/agent_app_url}}
This invitation is for {{email}} and expires on {{expires}}.
{{#helpdesk}}
Need help?{{#helpdesk_name}}
  {{helpdesk_name}}{{/helpdesk_name}}{{#helpdesk_phone}}
  Phone: {{helpdesk_phone}}{{/helpdesk_phone}}{{#helpdesk_email}}
  Email: {{helpdesk_email}}{{/helpdesk_email}}{{#helpdesk_website}}
  Web: {{helpdesk_website}}{{/helpdesk_website}}
{{/helpdesk}}
If you did not expect this invitation, you can ignore this message.
`;

export const DEFAULT_HTML_TEMPLATE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Enroll your device</title>
</head>
<body style="margin:0;padding:0;background:#f4f5f7;font-family:-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;color:#1f2328;">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" style="background:#f4f5f7;padding:24px 0;">
<tr><td align="center">
<table role="presentation" width="560" cellpadding="0" cellspacing="0" style="max-width:560px;width:100%;background:#ffffff;border-radius:8px;padding:32px;">
<tr><td>
<h1 style="font-size:20px;margin:0 0 16px;">Enroll your device</h1>
<p style="margin:0 0 12px;">Hello {{name}},</p>
<p style="margin:0 0 20px;">{{inviter}} invites you to enroll your device in device management.</p>
<p style="margin:0 0 8px;">On the device to enroll, with the MDM agent app installed, tap:</p>
<p style="margin:0 0 20px;"><a href="{{deeplink}}" style="display:inline-block;background:#0b5cff;color:#ffffff;text-decoration:none;padding:12px 20px;border-radius:6px;font-weight:600;">Enroll this device</a></p>
<p style="margin:0 0 4px;font-size:13px;color:#57606a;">If the button does not work, open this link:</p>
<p style="margin:0 0 20px;font-size:13px;word-break:break-all;"><a href="{{deeplink}}" style="color:#0b5cff;">{{deeplink}}</a></p>
<p style="margin:0 0 8px;">Reading this on another screen? Scan this code with the MDM agent app:</p>
<p style="margin:0 0 20px;"><img src="{{qr_src}}" width="240" height="240" alt="Enrollment QR code" style="display:block;border:0;"></p>
{{#agent_app_url}}<p style="margin:0 0 12px;">No agent app yet? <a href="{{agent_app_url}}" style="color:#0b5cff;">Get the MDM agent app</a>.</p>{{/agent_app_url}}{{^agent_app_url}}<p style="margin:0 0 12px;">No agent app yet? Install the MDM agent app from your device's app store first.</p>{{/agent_app_url}}
<p style="margin:0 0 20px;">This invitation is for <strong>{{email}}</strong> and expires on <strong>{{expires}}</strong>.</p>
{{#helpdesk}}<table role="presentation" cellpadding="0" cellspacing="0" style="background:#f6f8fa;border-radius:6px;padding:12px 16px;margin:0 0 20px;width:100%;">
<tr><td style="font-size:14px;line-height:1.6;">
<strong>Need help?</strong>{{#helpdesk_name}}<br>{{helpdesk_name}}{{/helpdesk_name}}{{#helpdesk_phone}}<br>Phone: {{helpdesk_phone}}{{/helpdesk_phone}}{{#helpdesk_email}}<br>Email: <a href="mailto:{{helpdesk_email}}" style="color:#0b5cff;">{{helpdesk_email}}</a>{{/helpdesk_email}}{{#helpdesk_website}}<br>Web: {{helpdesk_website}}{{/helpdesk_website}}
</td></tr>
</table>{{/helpdesk}}
<p style="margin:0;font-size:12px;color:#57606a;">If you did not expect this invitation, you can ignore this message.</p>
</td></tr>
</table>
</td></tr>
</table>
</body>
</html>
`;

export interface MailTemplates {
  subject: string;
  html: string;
  text: string;
}

export const DEFAULT_TEMPLATES: MailTemplates = {
  subject: DEFAULT_SUBJECT_TEMPLATE,
  html: DEFAULT_HTML_TEMPLATE,
  text: DEFAULT_TEXT_TEMPLATE,
};

/** Each part's problems, keyed by part; empty when all three are fine. */
export function checkTemplates(templates: Partial<MailTemplates>): Partial<Record<TemplatePart, string[]>> {
  const problems: Partial<Record<TemplatePart, string[]>> = {};
  for (const part of ['subject', 'html', 'text'] as const) {
    const source = templates[part];
    if (source === undefined) continue;
    const errors = checkTemplate(source);
    if (errors.length > 0) problems[part] = errors;
  }
  return problems;
}

export function renderMail(templates: MailTemplates, values: TemplateValues): MailTemplates {
  return {
    subject: renderTemplate('subject', templates.subject, values),
    html: renderTemplate('html', templates.html, values),
    text: renderTemplate('text', templates.text, values),
  };
}
