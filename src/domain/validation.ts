import { z } from 'zod';
import { badRequest, missingArgument } from '../errors/errors.ts';

/**
 * Validates input against a schema and turns the first problem into the
 * spec's error: MissingArgumentError for an absent required field, otherwise
 * BadRequestError naming the field.
 */
export function parseInput<T extends z.ZodType>(schema: T, input: unknown): z.output<T> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = issue.path.map(String).join('.');
  if (issue.code === 'invalid_type' && field && valueAt(input, issue.path) === undefined) throw missingArgument(field);
  if (issue.code === 'invalid_type' && issue.path.length === 0) throw badRequest(`The request body must be ${issue.expected === 'object' ? 'a JSON object' : issue.expected}.`);
  if (issue.code === 'unrecognized_keys') throw badRequest(`Unknown field: ${issue.keys.join(', ')}.`, issue.keys[0]);
  throw badRequest(field ? `Invalid ${field}: ${issue.message}` : issue.message, field || undefined);
}

export const uuid = z.uuid({ message: 'must be a UUID' });

/** For ids taken from a path: a malformed id cannot name anything, so it is not found. */
export function isUuid(value: string): boolean {
  return uuid.safeParse(value).success;
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}
