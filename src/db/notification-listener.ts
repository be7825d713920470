import pg from 'pg';
import type { Logger } from 'pino';

export interface NotificationListenerOptions {
  databaseUrl: string;
  channel: string;
  logger: Logger;
  onNotification: (payload: string) => void;
  /** Called after a reconnect: notifications sent while disconnected are lost. */
  onReconnect: () => void;
  reconnectDelayMs?: number;
}

/**
 * A dedicated connection that LISTENs on one PostgreSQL channel and reconnects
 * when the connection drops. NOTIFY is delivered on commit, so a listener never
 * hears of a change that was rolled back.
 */
export class NotificationListener {
  private readonly options: NotificationListenerOptions;
  private client: pg.Client | null = null;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | null = null;

  constructor(options: NotificationListenerOptions) {
    this.options = options;
  }

  async start(): Promise<void> {
    await this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.options.databaseUrl });
    client.on('notification', (message) => {
      if (message.channel === this.options.channel) this.options.onNotification(message.payload ?? '');
    });
    client.on('error', (error) => this.onConnectionLost(client, error));
    client.on('end', () => this.onConnectionLost(client, null));
    await client.connect();
    await client.query(`LISTEN ${pg.escapeIdentifier(this.options.channel)}`);
    this.client = client;
  }

  private onConnectionLost(client: pg.Client, error: Error | null): void {
    if (this.stopped || this.client !== client) return;
    this.client = null;
    this.options.logger.warn({ err: error, channel: this.options.channel }, 'notification connection lost, reconnecting');
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.stopped) return;
    this.retryTimer = setTimeout(() => {
      this.connect()
        .then(() => this.options.onReconnect())
        .catch((error: unknown) => {
          this.options.logger.warn({ err: error, channel: this.options.channel }, 'notification reconnect failed');
          this.scheduleReconnect();
        });
    }, this.options.reconnectDelayMs ?? 1000);
  }
}
