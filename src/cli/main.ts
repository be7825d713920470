import { parseArgs } from 'node:util';
import { Backend } from '../composition/backend.ts';
import type { CoreServices } from '../composition/services.ts';
import { ConfigError, type Config } from '../config/config.ts';
import { parsePaging } from '../domain/paging.ts';
import { parseMemberSearch } from '../domain/members/member-admin.service.ts';
import { reconcileStorage } from '../domain/usage/storage-reconcile.ts';
import { badRequest, notFound, toServiceError } from '../errors/errors.ts';
import { cliLogger, loadCliConfig } from './cli-setup.ts';
import { databaseCommandUsages, runDatabaseCommand } from './database-commands.ts';
import { writeSharexUploader } from './sharex.ts';
import { storageCommands } from './storage-commands.ts';

/**
 * The operator routes for shell use: `npm run --silent cli -- team create --name Alpha`.
 * Prints the same JSON the routes answer; errors print the spec's error body on
 * stderr and exit 1.
 */

interface Command {
  usage: string;
  options: Record<string, { type: 'string' | 'boolean' }>;
  run(services: CoreServices, values: Record<string, unknown>, config: Config): Promise<unknown>;
}

const list = (value: unknown): string[] | undefined =>
  typeof value === 'string' ? value.split(',').map((item) => item.trim()).filter(Boolean) : undefined;
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

function parseJsonOption(value: unknown): unknown {
  if (typeof value !== 'string') return {};
  try {
    return JSON.parse(value);
  } catch {
    throw badRequest('--json must be a JSON object');
  }
}

const commands: Record<string, Command> = {
  'team create': {
    usage: 'team create --name NAME [--plan SLUG]',
    options: { name: { type: 'string' }, plan: { type: 'string' } },
    run: (s, v) => s.teams.createTeam({ name: v.name, plan: v.plan }),
  },
  'team list': {
    usage: 'team list [--search TEXT] [--page N] [--page-size N]',
    options: { search: { type: 'string' }, page: { type: 'string' }, 'page-size': { type: 'string' } },
    run: (s, v) => s.teams.listTeams(parsePaging(text(v.page), text(v['page-size'])), parseMemberSearch(new URLSearchParams({ search: text(v.search) ?? '' }))),
  },
  'team limits': {
    usage: "team limits --team ID [--json '{\"maxTeamStorage\": 200000}']",
    options: { team: { type: 'string' }, json: { type: 'string' } },
    run: (s, v) => (v.json ? s.teams.updateLimits(text(v.team) ?? '', parseJsonOption(v.json)) : s.teams.getLimits(text(v.team) ?? '')),
  },
  'team plan': {
    usage: 'team plan --team ID [--plan SLUG]',
    options: { team: { type: 'string' }, plan: { type: 'string' } },
    run: (s, v) => (v.plan ? s.subscriptions.setPlan(text(v.team) ?? '', { plan: v.plan }) : s.subscriptions.teamPlan(text(v.team) ?? '')),
  },
  'team subscription': {
    usage: "team subscription --team ID [--json '{\"plan\": \"enterprise\", \"isTrialing\": true, \"trialEndsAt\": \"...\"}']",
    options: { team: { type: 'string' }, json: { type: 'string' } },
    run: (s, v) => (v.json ? s.subscriptions.setSubscription(text(v.team) ?? '', parseJsonOption(v.json)) : s.subscriptions.list(text(v.team) ?? '')),
  },
  'member create': {
    usage: 'member create --team ID --name NAME [--permissions team.media.view,...] [--groups ID,...]',
    options: { team: { type: 'string' }, name: { type: 'string' }, permissions: { type: 'string' }, groups: { type: 'string' } },
    run: (s, v) => s.members.createMember(text(v.team) ?? '', { name: v.name, permissions: list(v.permissions) ?? [], groupIds: list(v.groups) }),
  },
  'group create': {
    usage: 'group create --team ID --name NAME [--permissions ...] [--color #RRGGBB]',
    options: { team: { type: 'string' }, name: { type: 'string' }, permissions: { type: 'string' }, color: { type: 'string' } },
    run: (s, v) => s.members.createGroup(text(v.team) ?? '', { name: v.name, permissions: list(v.permissions) ?? [], color: v.color }),
  },
  'member add-group': {
    usage: 'member add-group --team ID --member ID --group ID',
    options: { team: { type: 'string' }, member: { type: 'string' }, group: { type: 'string' } },
    run: async (s, v) => {
      await s.members.addMemberToGroup(text(v.team) ?? '', text(v.member) ?? '', { groupId: v.group });
      return { ok: true };
    },
  },
  'api-key create': {
    usage: 'api-key create --team ID [--description TEXT] [--member ID] [--scopes media:upload]',
    options: { team: { type: 'string' }, description: { type: 'string' }, member: { type: 'string' }, scopes: { type: 'string' } },
    run: (s, v) => s.apiKeys.create(text(v.team) ?? '', { description: v.description, teamMemberId: v.member, scopes: list(v.scopes) }),
  },
  'api-key list': {
    usage: 'api-key list --team ID (also: key list --team ID)',
    options: { team: { type: 'string' } },
    run: (s, v) => s.teams.listApiKeys(text(v.team) ?? ''),
  },
  'api-key reroll': {
    usage: 'api-key reroll --id KEY_ID',
    options: { id: { type: 'string' } },
    run: (s, v) => s.apiKeys.reroll(text(v.id) ?? ''),
  },
  'api-key delete': {
    usage: 'api-key delete --id KEY_ID',
    options: { id: { type: 'string' } },
    run: async (s, v) => {
      await s.apiKeys.delete(text(v.id) ?? '');
      return { deleted: v.id };
    },
  },
  'storage reconcile': {
    usage: 'storage reconcile [--team ID] [--dry-run]',
    options: { team: { type: 'string' }, 'dry-run': { type: 'boolean' } },
    run: async (s, v) => {
      const teamId = text(v.team);
      const report = await reconcileStorage(s.orm, { teamId, dryRun: v['dry-run'] === true });
      if (teamId !== undefined && report.length === 0) throw notFound('team', teamId);
      return report;
    },
  },
  sharex: {
    usage: 'sharex --team ID (--key KEY | --create-key) [--folder PATH] [--tags a,b] [--out FILE.sxcu]',
    options: {
      team: { type: 'string' }, key: { type: 'string' }, 'create-key': { type: 'boolean' },
      folder: { type: 'string' }, tags: { type: 'string' }, out: { type: 'string' },
    },
    run: (s, v, config) => writeSharexUploader(s, config, v),
  },
  ...storageCommands,
};

// `key list`, as people say it, for `api-key list`.
commands['key list'] = commands['api-key list']!;

function usage(): string {
  const usages = [...[...new Set(Object.values(commands))].map((command) => command.usage), ...databaseCommandUsages()];
  return ['Usage: npm run --silent cli -- <command>', ...usages.map((line) => `  ${line}`)].join('\n');
}

async function main(argv: string[]): Promise<number> {
  // db export/import, backup, restore: they open the database without the service's composition.
  const handled = await runDatabaseCommand(argv);
  if (handled !== null) return handled;
  // Commands are one word (sharex) or two (team create).
  const words = commands[argv.slice(0, 2).join(' ')] ? 2 : 1;
  const command = commands[argv.slice(0, words).join(' ')];
  if (!command) {
    process.stderr.write(`${usage()}\n`);
    return 2;
  }
  let values: Record<string, unknown>;
  try {
    values = parseArgs({ args: argv.slice(words), options: command.options, strict: true }).values;
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\nUsage: npm run --silent cli -- ${command.usage}\n`);
    return 2;
  }
  const config = loadCliConfig();
  if (!config) return 1;
  const logger = cliLogger(config);
  let backend: Backend;
  try {
    // A server whose owner was killed is used as it is: the next service start takes it over, and the cli's exit must not stop it.
    backend = await Backend.open(config, logger, { takeOverEmbeddedDatabase: false });
  } catch (error) {
    // Start-up failures (database, storage, a setting only the database can judge) are the operator's to fix: the message, not a stack trace.
    if (error instanceof ConfigError) process.stderr.write(`${error.message}\n`);
    else process.stderr.write(`Cannot open the database and storage: ${(error as Error).message}\n`);
    return 1;
  }
  try {
    const result = await command.run(backend.services, values, config);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } catch (error) {
    const serviceError = toServiceError(error);
    if (serviceError !== error) logger.error({ err: error }, 'command failed');
    process.stderr.write(`${JSON.stringify(serviceError.toBody(), null, 2)}\n`);
    return 1;
  } finally {
    await backend.close();
  }
}

process.exitCode = await main(process.argv.slice(2));
