import { z } from 'zod';

/**
 * Names a portal cannot take: the service's own hosts, common infrastructure and mail names, and
 * names that would let a portal pass for the operator or for support.
 */
export const RESERVED_SUBDOMAINS: ReadonlySet<string> = new Set([
  'www', 'api', 'admin', 'app', 'mail', 'smtp', 'imap', 'pop', 'pop3', 'mx', 'ftp', 'sftp', 'ssh', 'vpn', 'ns', 'ns1', 'ns2', 'dns',
  'cdn', 'media', 'static', 'assets', 'files', 'img', 'images', 'upload', 'uploads', 'docs', 'doc', 'help', 'support', 'status',
  'blog', 'dev', 'test', 'staging', 'stage', 'beta', 'demo', 'dashboard', 'portal', 'portals', 'auth', 'login', 'signin', 'signup',
  'account', 'accounts', 'billing', 'pay', 'payment', 'payments', 'shop', 'store', 'security', 'root', 'system', 'internal',
  'localhost', 'webmail', 'email', 'metrics', 'health', 'openapi', 'operator', 'official', 'team', 'teams', 'owner', 'moderator',
]);

/** A portal's subdomain (spec 2.20): 3-32 characters of a-z and 0-9, not a reserved word. */
export const subdomainSchema = z
  .string()
  .min(3)
  .max(32)
  .regex(/^[a-z0-9]+$/, 'must be lower-case letters and digits only')
  .refine((value) => !RESERVED_SUBDOMAINS.has(value), 'is a reserved name');

/** A custom domain (spec 2.20): 3-64 characters, `^([a-zA-Z0-9-]+\.)+[a-zA-Z]{2,}$`; kept in lower case. */
export const customDomainSchema = z
  .string()
  .trim()
  .min(3)
  .max(64)
  .regex(/^([a-zA-Z0-9-]+\.)+[a-zA-Z]{2,}$/, 'must be a domain name such as portal.example.com')
  .transform((value) => value.toLowerCase());
