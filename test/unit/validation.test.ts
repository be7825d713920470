import t from 'tap';
import type { Test } from 'tap';
import { z } from 'zod';
import { ServiceError } from '../../src/errors/service-error.ts';
import { isUuid, parseInput } from '../../src/domain/validation.ts';
import { effectiveLimits, limitsPatchSchema } from '../../src/domain/teams/team-limits.ts';
import { booleanLimitKeys, defaultPlanLimits } from '../../src/domain/plans/plan-limits.ts';
import type { PlanLimits } from '../../src/domain/plans/plan-limits.ts';

const schema = z.strictObject({
  name: z.string().min(1),
  size: z.number().int().optional(),
  owner: z.strictObject({ id: z.string(), email: z.email().optional() }).optional(),
  tags: z.array(z.string()).optional(),
});

function parseError(t: Test, input: unknown, s: z.ZodType = schema): ServiceError {
  try {
    parseInput(s, input);
  } catch (error) {
    t.type(error, ServiceError, 'throws a ServiceError');
    return error as ServiceError;
  }
  t.fail(`expected ${JSON.stringify(input)} to be rejected`);
  return new ServiceError({ name: 'none', status: 0, messageKey: 'none', message: 'none' });
}

t.test('parseInput returns the parsed value', (t) => {
  t.same(parseInput(schema, { name: 'a' }), { name: 'a' });
  t.same(parseInput(schema, { name: 'a', size: 3, owner: { id: 'x' }, tags: ['t'] }), { name: 'a', size: 3, owner: { id: 'x' }, tags: ['t'] });
  t.equal(parseInput(z.string().transform((s) => s.length), 'abcd'), 4, 'transforms apply');
  t.end();
});

t.test('a missing required field is MissingArgumentError', (t) => {
  const error = parseError(t, {});
  t.equal(error.name, 'MissingArgumentError');
  t.equal(error.status, 400);
  t.equal(error.messageKey, 'error.missingArgument.name');
  t.equal(error.value, 'name');
  t.equal(error.message, 'Missing argument: name.');
  t.same(error.toBody(), {
    name: 'MissingArgumentError',
    message: 'Missing argument: name.',
    status: 400,
    messageKey: 'error.missingArgument.name',
    value: 'name',
  });
  t.end();
});

t.test('a missing nested field is named by its dotted path', (t) => {
  const error = parseError(t, { name: 'a', owner: {} });
  t.equal(error.name, 'MissingArgumentError');
  t.equal(error.messageKey, 'error.missingArgument.owner.id');
  t.equal(error.value, 'owner.id');
  t.end();
});

t.test('a required field sent as null is a wrong type, not missing', (t) => {
  const error = parseError(t, { name: null });
  t.equal(error.name, 'BadRequestError');
  t.equal(error.status, 400);
  t.equal(error.value, 'name');
  t.end();
});

t.test('a wrong type is BadRequestError naming the field', (t) => {
  const cases: [unknown, string][] = [
    [{ name: 5 }, 'name'],
    [{ name: 'a', size: 'big' }, 'size'],
    [{ name: 'a', size: 1.5 }, 'size'],
    [{ name: '' }, 'name'],
    [{ name: 'a', owner: { id: 1 } }, 'owner.id'],
    [{ name: 'a', owner: { id: 'x', email: 'nope' } }, 'owner.email'],
    [{ name: 'a', tags: ['ok', 2] }, 'tags.1'],
    [{ name: 'a', tags: 'ok' }, 'tags'],
  ];
  for (const [input, field] of cases) {
    t.test(JSON.stringify(input), (t) => {
      const error = parseError(t, input);
      t.equal(error.name, 'BadRequestError');
      t.equal(error.status, 400);
      t.equal(error.messageKey, 'error.badRequest');
      t.equal(error.value, field);
      t.match(error.message, new RegExp(`^Invalid ${field.replace('.', '\\.')}: `));
      t.end();
    });
  }
  t.end();
});

t.test('an unknown key on a strict object is BadRequestError', (t) => {
  const error = parseError(t, { name: 'a', colour: 'red' });
  t.equal(error.name, 'BadRequestError');
  t.equal(error.status, 400);
  t.equal(error.messageKey, 'error.badRequest');
  t.equal(error.message, 'Unknown field: colour.');
  t.equal(error.value, 'colour');

  const two = parseError(t, { name: 'a', x: 1, y: 2 });
  t.equal(two.message, 'Unknown field: x, y.');
  t.equal(two.value, 'x');

  const nested = parseError(t, { name: 'a', owner: { id: 'x', extra: true } });
  t.equal(nested.name, 'BadRequestError');
  t.equal(nested.message, 'Unknown field: extra.');
  t.end();
});

t.test('a body that is not an object is BadRequestError', (t) => {
  for (const input of [null, undefined, 'text', 42, true, ['name']]) {
    const error = parseError(t, input);
    t.equal(error.name, 'BadRequestError', JSON.stringify(input) ?? 'undefined');
    t.equal(error.status, 400);
    t.equal(error.messageKey, 'error.badRequest');
    t.equal(error.message, 'The request body must be a JSON object.');
    t.equal(error.value, undefined);
  }
  t.end();
});

t.test('a top-level problem of a non-object schema names what was expected', (t) => {
  const error = parseError(t, 5, z.string());
  t.equal(error.name, 'BadRequestError');
  t.equal(error.message, 'The request body must be string.');
  t.end();
});

t.test('isUuid', (t) => {
  t.equal(isUuid('0b5c8f0e-7a3c-4d5e-9f10-1a2b3c4d5e6f'), true);
  t.equal(isUuid('not-a-uuid'), false);
  t.equal(isUuid(''), false);
  t.end();
});

// ---- team limits ----

const numericKeys = (Object.keys(defaultPlanLimits) as (keyof PlanLimits)[]).filter(
  (key) => typeof defaultPlanLimits[key] === 'number',
);

t.test('limitsPatchSchema accepts numbers and null for numeric limits', (t) => {
  t.ok(numericKeys.length > 10);
  for (const key of numericKeys) {
    t.same(limitsPatchSchema.parse({ [key]: 0 }), { [key]: 0 }, `${key}: 0`);
    t.same(limitsPatchSchema.parse({ [key]: 1000 }), { [key]: 1000 });
    t.same(limitsPatchSchema.parse({ [key]: null }), { [key]: null }, `${key}: null means unlimited`);
  }
  t.same(limitsPatchSchema.parse({ maxMediaFileSize: Number.MAX_SAFE_INTEGER }), { maxMediaFileSize: Number.MAX_SAFE_INTEGER });
  t.end();
});

t.test('limitsPatchSchema accepts booleans for boolean limits', (t) => {
  for (const key of booleanLimitKeys) {
    t.same(limitsPatchSchema.parse({ [key]: true }), { [key]: true });
    t.same(limitsPatchSchema.parse({ [key]: false }), { [key]: false });
    t.notOk(limitsPatchSchema.safeParse({ [key]: 1 }).success, `${key}: 1 is not a boolean`);
    t.notOk(limitsPatchSchema.safeParse({ [key]: 'true' }).success, `${key}: "true" is not a boolean`);
    t.notOk(limitsPatchSchema.safeParse({ [key]: null }).success, `${key}: null is not a boolean`);
  }
  t.end();
});

t.test('limitsPatchSchema accepts any subset, including none', (t) => {
  t.same(limitsPatchSchema.parse({}), {});
  const patch = { maxMembers: 50, customPortalDomain: true, customerDiscordRoleId: '1234', maxTeamStorage: null };
  t.same(limitsPatchSchema.parse(patch), patch);
  t.same(limitsPatchSchema.parse(defaultPlanLimits), defaultPlanLimits, 'a whole PlanLimits object');
  t.end();
});

t.test('limitsPatchSchema rejects negative, fractional, too large, string and unknown values', (t) => {
  const rejected: [string, Record<string, unknown>][] = [
    ['negative', { maxMembers: -1 }],
    ['fractional', { maxMembers: 1.5 }],
    ['beyond safe integers', { maxMembers: Number.MAX_SAFE_INTEGER + 2 }],
    ['string for number', { maxMembers: '10' }],
    ['boolean for number', { maxMembers: true }],
    ['unknown key', { maxUnicorns: 1 }],
    ['unknown key beside a valid one', { maxMembers: 1, maxunicorns: 1 }],
    ['number for role id', { customerDiscordRoleId: 1234 }],
    ['role id too long', { customerDiscordRoleId: 'x'.repeat(65) }],
  ];
  for (const [label, input] of rejected) t.notOk(limitsPatchSchema.safeParse(input).success, label);
  t.notOk(limitsPatchSchema.safeParse(null).success, 'null');
  t.notOk(limitsPatchSchema.safeParse([]).success, 'array');
  t.end();
});

t.test('limitsPatchSchema problems become the spec errors through parseInput', (t) => {
  const negative = parseError(t, { maxMembers: -1 }, limitsPatchSchema);
  t.equal(negative.name, 'BadRequestError');
  t.equal(negative.value, 'maxMembers');
  const unknown = parseError(t, { maxUnicorns: 1 }, limitsPatchSchema);
  t.equal(unknown.message, 'Unknown field: maxUnicorns.');
  t.equal(unknown.value, 'maxUnicorns');
  t.end();
});

t.test('effectiveLimits layers defaults < plan < overrides', (t) => {
  t.same(effectiveLimits(null, {}), defaultPlanLimits, 'no plan, no overrides: defaults');
  t.same(effectiveLimits(undefined, {}), defaultPlanLimits);

  const plan: PlanLimits = { ...defaultPlanLimits, maxMembers: 100, maxGroups: null, customPortalDomain: true };
  const fromPlan = effectiveLimits(plan, {});
  t.equal(fromPlan.maxMembers, 100, 'plan over defaults');
  t.equal(fromPlan.maxGroups, null, 'a plan may lift a limit');
  t.equal(fromPlan.customPortalDomain, true);

  const withOverrides = effectiveLimits(plan, { maxMembers: 7, maxGroups: 3, customPortalDomain: false });
  t.equal(withOverrides.maxMembers, 7, 'override over plan');
  t.equal(withOverrides.maxGroups, 3, 'override over an unlimited plan value');
  t.equal(withOverrides.customPortalDomain, false, 'a boolean override of false wins');
  t.equal(withOverrides.maxLinks, defaultPlanLimits.maxLinks, 'untouched keys keep the default');

  const unlimited = effectiveLimits(null, { maxTeamStorage: null, maxMembers: 0 });
  t.equal(unlimited.maxTeamStorage, null, 'a null override means unlimited');
  t.equal(unlimited.maxMembers, 0, 'zero is a real limit');

  // A plan stored before a limit existed lacks that key: the default fills it.
  const partialPlan = { maxMembers: 40 } as unknown as PlanLimits;
  const filled = effectiveLimits(partialPlan, {});
  t.equal(filled.maxMembers, 40);
  t.equal(filled.maxMediaFileSize, defaultPlanLimits.maxMediaFileSize);
  t.same(Object.keys(filled).sort(), Object.keys(defaultPlanLimits).sort(), 'every limit present');

  t.not(effectiveLimits(null, {}), defaultPlanLimits, 'a fresh object, not the shared defaults');
  t.end();
});
