import { z } from 'zod';
import { badRequest } from '../../errors/errors.ts';
import { parseInput, uuid } from '../validation.ts';
import type { DeliveryPosition, NotificationDeliveries, NotificationDelivery } from './notification-deliveries.ts';

export const DEFAULT_DELIVERY_PAGE = 50;
export const MAX_DELIVERY_PAGE = 100;

export const deliveryListQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(MAX_DELIVERY_PAGE).optional()
    .meta({ description: `Deliveries per page, 1-${MAX_DELIVERY_PAGE} (default ${DEFAULT_DELIVERY_PAGE}).` }),
  cursor: z.string().min(1).max(200).optional()
    .meta({ description: 'The `nextCursor` of the previous page; without it, the first page.' }),
});

const MICROSECOND_ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const positionSchema = z.tuple([z.string().regex(MICROSECOND_ISO), uuid]);

/** The cursor is opaque to clients: today base64url of `[createdAt, id]` of the page's last delivery. */
export function encodeCursor(position: DeliveryPosition): string {
  return Buffer.from(JSON.stringify([position.createdAt, position.id])).toString('base64url');
}

export function decodeCursor(cursor: string): DeliveryPosition {
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    // not JSON: refused below
  }
  const position = positionSchema.safeParse(parsed);
  if (!position.success || Number.isNaN(Date.parse(position.data[0]))) {
    throw badRequest('Invalid cursor: pass the nextCursor of the previous page unchanged', 'cursor');
  }
  return { createdAt: position.data[0], id: position.data[1] };
}

/** Spec 2.9's delivery list response. */
export interface DeliveryList {
  items: NotificationDelivery[];
  nextCursor: string | null;
}

/** A user's deliveries, newest first, a page at a time (`limit`, `cursor`; nextCursor null on the last page). */
export async function listDeliveries(deliveries: NotificationDeliveries, userId: string, query: URLSearchParams): Promise<DeliveryList> {
  const { limit = DEFAULT_DELIVERY_PAGE, cursor } = parseInput(deliveryListQuerySchema, Object.fromEntries(query));
  const after = cursor === undefined ? null : decodeCursor(cursor);
  // One more than asked tells whether another page follows.
  const rows = await deliveries.page(userId, limit + 1, after);
  const page = rows.slice(0, limit);
  return {
    items: page.map((row) => row.delivery),
    nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1]!.position) : null,
  };
}
