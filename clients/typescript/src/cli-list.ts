// media-upload list [--folder PATH | --folder-id ID|none] [--subfolders] [--tags a,b] [--search TEXT] [--type T] [--page N] [--page-size N] [--json]
import { parseArgs } from 'node:util';
import { clientOf, CONNECTION_OPTIONS, CONNECTION_USAGE, connectionOf, UsageError, wholeNumber, type CliIo } from './cli-common.ts';
import type { Folder, ListMediaQuery, MediaClient, MediaFile } from './client.ts';
import { MediaApiError } from './errors.ts';

const USAGE = `Usage: media-upload list [options]

Lists the team's files, newest first, one page at a time.

Options:
${CONNECTION_USAGE}
  --folder <path>      only files in this folder (a path such as eu-1/2026)
  --folder-id <id>     only files in the folder with this id; none: files in no folder
  --subfolders         with --folder or --folder-id: files of its subfolders too
  --tags <a,b>         only files with all these tags
  --search <text>      only files whose name contains the text
  --type <type>        image, video, audio, document or all
  --page <n>           the page (default 1)
  --page-size <n>      files per page (default 50)
  --json               the service's answer as JSON (media, totalCount, usedTeamStorage)
  -h, --help           this text

Without --json: a line per file (id, size, date, name, link or "private") on
stdout, and which page of how many on stderr.

Exit status: 0 when listed, 1 when the service refused or could not be reached, 2 for a usage error.`;

const TYPES = ['image', 'video', 'audio', 'document', 'all'] as const;

export async function runList(io: CliIo): Promise<number> {
  let options: ReturnType<typeof parse>;
  try {
    options = parse(io);
  } catch (error) {
    io.stderr.write(`media-upload list: ${(error as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (options.help) {
    io.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const client = clientOf(options.connection!);
  try {
    const query: ListMediaQuery = { ...options.query, pageNumber: options.page, pageSize: options.pageSize };
    if (options.folderPath !== undefined) {
      const folderId = await folderIdOf(client, options.folderPath);
      if (folderId === undefined) {
        io.stderr.write(`media-upload list: no folder ${options.folderPath}\n`);
        return 1;
      }
      query.folderId = folderId;
    }
    const list = await client.listMedia(query);
    if (options.json) {
      io.stdout.write(`${JSON.stringify(list)}\n`);
      return 0;
    }
    for (const file of list.media) io.stdout.write(`${line(file)}\n`);
    const pages = Math.max(1, Math.ceil(list.totalCount / options.pageSize));
    io.stderr.write(`page ${options.page} of ${pages}: ${list.media.length} of ${list.totalCount} files${options.page < pages ? ` (next: --page ${options.page + 1})` : ''}\n`);
    return 0;
  } catch (error) {
    const reason = error instanceof MediaApiError ? `${error.message} (${error.status} ${error.messageKey})` : (error as Error).message;
    io.stderr.write(`media-upload list: ${reason}\n`);
    return 1;
  }
}

function line(file: MediaFile): string {
  return [file.id, String(file.size).padStart(10), file.createdAt, file.fileName, file.publicUrl ?? 'private'].join('  ');
}

/** The id of the folder at `path` (names joined by `/`, from the top), or undefined when there is none. */
async function folderIdOf(client: MediaClient, path: string): Promise<string | undefined> {
  const { folders } = await client.listFolders();
  let parentId: string | null = null;
  let found: Folder | undefined;
  for (const name of path.split('/').filter(Boolean)) {
    found = folders.find((folder) => folder.parentId === parentId && folder.name === name);
    if (!found) return undefined;
    parentId = found.id;
  }
  return found?.id;
}

function parse(io: CliIo) {
  const { values, positionals } = parseArgs({
    args: io.argv,
    allowPositionals: true,
    options: {
      ...CONNECTION_OPTIONS,
      folder: { type: 'string' },
      'folder-id': { type: 'string' },
      subfolders: { type: 'boolean' },
      tags: { type: 'string' },
      search: { type: 'string' },
      type: { type: 'string' },
      page: { type: 'string' },
      'page-size': { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const help = values.help === true;
  if (help) return { help, connection: undefined, query: {}, folderPath: undefined, page: 1, pageSize: 50, json: false };
  const connection = connectionOf(values, io.env);
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
  if (values.folder !== undefined && values['folder-id'] !== undefined) throw new UsageError('--folder and --folder-id exclude each other');
  if (values.subfolders && values.folder === undefined && values['folder-id'] === undefined) throw new UsageError('--subfolders needs --folder or --folder-id');
  const type = values.type;
  if (type !== undefined && !(TYPES as readonly string[]).includes(type)) throw new UsageError(`--type must be one of ${TYPES.join(', ')}`);
  const query: ListMediaQuery = {
    ...(values['folder-id'] !== undefined && { folderId: values['folder-id'] }),
    ...(values.subfolders && { includeSubfolders: true }),
    ...(values.tags !== undefined && { tags: values.tags }),
    ...(values.search !== undefined && { search: values.search }),
    ...(type !== undefined && { type: type as (typeof TYPES)[number] }),
  };
  return {
    help,
    connection,
    query,
    folderPath: values.folder,
    page: wholeNumber(values.page, '--page', 1),
    pageSize: wholeNumber(values['page-size'], '--page-size', 50),
    json: values.json === true,
  };
}
