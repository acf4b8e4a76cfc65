// The console's bundle carries no TypeBox: it reaches the contract through type-only imports, plain
// modules (rules.ts, event-stream.ts), the admin client and the route table, which names its schemas
// rather than importing them. One value import of a schema module (its `Type.Object(…)` calls run at
// load, so no bundler can drop them) pulled in all of TypeBox and every schema: 54 KB of 1.34 MB.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../../..');

/** The specifiers a file loads at run time: imports and re-exports that are not type-only, and `import()`. */
function valueImports(path: string): string[] {
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const onlyTypes =
        clause !== undefined &&
        (clause.isTypeOnly ||
          (clause.name === undefined &&
            clause.namedBindings !== undefined &&
            ts.isNamedImports(clause.namedBindings) &&
            clause.namedBindings.elements.every((element) => element.isTypeOnly)));
      if (!onlyTypes) found.push(node.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const onlyTypes =
        node.isTypeOnly ||
        (node.exportClause !== undefined &&
          ts.isNamedExports(node.exportClause) &&
          node.exportClause.elements.every((element) => element.isTypeOnly));
      if (!onlyTypes) found.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [first] = node.arguments;
      if (first && ts.isStringLiteralLike(first)) found.push(first.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** What a run-time import of `entry` reaches: each file or package with the chain that loads it. */
function reached(entry: string): Map<string, string[]> {
  const chains = new Map<string, string[]>([[entry, [entry]]]);
  const queue = [entry];
  while (queue.length > 0) {
    const file = queue.shift()!;
    for (const specifier of valueImports(join(ROOT, file))) {
      let target: string;
      if (specifier.startsWith('.')) {
        const base = join(dirname(join(ROOT, file)), specifier);
        const path = [base, `${base}.ts`, `${base}.tsx`].find((candidate) => existsSync(candidate) && /\.tsx?$/.test(candidate));
        if (path === undefined) continue; // CSS, images
        target = relative(ROOT, path);
      } else {
        target = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!;
      }
      if (chains.has(target)) continue;
      chains.set(target, [...chains.get(file)!, target]);
      if (target.endsWith('.ts') || target.endsWith('.tsx')) queue.push(target);
    }
  }
  return chains;
}

describe("the console's bundle", () => {
  const chains = reached('src-renderer/main.tsx');

  it('loads the admin client and the route table', () => {
    expect(chains.has('src-shared/contract/admin-client.ts')).toBe(true);
    expect(chains.has('react')).toBe(true);
  });

  it('loads no TypeBox and no schema module of the contract', () => {
    const typebox = chains.get('typebox');
    expect(typebox?.join(' → '), 'import it as a type, or move the value to a plain module (rules.ts)').toBeUndefined();
  });
});
