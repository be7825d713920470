import { glob, stat } from 'node:fs/promises';
import { join } from 'node:path';

export interface ListedFile {
  path: string;
  size: number;
}

/**
 * The files named by the CLI's arguments, in order and once each: a file as is, a folder's files
 * (recursively), anything else as a glob pattern (node:fs glob). Throws when an argument names nothing.
 */
export async function listFiles(patterns: string[]): Promise<ListedFile[]> {
  const seen = new Set<string>();
  const files: ListedFile[] = [];
  for (const pattern of patterns) {
    const found = await expand(pattern);
    if (found.length === 0) throw new Error(`no file matches ${pattern}`);
    for (const file of found) {
      if (seen.has(file.path)) continue;
      seen.add(file.path);
      files.push(file);
    }
  }
  return files;
}

async function expand(pattern: string): Promise<ListedFile[]> {
  const direct = await stat(pattern).catch(() => undefined);
  if (direct?.isFile()) return [{ path: pattern, size: direct.size }];
  const matches: string[] = [];
  for await (const match of glob(direct?.isDirectory() ? join(pattern, '**', '*') : pattern)) matches.push(match);
  matches.sort();
  const files: ListedFile[] = [];
  for (const path of matches) {
    const info = await stat(path);
    if (info.isFile()) files.push({ path, size: info.size });
  }
  return files;
}
