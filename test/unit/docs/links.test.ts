// The manual's relative links hold: every link and image of README.md and docs/*.md that points
// into the repository names a file that exists and, with a #fragment, a heading of that file.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../../..');

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

const FENCES = /^```[^\n]*\n[\s\S]*?^```[^\n]*$/gm;

/** Text outside fenced code blocks and inline code spans (links there are not links). */
function prose(markdown: string): string {
  return markdown.replace(FENCES, '').replace(/`[^`\n]*`/g, '');
}

/** The anchors of a markdown file, as GitHub numbers repeated headings (x, x-1, x-2 …). */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const match of markdown.replace(FENCES, '').matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(match[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

export interface BrokenLink {
  file: string;
  target: string;
  why: string;
}

export function brokenLinks(root: string, files: string[]): BrokenLink[] {
  const broken: BrokenLink[] = [];
  for (const file of files) {
    const text = readFileSync(join(root, file), 'utf8');
    for (const match of prose(text).matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = match[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto: …
      const [path, fragment] = target.split('#', 2) as [string, string | undefined];
      const resolved = path === '' ? join(root, file) : resolve(dirname(join(root, file)), decodeURIComponent(path));
      if (!resolved.startsWith(root)) {
        broken.push({ file, target, why: 'points outside the repository' });
        continue;
      }
      if (!existsSync(resolved)) {
        broken.push({ file, target, why: `no such file: ${relative(root, resolved)}` });
        continue;
      }
      if (fragment !== undefined && statSync(resolved).isFile() && resolved.endsWith('.md')) {
        if (!anchors(readFileSync(resolved, 'utf8')).has(fragment)) {
          broken.push({ file, target, why: `no heading #${fragment} in ${relative(root, resolved)}` });
        }
      }
    }
  }
  return broken;
}

const manual = () => [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

describe("the manual's links", () => {
  it('reads the README and the docs', () => {
    expect(manual()).toEqual(expect.arrayContaining(['README.md', 'docs/architecture.md', 'docs/cli.md']));
  });

  it('every relative link and image names an existing file and heading', () => {
    expect(brokenLinks(ROOT, manual())).toEqual([]);
  });

  it('the README stays a front door (the manual is in docs/)', () => {
    const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').length;
    expect(lines, 'README.md has grown past 200 lines: move the detail into the docs/ file of its subject').toBeLessThanOrEqual(
      200,
    );
  });

  it('finds a broken file, a broken heading and a link leaving the repository', () => {
    // The checker checks: a fixture tree with one good and three bad links.
    const tree = join(ROOT, 'test/fixtures/docs-links');
    expect(brokenLinks(tree, ['README.md']).map((link) => link.target)).toEqual([
      'docs/missing.md',
      'docs/guide.md#no-such-heading',
      '../../../outside.md',
    ]);
  });

  it('makes anchors as GitHub does', () => {
    expect([
      ...anchors('# `serve` and the CLI\n## Headless: `npm run serve`\n## Limits\n## Limits\n```\n# not a heading\n```\n'),
    ]).toEqual(['serve-and-the-cli', 'headless-npm-run-serve', 'limits', 'limits-1']);
  });
});
