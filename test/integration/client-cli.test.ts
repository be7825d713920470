// The media-upload CLI (clients/typescript/src/cli.ts) as a process, against the real service; and the
// packed package installed into an empty project, on the machine's Node.js and on the project's.
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { mkdir, mkdtemp, open, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import t, { type Test } from 'tap';
import { repo } from '../helpers/service-process.ts';
import { startTestServer } from '../helpers/server.ts';
import { MiB, pngLike, teamStorageState } from '../helpers/uploads.ts';

const node = join(repo, 'node_modules', '.bin', 'node');
const cli = join(repo, 'clients', 'typescript', 'src', 'cli.ts');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

// The machine's extra certificate authorities (a TLS-inspecting proxy in front of the npm registry): npm run on the
// project's Node 22 does not read the machine's global npmrc, so without them its registry requests fail
// (SELF_SIGNED_CERT_IN_CHAIN) whenever npm's cache lacks a package's metadata.
const machineTrust = Object.fromEntries(
  ['NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'SSL_CERT_DIR'].flatMap((name) => (process.env[name] ? [[name, process.env[name]]] : [])),
);

function run(command: string, args: string[], env: Record<string, string> = {}, cwd = repo): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd,
      env: { PATH: `${join(repo, 'node_modules', '.bin')}:${process.env.PATH}`, HOME: process.env.HOME ?? '/tmp', ...machineTrust, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const mediaUpload = (args: string[], env: Record<string, string> = {}) => run(node, [cli, ...args], env);

function jsonLines(output: string): any[] {
  return output.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line));
}

async function screenshots(t: Test, count: number): Promise<{ dir: string; contents: Map<string, Buffer> }> {
  const dir = await mkdtemp(join(tmpdir(), 'media-cli-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const contents = new Map<string, Buffer>();
  for (let i = 0; i < count; i++) {
    const content = pngLike(i === 0 ? 2 * MiB : 10_000 + i);
    contents.set(`shot-${i}.png`, content);
    await writeFile(join(dir, `shot-${i}.png`), content);
  }
  return { dir, contents };
}

t.test('uploads a folder of screenshots with --json: one line per file with its id and link', async (t) => {
  const server = await startTestServer(t);
  const team = await server.createTeam('CliFolder');
  const { dir, contents } = await screenshots(t, 6);
  const result = await mediaUpload([dir, '--url', server.baseUrl, '--team', team.teamId, '--key', team.key, '--json', '--concurrency', '2',
    '--folder', 'screens/today', '--tags', 'cli,round:1', '--private']);
  t.equal(result.code, 0, `exit 0 (stderr: ${result.stderr})`);
  t.equal(result.stderr, '', 'no progress bars with --json');
  const lines = jsonLines(result.stdout);
  t.equal(lines.length, 6, 'one line per file');
  for (const line of lines) {
    t.match(line, { ok: true, id: /^[0-9a-f-]{36}$/, url: /signature=/, file: String }, `${line.file} stored, private: a signed link`);
    const name = line.file.slice(line.file.lastIndexOf('/') + 1);
    t.equal(line.size, contents.get(name)!.length);
    const served = await fetch(line.url);
    t.ok(Buffer.from(await served.arrayBuffer()).equals(contents.get(name)!), `${name}: its link serves it`);
  }
  const listed = await server.media('GET', `/v1/cdn/media/${team.teamId}?tags=cli,round:1`, team.key);
  t.equal(listed.body.totalCount, 6, 'tagged');
  t.ok(listed.body.media.every((file: any) => file.folderId && !file.public), 'in the folder, private');
  const state = await teamStorageState(server.databaseUrl, team.teamId);
  t.equal(state.files, 6, 'each file once');
});

t.test('reads MEDIA_URL, MEDIA_TEAM and MEDIA_KEY, expands globs, and prints a line per file without a TTY', async (t) => {
  const server = await startTestServer(t);
  const team = await server.createTeam('CliEnv');
  const { dir } = await screenshots(t, 3);
  await writeFile(join(dir, 'notes.txt'), 'not matched');
  const result = await mediaUpload([join(dir, '*.png'), '--public'], { MEDIA_URL: server.baseUrl, MEDIA_TEAM: team.teamId, MEDIA_KEY: team.key });
  t.equal(result.code, 0, `exit 0 (stderr: ${result.stderr})`);
  const stored = result.stdout.trim().split('\n');
  t.equal(stored.length, 3, 'the three PNGs, not the text file');
  t.ok(stored.every((line) => /^stored .*shot-\d\.png -> http:\/\/.*\/media\/team\//.test(line)), 'each with its public link');
  t.notMatch(result.stderr, /\u001b\[/, 'no progress bar drawn when stderr is not a terminal');
  t.equal((await teamStorageState(server.databaseUrl, team.teamId)).files, 3);
});

t.test('a failed file makes the exit status non-zero, with the reason; the others are stored', async (t) => {
  const server = await startTestServer(t);
  const team = await server.createTeam('CliFail');
  const { dir } = await screenshots(t, 2);
  const exe = join(dir, 'tool.exe');
  await writeFile(exe, Buffer.concat([Buffer.from('MZ\x90\x00'), Buffer.alloc(200)]));
  const args = [join(dir, 'shot-1.png'), exe, '--url', server.baseUrl, '--team', team.teamId, '--key', team.key];

  const json = await mediaUpload([...args, '--json']);
  t.equal(json.code, 1, 'exit 1');
  const lines = jsonLines(json.stdout);
  t.match(lines.find((line) => line.file === exe), { ok: false, status: 415, messageKey: 'error.unsupportedMediaType', error: String }, 'the reason, from the error body');
  t.match(lines.find((line) => line.file !== exe), { ok: true, id: String });

  const text = await mediaUpload(args);
  t.equal(text.code, 1);
  t.match(text.stderr, /failed .*tool\.exe: .+ \(415 error\.unsupportedMediaType\)/, 'the reason on stderr');
  t.match(text.stderr, /1 of 2 files failed/);
  t.equal((await teamStorageState(server.databaseUrl, team.teamId)).files, 2, 'the PNG twice, the executable never');

  const wrongKey = await mediaUpload([join(dir, 'shot-1.png'), '--url', server.baseUrl, '--team', team.teamId, '--key', 'tws_wrong', '--json']);
  t.equal(wrongKey.code, 1);
  t.match(jsonLines(wrongKey.stdout)[0], { ok: false, status: 401, messageKey: 'error.unauthorized' });

  const down = await mediaUpload([join(dir, 'shot-1.png'), '--url', 'http://127.0.0.1:1', '--team', team.teamId, '--key', team.key, '--json']);
  t.equal(down.code, 1, 'an unreachable service is a failure too');
  t.match(jsonLines(down.stdout)[0], { ok: false, error: /ECONNREFUSED/ });
});

t.test('usage errors exit 2 and say why', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'media-cli-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await mkdir(join(dir, 'empty'));
  const base = ['--url', 'http://127.0.0.1:1', '--team', 't', '--key', 'k'];
  const noKey = await mediaUpload([join(dir, 'x.png'), '--url', 'http://127.0.0.1:1', '--team', 't']);
  t.equal(noKey.code, 2);
  t.match(noKey.stderr, /--key or MEDIA_KEY is required/);
  const nothing = await mediaUpload([join(dir, 'missing-*.png'), ...base]);
  t.equal(nothing.code, 2);
  t.match(nothing.stderr, /no file matches/);
  const both = await mediaUpload([dir, ...base, '--public', '--private']);
  t.equal(both.code, 2);
  t.match(both.stderr, /exclude each other/);
  const concurrency = await mediaUpload([dir, ...base, '--concurrency', '0']);
  t.equal(concurrency.code, 2);
  const help = await run('npx', ['--no-install', 'media-upload', '--help']);
  t.equal(help.code, 0, 'npx media-upload runs the package\'s bin');
  t.match(help.stdout, /Usage: media-upload/);
});

t.test('a large file is streamed from disk: the CLI\'s memory does not grow with the file', async (t) => {
  const server = await startTestServer(t);
  const team = await server.createTeam('CliLarge', 'enterprise');
  await server.admin('PATCH', `/v1/admin/teams/${team.teamId}/limits`, { maxMediaFileSize: null, maxTeamStorage: null });
  const dir = await mkdtemp(join(tmpdir(), 'media-cli-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const peakMemory = async (size: number): Promise<number> => {
    const path = join(dir, `big-${size}.png`);
    const file = await open(path, 'w');
    await file.write(pngLike(16));
    await file.truncate(size); // sparse: quick to make, read back as zeros
    await file.close();
    const measured = await run(node, ['--import', `data:text/javascript,${MAX_RSS_AT_EXIT}`, cli, path, '--url', server.baseUrl, '--team', team.teamId, '--key', team.key, '--json']);
    t.equal(measured.code, 0, measured.stderr);
    t.match(jsonLines(measured.stdout)[0], { ok: true, size });
    await rm(path);
    return Number(/maxRSS=(\d+)/.exec(measured.stderr)?.[1]) * 1024;
  };
  const small = await peakMemory(20 * MiB);
  const large = await peakMemory(220 * MiB);
  t.ok(small > 0 && large - small < 100 * MiB, `peak memory ${Math.round(small / MiB)} MiB for 20 MiB, ${Math.round(large / MiB)} MiB for 220 MiB`);
});

const MAX_RSS_AT_EXIT = 'process.on("exit",()=>process.stderr.write("maxRSS="+process.resourceUsage().maxRSS+"\\n"))';

t.test('on a terminal: an overall progress bar and one per large file; none with --json', async (t) => {
  const server = await startTestServer(t);
  const team = await server.createTeam('CliTty');
  const { dir } = await screenshots(t, 3);
  // script(1) runs the CLI on a pseudo-terminal, as a person would.
  const command = (extra: string) => [node, cli, dir, '--url', server.baseUrl, '--team', team.teamId, '--key', team.key, extra].filter(Boolean).map((arg) => `'${arg}'`).join(' ');
  const bars = await run('script', ['-qec', command(''), '/dev/null']);
  t.equal(bars.code, 0, bars.stdout);
  t.match(bars.stdout, /all files .*100% .*3\/3 files/, 'the overall bar');
  t.match(bars.stdout, /shot-0\.png/, 'the large file\'s bar');
  t.match(bars.stdout, /stored .*shot-2\.png -> http/, 'and a line per file above the bars');
  const json = await run('script', ['-qec', command('--json'), '/dev/null']);
  t.equal(json.code, 0);
  t.notMatch(json.stdout, /all files/, 'no bars with --json');
  t.equal(jsonLines(json.stdout.replaceAll('\r', '')).length, 3);
});

t.test('list: a page of the team\'s files, filtered by folder, tags, search and type, as lines or JSON', async (t) => {
  const server = await startTestServer(t);
  const team = await server.createTeam('CliList');
  const { dir } = await screenshots(t, 4);
  const stored = await mediaUpload([join(dir, 'shot-1.png'), join(dir, 'shot-2.png'), '--url', server.baseUrl, '--team', team.teamId, '--key', team.key,
    '--folder', 'eu-1/round 3', '--tags', 'listed,round:3', '--json']);
  t.equal(stored.code, 0, stored.stderr);
  const inFolder = jsonLines(stored.stdout).map((line) => line.id).sort();
  const loose = await mediaUpload([join(dir, 'shot-3.png'), '--url', server.baseUrl, '--team', team.teamId, '--key', team.key, '--private', '--json']);
  t.equal(loose.code, 0, loose.stderr);
  const privateId = jsonLines(loose.stdout)[0].id;
  const env = { MEDIA_URL: server.baseUrl, MEDIA_TEAM: team.teamId, MEDIA_KEY: team.key };

  const all = await mediaUpload(['list'], env);
  t.equal(all.code, 0, all.stderr);
  const lines = all.stdout.trim().split('\n');
  t.equal(lines.length, 3, 'a line per file');
  t.match(lines.find((line) => line.startsWith(privateId)), /shot-3\.png\s+private$/, 'a private file says so');
  t.ok(lines.filter((line) => !line.startsWith(privateId)).every((line) => /shot-[12]\.png\s+http:\/\/\S+\/media\/team\//.test(line)), 'public files with their link');
  t.match(all.stderr, /page 1 of 1: 3 of 3 files/);

  const folder = await mediaUpload(['list', '--folder', 'eu-1/round 3', '--json'], env);
  t.equal(folder.code, 0, folder.stderr);
  const folderList = JSON.parse(folder.stdout);
  t.same(folderList.media.map((file: any) => file.id).sort(), inFolder, '--folder PATH: the files of that folder');
  t.equal(folderList.totalCount, 2);
  t.type(folderList.usedTeamStorage, 'number', 'the service\'s answer as it is');
  const parent = JSON.parse((await mediaUpload(['list', '--folder', 'eu-1', '--json'], env)).stdout);
  t.equal(parent.totalCount, 0, 'not the files of its subfolders');
  const withSubfolders = JSON.parse((await mediaUpload(['list', '--folder', 'eu-1', '--subfolders', '--json'], env)).stdout);
  t.equal(withSubfolders.totalCount, 2, '--subfolders: theirs too');
  const noFolder = JSON.parse((await mediaUpload(['list', '--folder-id', 'none', '--json'], env)).stdout);
  t.same(noFolder.media.map((file: any) => file.id), [privateId], '--folder-id none: files in no folder');
  const tagged = JSON.parse((await mediaUpload(['list', '--tags', 'round:3,listed', '--json'], env)).stdout);
  t.equal(tagged.totalCount, 2, '--tags');
  const searched = JSON.parse((await mediaUpload(['list', '--search', 'shot-3', '--type', 'image', '--json'], env)).stdout);
  t.same(searched.media.map((file: any) => file.id), [privateId], '--search and --type');

  const page2 = await mediaUpload(['list', '--page', '2', '--page-size', '2'], env);
  t.equal(page2.code, 0, page2.stderr);
  t.equal(page2.stdout.trim().split('\n').length, 1, 'the second page of two');
  t.match(page2.stderr, /page 2 of 2: 1 of 3 files/);
  t.match((await mediaUpload(['list', '--page-size', '2'], env)).stderr, /page 1 of 2: 2 of 3 files \(next: --page 2\)/);

  const missing = await mediaUpload(['list', '--folder', 'nowhere'], env);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /no folder nowhere/);
  const refused = await mediaUpload(['list', '--page-size', '100000'], env);
  t.equal(refused.code, 1, 'the service\'s refusal');
  t.match(refused.stderr, /pageSize.* \(400 /);
  const wrongKey = await mediaUpload(['list'], { ...env, MEDIA_KEY: 'tws_wrong' });
  t.equal(wrongKey.code, 1);
  t.match(wrongKey.stderr, /\(401 error\.unauthorized\)/);
  for (const [args, reason] of [
    [['--type', 'gif'], /--type must be one of/],
    [['--page', '0'], /--page must be a whole number from 1/],
    [['--folder', 'a', '--folder-id', 'none'], /exclude each other/],
    [['--subfolders'], /--subfolders needs --folder/],
    [['stray'], /unexpected argument stray/],
  ] as const) {
    const usage = await mediaUpload(['list', ...args], env);
    t.equal(usage.code, 2, `${args.join(' ')}: a usage error`);
    t.match(usage.stderr, reason);
  }
  const help = await mediaUpload(['list', '--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /Usage: media-upload list/);
});

/** The first `node` on PATH outside any node_modules/.bin: the machine's Node.js, as a user's shell finds it. */
function machineNode(): { node: string; path: string } {
  const path = (process.env.PATH ?? '').split(delimiter).filter((dir) => dir && !dir.includes('node_modules')).join(delimiter);
  for (const dir of path.split(delimiter)) {
    try {
      accessSync(join(dir, 'node'), constants.X_OK);
      return { node: join(dir, 'node'), path };
    } catch {}
  }
  throw new Error('no node on PATH outside node_modules');
}

t.test('the packed package works installed into an empty project, and the checkout\'s bin, on the machine\'s Node.js and the project\'s', async (t) => {
  const server = await startTestServer(t);
  const team = await server.createTeam('CliPacked');
  const work = await mkdtemp(join(tmpdir(), 'media-client-pack-'));
  t.teardown(() => rm(work, { recursive: true, force: true }));
  const machine = machineNode();
  const versions = { machine: (await run(machine.node, ['--version'])).stdout.trim(), project: (await run(node, ['--version'])).stdout.trim() };
  t.comment(`machine Node.js ${versions.machine} (${machine.node}), project Node.js ${versions.project}`);

  // npm pack runs the package's prepack script (the build), as npm publish would.
  const packed = await run('npm', ['pack', '--pack-destination', work, '--ignore-scripts=false'], {}, join(repo, 'clients', 'typescript'));
  t.equal(packed.code, 0, packed.stderr);
  const tarball = (await readdir(work)).find((name) => name.endsWith('.tgz'));
  t.ok(tarball, 'a tarball');
  const project = join(work, 'project');
  await mkdir(project);
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  // From the local tarball; its dependencies from npm's cache where it has them (the repository's install put them there).
  const installed = await run('npm', ['install', join(work, tarball!), '--prefer-offline', '--no-audit', '--no-fund'], {}, project);
  t.equal(installed.code, 0, `npm install of the tarball: ${installed.stderr}`);

  const { dir, contents } = await screenshots(t, 2);
  const env = { MEDIA_URL: server.baseUrl, MEDIA_TEAM: team.teamId, MEDIA_KEY: team.key };
  const importScript = `const { MediaClient } = await import('@media-upload/client');
    const client = new MediaClient({ baseUrl: process.env.MEDIA_URL, teamId: process.env.MEDIA_TEAM, apiKey: process.env.MEDIA_KEY });
    const stored = await client.upload(process.argv[1]);
    const list = await client.listMedia({ search: stored.fileName });
    console.log(JSON.stringify({ id: stored.id, listed: list.media.map((file) => file.id) }));`;
  const bins = [
    { name: 'the installed package\'s bin', bin: join(project, 'node_modules', '.bin', 'media-upload'), cwd: project },
    { name: 'the checkout\'s bin', bin: join(repo, 'node_modules', '.bin', 'media-upload'), cwd: repo },
  ];
  for (const [which, runtime, path] of [['machine', machine.node, machine.path], ['project', node, `${join(repo, 'node_modules', '.bin')}${delimiter}${machine.path}`]] as const) {
    const label = `${which} Node.js ${versions[which]}`;
    const imported = await run(runtime, ['--input-type=module', '-e', importScript, join(dir, 'shot-1.png')], { ...env, PATH: path }, project);
    t.equal(imported.code, 0, `${label}: import('@media-upload/client') from the installed package (${imported.stderr})`);
    const result = JSON.parse(imported.stdout);
    t.ok(result.listed.includes(result.id), `${label}: upload and listMedia through the import`);

    for (const { name, bin, cwd } of bins) {
      // Run as a shell runs it: the bin's `#!/usr/bin/env node` finds the first node on PATH.
      const upload = await run(bin, [join(dir, 'shot-0.png'), '--json'], { ...env, PATH: path }, cwd);
      t.equal(upload.code, 0, `${label}, ${name}: upload (${upload.stderr})`);
      t.match(jsonLines(upload.stdout)[0], { ok: true, size: contents.get('shot-0.png')!.length }, `${label}, ${name}: stored`);
      const globbed = await run(bin, [join(dir, '*.png'), '--json'], { ...env, PATH: path }, cwd);
      t.equal(jsonLines(globbed.stdout).length, 2, `${label}, ${name}: a glob expands`);
      const listed = await run(bin, ['list', '--search', 'shot-0', '--json'], { ...env, PATH: path }, cwd);
      t.equal(listed.code, 0, `${label}, ${name}: list (${listed.stderr})`);
      t.ok(JSON.parse(listed.stdout).media.some((file: any) => file.id === jsonLines(upload.stdout)[0].id), `${label}, ${name}: lists the upload`);
    }
  }
});
