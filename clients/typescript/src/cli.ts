// media-upload [upload] <files...> | media-upload list: the CLI's entry point (bin/media-upload.js runs its compiled form).
import type { CliIo } from './cli-common.ts';
import { runList } from './cli-list.ts';
import { runUpload } from './cli-upload.ts';

export async function runCli(io: CliIo): Promise<number> {
  const [command, ...rest] = io.argv;
  if (command === 'list') return runList({ ...io, argv: rest });
  if (command === 'upload') return runUpload({ ...io, argv: rest });
  return runUpload(io);
}

process.exitCode = await runCli({ argv: process.argv.slice(2), env: process.env, stdout: process.stdout, stderr: process.stderr });
