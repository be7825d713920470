import { stat } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import { glob } from 'tinyglobby';

export interface ListedFile {
  path: string;
  size: number;
}

/**
 * The files named by the CLI's arguments, in order and once each: a file as is, a folder's files
 * (recursively), anything else as a glob pattern (tinyglobby; node:fs glob needs Node 22). Throws when an argument names nothing.
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
  // A folder is walked from inside, so characters of its name that are special in globs stay literal.
  const matches = direct?.isDirectory()
    ? (await glob('**/*', { cwd: pattern, expandDirectories: false })).map((match) => join(pattern, match))
    : await glob(pattern, { absolute: isAbsolute(pattern), expandDirectories: false });
  matches.sort();
  const files: ListedFile[] = [];
  for (const path of matches) {
    const info = await stat(path);
    if (info.isFile()) files.push({ path, size: info.size });
  }
  return files;
}
