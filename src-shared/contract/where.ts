// The device filter language, one grammar for the CLI (`devices --where`), the admin API
// (`GET /api/agents?where=`, saved views) and the console's filter bar, which checks it as one types.
// Plain TypeScript (no TypeBox): the console's bundle carries it. The server compiles the parsed
// expression to SQL with parameters (backend/agents/device-query-repository.ts); docs/where.md is the
// manual.
//
//   os<10 last_contact>7d fleet=Warehouse online=no status=enrolled compliance=failed
//   app=com.example.scanner app_version<2.3 model~"Galaxy" "free text"
//
// Terms are joined by AND (a space, or the word AND); OR (upper case) joins groups, AND binding
// tighter; parentheses group. A term is `field OP value` or free text (a bare word or "quoted").

export const WHERE_OPERATORS = ['=', '!=', '<', '<=', '>', '>=', '~'] as const;
export type WhereOperator = (typeof WHERE_OPERATORS)[number];

/** Each field, the operators it takes and what its values are. */
export const WHERE_FIELDS = {
  fleet: { ops: ['=', '!=', '~'], values: 'a fleet name or id' },
  type: { ops: ['=', '!='], values: 'android or apple' },
  model: { ops: ['=', '!=', '~'], values: 'a model name' },
  os: { ops: ['=', '!=', '<', '<=', '>', '>='], values: 'an OS version like 10 or 10.1' },
  last_contact: { ops: ['<', '<=', '>', '>=', '=', '!='], values: 'a duration like 7d, 12h or 30m (or never)' },
  online: { ops: ['=', '!='], values: 'yes or no' },
  status: {
    ops: ['=', '!='],
    values: 'enrolled, pending_approval, rejected, unenrolled, unenroll-pending or wiped',
  },
  compliance: { ops: ['=', '!='], values: 'done, pending, failed or none' },
  app: { ops: ['=', '!=', '~'], values: 'an installed app package name' },
  app_version: { ops: ['=', '!=', '<', '<=', '>', '>='], values: 'a version like 2.3' },
  name: { ops: ['=', '!=', '~'], values: 'a device name' },
  serial: { ops: ['=', '!=', '~'], values: 'a serial number' },
  email: { ops: ['=', '!=', '~'], values: 'the email of the person who enrolled it' },
} as const satisfies Record<string, { ops: readonly WhereOperator[]; values: string }>;

export type WhereField = keyof typeof WHERE_FIELDS;
export const WHERE_FIELD_NAMES = Object.keys(WHERE_FIELDS) as WhereField[];

export const ENROLL_STATUSES = ['enrolled', 'pending_approval', 'rejected', 'unenrolled', 'unenroll-pending', 'wiped'] as const;
export const WHERE_COMPLIANCE = ['done', 'pending', 'failed', 'none'] as const;
export type WhereCompliance = (typeof WHERE_COMPLIANCE)[number];

/** The longest expression accepted, and the most terms. */
export const WHERE_MAX_LENGTH = 2000;
export const WHERE_MAX_TERMS = 64;

/** A comparison, its value already checked and normalised for the field. */
export type WhereComparison =
  | { kind: 'cmp'; field: 'fleet' | 'model' | 'name' | 'serial' | 'email'; op: '=' | '!=' | '~'; value: string; at: number }
  | { kind: 'cmp'; field: 'type'; op: '=' | '!='; value: 'android' | 'apple'; at: number }
  | { kind: 'cmp'; field: 'os'; op: Exclude<WhereOperator, '~'>; value: string; key: string; at: number }
  /** `seconds` null: `never` (no contact at all). `>`: not seen for more than that long. */
  | { kind: 'cmp'; field: 'last_contact'; op: Exclude<WhereOperator, '~'>; value: string; seconds: number | null; at: number }
  | { kind: 'cmp'; field: 'online'; op: '=' | '!='; value: boolean; at: number }
  | { kind: 'cmp'; field: 'status'; op: '=' | '!='; value: (typeof ENROLL_STATUSES)[number]; at: number }
  | { kind: 'cmp'; field: 'compliance'; op: '=' | '!='; value: WhereCompliance; at: number }
  /** An installed app; `versions`: the app_version terms that followed it in its AND group. */
  | {
      kind: 'cmp';
      field: 'app';
      op: '=' | '!=' | '~';
      value: string;
      versions: { op: Exclude<WhereOperator, '~'>; value: string; key: string }[];
      at: number;
    };

export type WhereNode =
  | WhereComparison
  | { kind: 'text'; value: string; at: number }
  | { kind: 'and'; terms: WhereNode[] }
  | { kind: 'or'; terms: WhereNode[] };

/** A mistake in an expression: where (0-based offset) and what was expected there. */
export class WhereError extends Error {
  readonly position: number;
  /** The message without its "at column N:" prefix. */
  readonly detail: string;
  constructor(position: number, detail: string) {
    super(`at column ${position + 1}: ${detail}`);
    this.name = 'WhereError';
    this.position = position;
    this.detail = detail;
  }
}

const VERSION = /^\d+(\.\d+)*$/;
const DURATION = /^(\d{1,6})([dhm])$/i;
const IDENT = /[A-Za-z_][A-Za-z0-9_]*/y;
const OPERATOR = /!=|<=|>=|=|<|>|~/y;
const UNIT_SECONDS = { d: 86400, h: 3600, m: 60 } as const;

/**
 * A sortable key of a version: each number zero-padded to 10 digits, trailing zeros dropped, so
 * that comparing keys as strings compares versions (9 < 10 < 10.1, 10.0 = 10). Reads the first
 * dotted number of the text ("8.1.0_r3" → 8.1.0, "iOS 17.2" → 17.2); null when there is none.
 */
export function versionKey(version: string | null | undefined): string | null {
  if (!version) return null;
  const match = /\d+(?:\.\d+)*/.exec(version);
  if (!match) return null;
  const parts = match[0].split('.').map((part) => {
    const digits = part.replace(/^0+(?=\d)/, '');
    return digits.length > 10 ? '9'.repeat(10) : digits.padStart(10, '0');
  });
  while (parts.length > 1 && /^0+$/.test(parts[parts.length - 1]!)) parts.pop();
  return parts.join('.');
}

/** Parses an expression; throws WhereError naming the position and what was expected. Empty text: every device. */
export function parseWhere(text: string): WhereNode {
  if (text.length > WHERE_MAX_LENGTH)
    throw new WhereError(WHERE_MAX_LENGTH, `the expression is too long (at most ${WHERE_MAX_LENGTH} characters)`);
  return new Parser(text).parse();
}

/** parseWhere without throwing: what the console's filter bar shows as one types. */
export function checkWhere(text: string): { ok: true; node: WhereNode } | { ok: false; error: WhereError } {
  try {
    return { ok: true, node: parseWhere(text) };
  } catch (error) {
    if (error instanceof WhereError) return { ok: false, error };
    throw error;
  }
}

/** Whether an expression depends on the clock (last_contact): its matches change with time alone. */
export function whereUsesTime(node: WhereNode): boolean {
  if (node.kind === 'and' || node.kind === 'or') return node.terms.some(whereUsesTime);
  return node.kind === 'cmp' && node.field === 'last_contact';
}

/** Quotes a value for an expression when it needs it (spaces, quotes, parentheses). */
export function quoteWhereValue(value: string): string {
  return /^[^\s"()]+$/.test(value) ? value : `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

class Parser {
  private pos = 0;
  private terms = 0;
  private readonly text: string;
  constructor(text: string) {
    this.text = text;
  }

  parse(): WhereNode {
    this.skipSpace();
    if (this.pos >= this.text.length) return { kind: 'and', terms: [] };
    const node = this.parseOr();
    this.skipSpace();
    if (this.pos < this.text.length) {
      // Only a closing parenthesis stops the top-level OR before the end.
      throw new WhereError(this.pos, 'unexpected ")" (no "(" to close)');
    }
    return node;
  }

  private parseOr(): WhereNode {
    const groups = [this.parseAnd()];
    while (this.keyword('OR')) groups.push(this.parseAnd());
    return groups.length === 1 ? groups[0]! : { kind: 'or', terms: groups };
  }

  private parseAnd(): WhereNode {
    const terms: WhereNode[] = [];
    for (;;) {
      this.skipSpace();
      if (this.pos >= this.text.length || this.text[this.pos] === ')') break;
      if (this.peekKeyword('OR')) break;
      if (this.keyword('AND')) {
        if (terms.length === 0) throw new WhereError(this.pos - 3, 'expected a term before AND');
        this.skipSpace();
        if (this.pos >= this.text.length || this.text[this.pos] === ')' || this.peekKeyword('OR'))
          throw new WhereError(this.pos, 'expected a term after AND');
        continue;
      }
      terms.push(this.parseTerm());
    }
    if (terms.length === 0) {
      if (this.peekKeyword('OR')) throw new WhereError(this.pos, 'expected a term before OR');
      const what = this.pos >= this.text.length ? 'the end' : `"${this.text[this.pos]}"`;
      throw new WhereError(this.pos, `expected a term (like os<10 or "some text"), found ${what}`);
    }
    const grouped = bindAppVersions(terms);
    return grouped.length === 1 ? grouped[0]! : { kind: 'and', terms: grouped };
  }

  private parseTerm(): WhereNode {
    const start = this.pos;
    if (++this.terms > WHERE_MAX_TERMS) throw new WhereError(start, `too many terms (at most ${WHERE_MAX_TERMS})`);
    const c = this.text[this.pos]!;
    if (c === '(') {
      this.pos++;
      this.skipSpace();
      if (this.text[this.pos] === ')') throw new WhereError(this.pos, 'expected a term inside the parentheses');
      const inner = this.parseOr();
      this.skipSpace();
      if (this.text[this.pos] !== ')') throw new WhereError(this.pos, `expected ")" to close the "(" at column ${start + 1}`);
      this.pos++;
      return inner;
    }
    if (c === '"') return { kind: 'text', value: this.quoted(), at: start };
    OPERATOR.lastIndex = this.pos;
    if (OPERATOR.test(this.text))
      throw new WhereError(
        start,
        `expected a field before "${this.text.slice(start, OPERATOR.lastIndex)}" (one of ${fieldList()})`,
      );
    IDENT.lastIndex = this.pos;
    const ident = IDENT.exec(this.text);
    if (ident) {
      let after = IDENT.lastIndex;
      while (after < this.text.length && /\s/.test(this.text[after]!)) after++;
      OPERATOR.lastIndex = after;
      const op = OPERATOR.exec(this.text);
      if (op) {
        this.pos = OPERATOR.lastIndex;
        return this.comparison(ident[0], start, op[0] as WhereOperator, after);
      }
    }
    // Free text: a bare word up to a space or a parenthesis.
    const word = this.bare();
    if (word.includes('"'))
      throw new WhereError(start + word.indexOf('"'), 'a quote inside a word: quote the whole text ("like this")');
    return { kind: 'text', value: word, at: start };
  }

  private comparison(rawField: string, at: number, op: WhereOperator, opAt: number): WhereComparison {
    const field = rawField.toLowerCase();
    if (!(field in WHERE_FIELDS)) {
      const near = closest(field);
      throw new WhereError(
        at,
        `unknown field "${rawField}"${near ? ` (did you mean ${near}?)` : ''}: expected one of ${fieldList()}`,
      );
    }
    const spec = WHERE_FIELDS[field as WhereField];
    if (!(spec.ops as readonly string[]).includes(op))
      throw new WhereError(opAt, `${field} takes ${spec.ops.join(' ')}, not ${op}`);
    this.skipSpace();
    const valueAt = this.pos;
    if (this.pos >= this.text.length || /[\s()]/.test(this.text[this.pos]!))
      throw new WhereError(valueAt, `expected ${spec.values} after ${field}${op}`);
    const value = this.text[this.pos] === '"' ? this.quoted() : this.bare();
    const bad = (detail: string): never => {
      throw new WhereError(valueAt, `${field}: expected ${detail}, not "${value}"`);
    };
    const f = field as WhereField;
    switch (f) {
      case 'fleet':
      case 'model':
      case 'name':
      case 'serial':
      case 'email':
      case 'app': {
        if (value.trim() === '') bad(spec.values);
        if (f === 'app') return { kind: 'cmp', field: f, op: op as '=', value, versions: [], at };
        return { kind: 'cmp', field: f, op: op as '=', value, at };
      }
      case 'type': {
        const type = value.toLowerCase();
        if (type !== 'android' && type !== 'apple') bad(spec.values);
        return { kind: 'cmp', field: f, op: op as '=', value: type as 'android', at };
      }
      case 'os': {
        if (!VERSION.test(value)) bad(spec.values);
        return { kind: 'cmp', field: f, op: op as '=', value, key: versionKey(value)!, at };
      }
      case 'app_version': {
        if (!VERSION.test(value)) bad(spec.values);
        // Kept as a comparison of its own until bindAppVersions folds it into its app term.
        return {
          kind: 'cmp',
          field: 'app',
          op: '=',
          value: '',
          versions: [{ op: op as '=', value, key: versionKey(value)! }],
          at: -1 - at,
        };
      }
      case 'last_contact': {
        if (value.toLowerCase() === 'never') {
          if (op !== '=' && op !== '!=') throw new WhereError(opAt, 'last_contact=never or last_contact!=never, not ' + op);
          return { kind: 'cmp', field: f, op, value: 'never', seconds: null, at };
        }
        const duration = DURATION.exec(value);
        if (!duration) bad(spec.values);
        if (op === '=' || op === '!=')
          throw new WhereError(opAt, 'last_contact takes < <= > >= with a duration (= and != only with never)');
        const seconds = Number(duration![1]) * UNIT_SECONDS[duration![2]!.toLowerCase() as 'd'];
        return { kind: 'cmp', field: f, op: op as '<', value: value.toLowerCase(), seconds, at };
      }
      case 'online': {
        const yes = ['yes', 'true', '1', 'online', 'on'].includes(value.toLowerCase());
        const no = ['no', 'false', '0', 'offline', 'off'].includes(value.toLowerCase());
        if (!yes && !no) bad(spec.values);
        return { kind: 'cmp', field: f, op: op as '=', value: yes, at };
      }
      case 'status': {
        const status = value.toLowerCase().replace(/^pending$|^waiting$/, 'pending_approval');
        if (!(ENROLL_STATUSES as readonly string[]).includes(status)) bad(spec.values);
        return { kind: 'cmp', field: f, op: op as '=', value: status as 'enrolled', at };
      }
      case 'compliance': {
        const aliases: Record<string, WhereCompliance> = { compliant: 'done', failing: 'failed', 'no policy': 'none' };
        const state = aliases[value.toLowerCase()] ?? value.toLowerCase();
        if (!(WHERE_COMPLIANCE as readonly string[]).includes(state)) bad(spec.values);
        return { kind: 'cmp', field: f, op: op as '=', value: state as WhereCompliance, at };
      }
    }
  }

  private quoted(): string {
    const start = this.pos;
    this.pos++;
    let out = '';
    while (this.pos < this.text.length) {
      const c = this.text[this.pos++]!;
      if (c === '"') return out;
      if (c === '\\' && this.pos < this.text.length) out += this.text[this.pos++]!;
      else out += c;
    }
    throw new WhereError(start, 'this quote is never closed: expected a closing "');
  }

  private bare(): string {
    const start = this.pos;
    while (this.pos < this.text.length && !/[\s()]/.test(this.text[this.pos]!)) this.pos++;
    return this.text.slice(start, this.pos);
  }

  private skipSpace(): void {
    while (this.pos < this.text.length && /\s/.test(this.text[this.pos]!)) this.pos++;
  }

  private peekKeyword(word: 'OR' | 'AND'): boolean {
    const end = this.pos + word.length;
    return this.text.startsWith(word, this.pos) && (end >= this.text.length || /[\s()]/.test(this.text[end]!));
  }

  private keyword(word: 'OR' | 'AND'): boolean {
    this.skipSpace();
    if (!this.peekKeyword(word)) return false;
    this.pos += word.length;
    if (word === 'OR') {
      this.skipSpace();
      if (this.pos >= this.text.length || this.text[this.pos] === ')' || this.peekKeyword('OR'))
        throw new WhereError(this.pos, 'expected a term after OR');
    }
    return true;
  }
}

/** Folds each app_version term into the app term before it in its AND group. */
function bindAppVersions(terms: WhereNode[]): WhereNode[] {
  const out: WhereNode[] = [];
  let app: Extract<WhereComparison, { field: 'app' }> | null = null;
  for (const term of terms) {
    if (term.kind === 'cmp' && term.field === 'app' && term.at < 0) {
      const at = -1 - term.at;
      if (!app)
        throw new WhereError(
          at,
          'app_version needs an app=PACKAGE term before it (in the same group): app=com.example.app app_version<2.3',
        );
      if (app.op === '!=') throw new WhereError(at, `app_version cannot follow app!=${app.value}: the app is not installed`);
      app.versions.push(...term.versions);
      continue;
    }
    if (term.kind === 'cmp' && term.field === 'app') app = term;
    out.push(term);
  }
  return out;
}

function fieldList(): string {
  return WHERE_FIELD_NAMES.join(', ');
}

/** The known field nearest a misspelt one (edit distance ≤ 2), if any. */
function closest(field: string): string | null {
  let best: string | null = null;
  let bestDistance = 3;
  for (const name of WHERE_FIELD_NAMES) {
    const d = distance(field, name);
    if (d < bestDistance) {
      best = name;
      bestDistance = d;
    }
  }
  return best;
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const current = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = current;
    }
  }
  return row[b.length]!;
}
