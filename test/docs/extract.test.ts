import { describe, expect, it } from 'vitest';
import { extractSnippets } from './snippets.js';

const DOC = [
  '# A page',
  '```ts',
  'const a: number = 1;',
  '```',
  '```sh',
  '```ts inside a shell block is not an opening',
  '```',
  '```js no-run',
  'listen();',
  '```',
  '```yaml',
  'a: 1',
  '```',
].join('\n');

describe('extractSnippets', () => {
  it('takes ts and js blocks with their flags, and leaves other languages out', () => {
    expect(extractSnippets('docs/page.md', DOC)).toEqual([
      { name: 'docs-page-2.ts', origin: 'docs/page.md:2', source: 'const a: number = 1;', run: true },
      { name: 'docs-page-8.js', origin: 'docs/page.md:8', source: 'listen();', run: false },
    ]);
  });

  it('refuses an unknown flag and a block never closed', () => {
    expect(() => extractSnippets('a.md', '```ts norun\nx\n```')).toThrow('a.md:1: unknown flag norun');
    expect(() => extractSnippets('a.md', '```ts\nx')).toThrow('a.md:1: code block never closed');
  });
});
