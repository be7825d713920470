// media-upload [upload] <files, folders or globs...> --url --team --key [--folder] [--tags] [--public|--private] [--concurrency N] [--json]
import { parseArgs } from 'node:util';
import { clientOf, CONNECTION_OPTIONS, CONNECTION_USAGE, connectionOf, UsageError, wholeNumber, type CliIo } from './cli-common.ts';
import type { MediaClient } from './client.ts';
import { MediaApiError } from './errors.ts';
import { listFiles, type ListedFile } from './file-list.ts';
import { barProgress, silentProgress, type Progress } from './progress.ts';

const USAGE = `Usage: media-upload [upload] <files, folders or globs...> [options]
       media-upload list [options]      (media-upload list --help)

Options:
${CONNECTION_USAGE}
  --folder <path>      upload into this folder (created when missing)
  --tags <a,b>         comma-separated tags for every file
  --public | --private visibility (default: the service's, public for uploads)
  --concurrency <n>    files uploaded at once (default 4)
  --json               one JSON line per file on stdout, no progress bars
  -h, --help           this text

Exit status: 0 when every file was stored, 1 when any failed, 2 for a usage error.`;

interface FileResult {
  file: string;
  ok: boolean;
  id?: string;
  url?: string;
  size?: number;
  status?: number;
  messageKey?: string;
  error?: string;
}

export async function runUpload(io: CliIo): Promise<number> {
  let options: ReturnType<typeof parse>;
  try {
    options = parse(io);
  } catch (error) {
    io.stderr.write(`media-upload: ${(error as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (options.help) {
    io.stdout.write(`${USAGE}\n`);
    return 0;
  }
  let files: ListedFile[];
  try {
    files = await listFiles(options.patterns);
  } catch (error) {
    io.stderr.write(`media-upload: ${(error as Error).message}\n`);
    return 2;
  }

  const client = clientOf(options.connection!);
  const showBars = !options.json && io.stderr.isTTY === true;
  const progress: Progress = showBars ? barProgress(files.reduce((sum, file) => sum + file.size, 0), files.length) : silentProgress();
  const report = (result: FileResult) => {
    if (options.json) io.stdout.write(`${JSON.stringify(result)}\n`);
    else if (result.ok) (showBars ? progress.log : (line: string) => io.stdout.write(`${line}\n`))(`stored ${result.file} -> ${result.url}`);
    else {
      const line = `failed ${result.file}: ${result.error}${result.messageKey ? ` (${result.status} ${result.messageKey})` : ''}`;
      if (showBars) progress.log(line);
      else io.stderr.write(`${line}\n`);
    }
  };

  let failed = 0;
  let next = 0;
  const worker = async () => {
    while (next < files.length) {
      const file = files[next++]!;
      const result = await uploadOne(client, file, options, progress);
      if (!result.ok) failed++;
      report(result);
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(options.concurrency, files.length) }, worker));
  } finally {
    progress.stop();
  }
  if (!options.json && failed > 0) io.stderr.write(`${failed} of ${files.length} files failed\n`);
  return failed > 0 ? 1 : 0;
}

async function uploadOne(client: MediaClient, file: ListedFile, options: ReturnType<typeof parse>, progress: Progress): Promise<FileResult> {
  const shown = progress.start(file.path, file.size);
  try {
    const uploaded = await client.upload(file.path, {
      ...(options.folder !== undefined && { folder: options.folder }),
      ...(options.tags !== undefined && { tags: options.tags }),
      ...(options.visibility !== undefined && { public: options.visibility }),
      onProgress: (sent) => shown.update(sent),
    });
    const url = uploaded.publicUrl ?? (await client.getMediaLink(uploaded.id)).url;
    return { file: file.path, ok: true, id: uploaded.id, url, size: uploaded.size };
  } catch (error) {
    if (error instanceof MediaApiError) {
      return { file: file.path, ok: false, status: error.status, messageKey: error.messageKey, error: error.message };
    }
    return { file: file.path, ok: false, error: (error as Error).message };
  } finally {
    shown.done();
  }
}

function parse(io: CliIo) {
  const { values, positionals } = parseArgs({
    args: io.argv,
    allowPositionals: true,
    options: {
      ...CONNECTION_OPTIONS,
      folder: { type: 'string' },
      tags: { type: 'string' },
      public: { type: 'boolean' },
      private: { type: 'boolean' },
      concurrency: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const help = values.help === true;
  const connection = help ? undefined : connectionOf(values, io.env);
  if (!help) {
    if (positionals.length === 0) throw new UsageError('no files given');
    if (values.public && values.private) throw new UsageError('--public and --private exclude each other');
  }
  const concurrency = wholeNumber(values.concurrency, '--concurrency', 4, 1, 64);
  return {
    help,
    connection,
    patterns: positionals,
    folder: values.folder,
    tags: values.tags,
    visibility: values.public ? true : values.private ? false : undefined,
    concurrency,
    json: values.json === true,
  };
}
