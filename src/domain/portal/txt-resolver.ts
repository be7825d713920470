import { Resolver } from 'node:dns/promises';

/** Looks up the TXT records of a name: each record as its character strings (node:dns' shape). */
export interface TxtResolver {
  resolveTxt(name: string): Promise<string[][]>;
}

/** The system's resolvers through node:dns/promises, bounded so a verify call answers within seconds. */
export function systemTxtResolver(options: { timeoutMs?: number; tries?: number } = {}): TxtResolver {
  const resolver = new Resolver({ timeout: options.timeoutMs ?? 3000, tries: options.tries ?? 2 });
  return { resolveTxt: (name) => resolver.resolveTxt(name) };
}
