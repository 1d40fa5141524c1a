/**
 * Markdown as a reader follows it: headings and their anchors (GitHub's rules), and the relative
 * links of a page that reach no file or heading. Shared by the docs tree's test and the packed
 * tarball's, which differ only in what files there are.
 */
import { posix } from 'node:path';

/** The text outside fenced code blocks. */
export function prose(text: string): string {
  return text.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
export function anchor(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/ /g, '-');
}

/** A page's headings, each with its anchor (a repeated title gets `-1`, `-2`, ... as on GitHub). */
export function headings(text: string): { level: number; title: string; anchor: string }[] {
  const seen = new Map<string, number>();
  return [...prose(text).matchAll(/^(#{1,6}) (.+)$/gm)].map(([, hashes = '', title = '']) => {
    const base = anchor(title);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    return { level: hashes.length, title, anchor: count === 0 ? base : `${base}-${count}` };
  });
}

/** The files a page's links may reach, by path from the root (forward slashes). */
export interface LinkTargets {
  exists(path: string): boolean;
  read(path: string): string;
}

/**
 * The relative links of `page` (its path from the root, and its text) that reach no file of
 * `targets`, or whose `#fragment` names no heading of the Markdown file they reach. A link that
 * climbs out of the root reaches nothing.
 */
export function brokenLinks(page: string, text: string, targets: LinkTargets): string[] {
  const broken: string[] = [];
  for (const [, link = ''] of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z]+:/.test(link)) continue;
    const [file = '', hash] = link.split('#');
    const target = file ? posix.normalize(posix.join(posix.dirname(page), file)) : page;
    if (target.startsWith('../') || !targets.exists(target)) broken.push(link);
    else if (hash && target.endsWith('.md')) {
      if (!headings(targets.read(target)).some((heading) => heading.anchor === hash)) broken.push(link);
    }
  }
  return broken;
}
