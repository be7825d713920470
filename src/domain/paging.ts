import { badRequest } from '../errors/errors.ts';

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 500;

/** One page of a list (spec 4.4): which page, from 1, and how many items per page. */
export interface Paging {
  pageNumber: number;
  pageSize: number;
}

/** Parses the paging values of spec 4.4 (headers, or query parameters: see http/paging.ts); absent values are page 1 of DEFAULT_PAGE_SIZE. */
export function parsePaging(pageNumberValue: string | undefined, pageSizeValue: string | undefined): Paging {
  const pageNumber = pageNumberValue === undefined ? 1 : Number(pageNumberValue);
  const pageSize = pageSizeValue === undefined ? DEFAULT_PAGE_SIZE : Number(pageSizeValue);
  if (!Number.isInteger(pageNumber) || pageNumber < 1 || pageNumber > 1_000_000) {
    throw badRequest('pageNumber must be a whole number from 1.', 'pageNumber');
  }
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_PAGE_SIZE) {
    throw badRequest(`pageSize must be a whole number from 1 to ${MAX_PAGE_SIZE}.`, 'pageSize');
  }
  return { pageNumber, pageSize };
}
