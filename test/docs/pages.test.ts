/**
 * The documentation as a reader walks it: every page under docs/ opens with a contents list that
 * matches its headings, and every relative link of README.md and docs/ reaches a file and heading.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PAGES = readdirSync(join(ROOT, 'docs'))
  .filter((file) => file.endsWith('.md'))
  .map((file) => `docs/${file}`);

/** The text outside fenced code blocks. */
function prose(text: string): string {
  return text.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchor(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/ /g, '-');
}

function headings(text: string): { level: number; title: string; anchor: string }[] {
  const seen = new Map<string, number>();
  return [...prose(text).matchAll(/^(#{1,6}) (.+)$/gm)].map(([, hashes = '', title = '']) => {
    const base = anchor(title);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    return { level: hashes.length, title, anchor: count === 0 ? base : `${base}-${count}` };
  });
}

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

  it.each(['README.md', ...PAGES])('%s links only to files and headings that exist', (page) => {
    const broken: string[] = [];
    for (const [, link = ''] of prose(readFileSync(join(ROOT, page), 'utf8')).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(link)) continue;
      const [file = '', hash] = link.split('#');
      const target = file ? normalize(join(dirname(page), file)) : page;
      if (!existsSync(join(ROOT, target))) broken.push(link);
      else if (hash && target.endsWith('.md')) {
        const anchors = headings(readFileSync(join(ROOT, target), 'utf8')).map((heading) => heading.anchor);
        if (!anchors.includes(hash)) broken.push(link);
      }
    }
    expect(broken).toEqual([]);
  });
});
