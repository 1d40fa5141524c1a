/**
 * The documentation as a reader walks it: every page under docs/ opens with a contents list that
 * matches its headings, and every relative link of README.md, BENCHMARKS.md and docs/ reaches a file and heading.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { brokenLinks, headings } from './links.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PAGES = readdirSync(join(ROOT, 'docs'))
  .filter((file) => file.endsWith('.md'))
  .map((file) => `docs/${file}`);

/** The contents list a page should carry: its level-2 and level-3 headings, linked. */
function contentsOf(text: string): string {
  const entries = headings(text)
    .filter(({ level }) => level === 2 || level === 3)
    .map(({ level, title, anchor }) => `${level === 3 ? '  ' : ''}- [${title}](#${anchor})`);
  return `Contents:\n\n${entries.join('\n')}\n`;
}

describe('docs pages', () => {
  it.each(PAGES)('%s opens with a contents list of its headings', (page) => {
    const text = readFileSync(join(ROOT, page), 'utf8');
    const contents = contentsOf(text);
    expect(text).toContain(contents);
    expect(text.indexOf(contents)).toBeLessThan(text.indexOf('\n## '));
  });

  it.each(['README.md', 'BENCHMARKS.md', ...PAGES])(
    '%s links only to files and headings that exist',
    (page) => {
      const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
      const exists = (path: string) => existsSync(join(ROOT, path));
      expect(brokenLinks(page, read(page), { exists, read })).toEqual([]);
    },
  );
});
