import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { openApiDocument, openApiPath, type OpenApiDocument } from '../../src/http/openapi/document.ts';
import { Router } from '../../src/http/router.ts';
import type { HttpMethod } from '../../src/http/types.ts';

/**
 * Checks answers of the service against its OpenAPI document: the route
 * (method and path) must be described, the status must be one of its
 * responses, and a JSON body must match that response's schema. The request
 * helpers (server.ts, uploads.ts) run every answer through `assertAnswer`, so
 * an answer that drifts from the document fails the test that received it.
 */

export interface Answer {
  method: string;
  /** As requested; the query string is ignored. */
  path: string;
  status: number;
  /** The Content-Type header, if any. */
  contentType: string | null;
  /** The body as text ('' when there was none). */
  text: string;
}

export class AnswerDriftError extends Error {
  override name = 'AnswerDriftError';
}

// ajv-formats is CommonJS with a default export; under node's ESM loader it arrives as the module object.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv2020) => void;

const DOCUMENT_ID = 'openapi.json';
const METHODS = ['get', 'head', 'post', 'put', 'patch', 'delete', 'options'] as const;

function escapePointer(segment: string): string {
  return segment.replace(/~/g, '~0').replace(/\//g, '~1');
}

function isJson(contentType: string | null): boolean {
  return contentType !== null && /^application\/(?:[\w.+-]*\+)?json\b/i.test(contentType);
}

function mediaType(contentType: string): string {
  return contentType.split(';')[0]!.trim().toLowerCase();
}

interface ResponseObject {
  content?: Record<string, unknown>;
}

interface OperationObject {
  responses?: Record<string, ResponseObject>;
}

export class AnswerChecker {
  private readonly document: OpenApiDocument;
  private readonly ajv: Ajv2020;
  private readonly router = new Router();
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(document: OpenApiDocument) {
    this.document = document;
    // strict: false, because the schemas live inside an OpenAPI document (keywords such as `openapi`, `paths`, `example`).
    this.ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(this.ajv);
    this.ajv.addFormat('binary', true);
    this.ajv.addSchema(JSON.parse(JSON.stringify(document)), DOCUMENT_ID);
    for (const [path, item] of Object.entries(document.paths ?? {})) {
      for (const method of METHODS) {
        if (!(item as Record<string, unknown>)[method]) continue;
        const pattern = path.replace(/\{([^}]+)\}/g, ':$1');
        this.router.add({ method: method.toUpperCase() as HttpMethod, pattern, handler: () => ({ status: 0 }) });
      }
    }
  }

  /** The problems of one answer; empty when it matches the document. */
  check(answer: Answer): string[] {
    const method = answer.method.toUpperCase();
    const pathname = answer.path.split('?')[0]!;
    const label = `${method} ${pathname} → ${answer.status}`;
    const json = isJson(answer.contentType) && answer.text !== '';
    let pattern: string;
    try {
      pattern = this.router.match(method, pathname).pattern;
    } catch {
      // No described route (404, 405, or refused before routing): only an error in the Error body may come back.
      if (answer.status < 400) return [`${label}: the document describes no ${method} ${pathname}, yet the service answered ${answer.status}`];
      return json ? this.validate(label, '#/components/schemas/Error', answer.text) : [`${label}: an error without the Error body`];
    }
    const path = openApiPath(pattern);
    const item = (this.document.paths ?? {})[path] as Record<string, OperationObject> | undefined;
    const operationMethod = item?.[method.toLowerCase()] ? method.toLowerCase() : method === 'HEAD' && item?.['get'] ? 'get' : null;
    const operation = operationMethod ? item![operationMethod]! : null;
    const routeLabel = `${method} ${path} (${pathname}) → ${answer.status}`;
    const response = operation?.responses?.[String(answer.status)];
    if (!operation || !response) {
      const documented = Object.keys(operation?.responses ?? {}).join(', ');
      return [`${routeLabel}: status ${answer.status} is not documented for this route (documented: ${documented})`];
    }
    const content = response.content ?? {};
    if (method === 'HEAD' || answer.text === '') {
      if (method !== 'HEAD' && content['application/json']) return [`${routeLabel}: documented with a JSON body, answered without one`];
      return [];
    }
    if (json) {
      if (!content['application/json']) return [`${routeLabel}: answered JSON, documented as ${Object.keys(content).join(', ') || 'no body'}`];
      const pointer = `#/paths/${escapePointer(path)}/${operationMethod}/responses/${answer.status}/content/application~1json/schema`;
      return this.validate(routeLabel, pointer, answer.text);
    }
    const type = answer.contentType ? mediaType(answer.contentType) : '';
    if (!content[type] && !content['*/*']) return [`${routeLabel}: answered ${type || 'a body without Content-Type'}, documented as ${Object.keys(content).join(', ') || 'no body'}`];
    return [];
  }

  private validate(label: string, pointer: string, text: string): string[] {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return [`${label}: the body is not valid JSON: ${text.slice(0, 200)}`];
    }
    let validate = this.validators.get(pointer);
    if (!validate) {
      validate = this.ajv.compile({ $ref: `${DOCUMENT_ID}${pointer}` });
      this.validators.set(pointer, validate);
    }
    if (validate(body)) return [];
    const errors = (validate.errors ?? []).map((error) => `  ${error.instancePath || '(body)'} ${error.message ?? ''} ${JSON.stringify(error.params)}`);
    return [`${label}: the body does not match ${pointer}:\n${errors.join('\n')}\n  body: ${text.slice(0, 2000)}`];
  }
}

let shared: AnswerChecker | null = null;

/** One checker per process: its validators are compiled once, on first use. */
export function answerChecker(): AnswerChecker {
  shared ??= new AnswerChecker(openApiDocument().document);
  return shared;
}

/** Throws AnswerDriftError when the answer does not match the service's OpenAPI document. */
export function assertAnswer(answer: Answer): void {
  const problems = answerChecker().check(answer);
  if (problems.length > 0) throw new AnswerDriftError(`The answer does not match the OpenAPI document:\n${problems.join('\n')}`);
}
