// The walls between the rooms of the code (docs/architecture.md), checked over the import
// graph that TypeScript's own parser reads. test/unit/layers.test.ts runs it in `npm test`.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';
import ts from 'typescript';

export interface SourceFile {
  /** Relative to the repository root, with `/`. */
  path: string;
  /** Each import, re-export, `import()` or `require()`: a root-relative path for a file of ours, else the package name. */
  imports: string[];
  /** Lines that call `.prepare(` (SQL). */
  prepareLines: number[];
}

export const SOURCE_FOLDERS = ['src-main', 'src-renderer', 'src-shared'];

const BACKEND = 'src-main/backend/';
/** The API rooms: HTTP plumbing and the routes of the two listeners. */
const API_FOLDERS = ['admin-api', 'agent-api', 'http'];
/** The composition root: it builds every room, so it may import every room. */
const WIRING_FILES = ['server.ts', 'services.ts'];

/** A capability's own HTTP face (`files/routes.ts`, `admin-api/code-routes.ts`) belongs to the API side. */
export const isRouteFile = (path: string) => /(^|\/|-)routes\.ts$/.test(posix.basename(path));

/**
 * Repository files own the SQL: `repository.ts`, `*-repository.ts`, and `store.ts` / `*-store.ts`
 * for a repository that also keeps bytes on disk (files/store.ts). Plus the database room, db/.
 */
export const mayPrepareSql = (path: string) =>
  /^(.+-)?(repository|store)\.ts$/.test(posix.basename(path)) || path.startsWith(`${BACKEND}db/`);

/** The room of a backend file: its folder under src-main/backend, or the root file itself. */
export function backendRoom(path: string): string | null {
  if (!path.startsWith(BACKEND)) return null;
  const rest = path.slice(BACKEND.length);
  return rest.includes('/') ? rest.slice(0, rest.indexOf('/')) : rest;
}

const CONSOLE = 'src-renderer/';

/** The folder of a console file: its folder under src-renderer (app, pages, lib, ...), or the root file itself. */
export function consoleFolder(path: string): string | null {
  if (!path.startsWith(CONSOLE)) return null;
  const rest = path.slice(CONSOLE.length);
  return rest.includes('/') ? rest.slice(0, rest.indexOf('/')) : rest;
}

/** Domain files: every backend file outside the API rooms, the wiring files and route files. */
export function isDomainFile(path: string): boolean {
  const room = backendRoom(path);
  return room !== null && !API_FOLDERS.includes(room) && !WIRING_FILES.includes(room) && !isRouteFile(path);
}

const isApiTarget = (target: string) => API_FOLDERS.some((folder) => target.startsWith(`${BACKEND}${folder}/`));

interface Rule {
  name: string;
  applies: (path: string) => boolean;
  forbids: (target: string) => boolean;
}

export const RULES: Rule[] = [
  {
    name: 'the backend runs headless: no electron, CLI, device simulator or console code',
    applies: (path) => path.startsWith(BACKEND),
    forbids: (target) =>
      target === 'electron' ||
      ['src-main/cli/', 'src-main/device/', 'src-main/electron/', 'src-renderer/'].some((room) => target.startsWith(room)),
  },
  {
    name: 'the device simulator is the conformance oracle: its own copy of the wire, not the backend or the shared contract',
    applies: (path) => path.startsWith('src-main/device/'),
    forbids: (target) => target.startsWith(BACKEND) || target.startsWith('src-shared/contract/'),
  },
  {
    name: 'the console runs in the browser: it imports src-shared, never src-main',
    applies: (path) => path.startsWith('src-renderer/'),
    forbids: (target) => target.startsWith('src-main/'),
  },
  {
    name: 'the shared contract stands alone: no src-main or src-renderer',
    applies: (path) => path.startsWith('src-shared/'),
    forbids: (target) => target.startsWith('src-main/') || target.startsWith('src-renderer/'),
  },
  {
    name: 'domain rooms do not know the API: no admin-api/, agent-api/ or http/',
    applies: isDomainFile,
    forbids: isApiTarget,
  },
];

export interface CheckOptions {
  /** Files still allowed to call prepare( (they are being moved into repositories). */
  prepareAllowList?: readonly string[];
  /** Pairs of backend rooms still allowed to import each other, e.g. ['invitations', 'mail']. */
  cycleAllowList?: ReadonlyArray<readonly [string, string]>;
}

/** Every broken wall, one line each: file, import or line, rule. Empty when the layers hold. */
export function layerViolations(files: SourceFile[], options: CheckOptions = {}): string[] {
  const found: string[] = [];
  for (const file of files) {
    for (const rule of RULES) {
      if (!rule.applies(file.path)) continue;
      for (const target of file.imports) if (rule.forbids(target)) found.push(`${file.path} imports ${target}: ${rule.name}`);
    }
    if (file.prepareLines.length > 0 && !mayPrepareSql(file.path) && !options.prepareAllowList?.includes(file.path)) {
      found.push(
        `${file.path}:${file.prepareLines.join(',')} calls prepare(: only repository files (repository.ts, *-repository.ts, *-store.ts) and db/ hold SQL`,
      );
    }
  }
  for (const [rooms, ...steps] of roomCycles(files, options.cycleAllowList ?? []))
    found.push(`backend rooms import each other in a cycle: ${rooms} (${steps.join('; ')})`);
  // The console's folders: the shell (app/) imports the pages, so nothing below may import app/.
  for (const [folders, ...steps] of roomCycles(files, [], consoleFolder))
    found.push(`console folders import each other in a cycle: ${folders} (${steps.join('; ')})`);
  for (const [paths, ...steps] of fileCycles(files))
    found.push(`files import each other in a cycle: ${paths} (${steps.join('; ')})`);
  return found;
}

/**
 * Cycles between files anywhere in the tree, inside a room as well as across rooms: each is a pair
 * (or ring) that cannot be read, tested or moved one without the other. Type-only imports count:
 * a repository that takes its row type from its service is still tied to it. Each cycle comes with
 * its imports, as `a → b`.
 */
export function fileCycles(files: SourceFile[]): string[][] {
  const graph = new Map<string, Map<string, string>>();
  for (const file of files) {
    const edges = graph.get(file.path) ?? new Map<string, string>();
    graph.set(file.path, edges);
    for (const target of file.imports) edges.set(target, `${file.path} → ${target}`);
  }
  const cycles: string[][] = [];
  for (const component of stronglyConnected(graph, () => false)) {
    const [only] = component;
    if (component.length === 1 && !graph.get(only!)?.has(only!)) continue;
    const members = new Set(component);
    const steps = component.flatMap((path) =>
      [...(graph.get(path) ?? [])].filter(([to]) => members.has(to)).map(([, example]) => example),
    );
    cycles.push([component.sort().join(' ⇄ '), ...steps.sort()]);
  }
  return cycles;
}

/** The import graph between rooms: backend rooms by default (folders, and root files on their own). */
export function roomGraph(
  files: SourceFile[],
  roomOf: (path: string) => string | null = backendRoom,
): Map<string, Map<string, string>> {
  const graph = new Map<string, Map<string, string>>();
  for (const file of files) {
    const from = roomOf(file.path);
    if (from === null) continue;
    const edges = graph.get(from) ?? new Map<string, string>();
    graph.set(from, edges);
    for (const target of file.imports) {
      const to = roomOf(target);
      // Keeps one example import per edge, to name it in the report.
      if (to !== null && to !== from && !edges.has(to)) edges.set(to, `${file.path} → ${target}`);
    }
  }
  return graph;
}

/** Cycles between rooms (strongly connected components), each with one example import per step. */
export function roomCycles(
  files: SourceFile[],
  allowed: ReadonlyArray<readonly [string, string]> = [],
  roomOf: (path: string) => string | null = backendRoom,
): string[][] {
  const graph = roomGraph(files, roomOf);
  const isAllowed = (a: string, b: string) => allowed.some(([x, y]) => (x === a && y === b) || (x === b && y === a));
  const cycles: string[][] = [];
  for (const component of stronglyConnected(graph, isAllowed)) {
    if (component.length < 2) continue;
    const members = new Set(component);
    const steps = component.flatMap((room) =>
      [...(graph.get(room) ?? [])].filter(([to]) => members.has(to) && !isAllowed(room, to)).map(([, example]) => example),
    );
    cycles.push([component.sort().join(' ⇄ '), ...steps]);
  }
  return cycles;
}

/** Tarjan's algorithm over the graph without the allowed edges. */
function stronglyConnected(graph: Map<string, Map<string, string>>, isAllowed: (a: string, b: string) => boolean): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next);
    next += 1;
    stack.push(node);
    onStack.add(node);
    for (const to of graph.get(node)?.keys() ?? []) {
      if (isAllowed(node, to)) continue;
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      components.push(component);
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return components;
}

/** Reads every .ts/.tsx file under `folders` of `root` with TypeScript's parser. */
export function readSourceTree(root: string, folders: string[] = SOURCE_FOLDERS): SourceFile[] {
  const paths = folders.flatMap((folder) => (existsSync(join(root, folder)) ? walk(join(root, folder)) : []));
  return paths.map((absolute) => parseSource(root, absolute));
}

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : walk(path);
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

export function parseSource(root: string, absolute: string, text = readFileSync(absolute, 'utf8')): SourceFile {
  const source = ts.createSourceFile(
    absolute,
    text,
    ts.ScriptTarget.Latest,
    true,
    absolute.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS,
  );
  const specifiers: string[] = [];
  const prepareLines: number[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      specifiers.push(node.moduleSpecifier.text);
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference) &&
      ts.isStringLiteral(node.moduleReference.expression)
    ) {
      specifiers.push(node.moduleReference.expression.text);
    } else if (ts.isCallExpression(node)) {
      const [first] = node.arguments;
      const loads =
        node.expression.kind === ts.SyntaxKind.ImportKeyword ||
        (ts.isIdentifier(node.expression) && node.expression.text === 'require');
      if (loads && first && ts.isStringLiteralLike(first)) specifiers.push(first.text);
      if (ts.isPropertyAccessExpression(node.expression) && node.expression.name.text === 'prepare') {
        prepareLines.push(source.getLineAndCharacterOfPosition(node.getStart()).line + 1);
      }
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      specifiers.push(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  const path = toPosix(relative(root, absolute));
  return { path, imports: specifiers.map((specifier) => resolveSpecifier(root, absolute, specifier)), prepareLines };
}

/** `./x.ts` → the root-relative path it names; `node:fs`, `fastify/types` → the package (`node:fs`, `fastify`). */
function resolveSpecifier(root: string, from: string, specifier: string): string {
  if (specifier.startsWith('.') || specifier.startsWith('/')) {
    const base = join(dirname(from), specifier);
    const found = [base, `${base}.ts`, `${base}.tsx`, join(base, 'index.ts'), join(base, 'index.tsx')].find(
      (candidate) => existsSync(candidate) && statSync(candidate).isFile(),
    );
    return toPosix(relative(root, found ?? base));
  }
  if (specifier.startsWith('node:')) return specifier;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

const toPosix = (path: string) => path.split('\\').join('/');
