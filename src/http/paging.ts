import { parsePaging, type Paging } from '../domain/paging.ts';
import type { HttpRequest } from './types.ts';

/**
 * Spec 4.4's paging, the one way every list route reads it: the `pageNumber` and `pageSize`
 * headers, or query parameters of those names (the headers win).
 */
export function readPaging(request: HttpRequest): Paging {
  return parsePaging(pagingValue(request, 'pageNumber'), pagingValue(request, 'pageSize'));
}

function pagingValue(request: HttpRequest, name: 'pageNumber' | 'pageSize'): string | undefined {
  return request.headers[name.toLowerCase()] ?? request.query.get(name) ?? undefined;
}
