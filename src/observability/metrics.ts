import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { AggregatorRegistry, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** What the upload gauges read at scrape time (AdmissionGate has both). */
export interface UploadGateView {
  readonly running: number;
  readonly waiting: number;
}

/** What the pool gauge reads at scrape time (MediaPool has it). */
export interface WorkerPoolView {
  readonly utilization: number;
}

/** One process's metrics as prom-client's getMetricsAsJSON() gives them; plain data, sent between processes. */
export type MetricsSnapshot = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;

/** The snapshots of the other service processes (HTTP_PROCESSES > 1), for a scrape that reached this one. */
export type PeerMetrics = () => Promise<MetricsSnapshot[]>;

export type UploadOutcome = 'created' | 'refused' | 'failed' | 'aborted';

const NS_PER_SECOND = 1e9;
/** Upload durations run from milliseconds (a tiny file) to minutes (260 MB over a slow link). */
const UPLOAD_DURATION_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
/** A stage runs from a fraction of a millisecond (a small body, a flush on a fast disk) to minutes (a large body). */
const UPLOAD_STAGE_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/**
 * The service's Prometheus metrics, in a registry of their own (one per
 * Application: tests run several in one process, and nothing lands in
 * prom-client's global registry). Request paths only call inc()/observe();
 * gauges of the gate, the pool and the event loop are read when scraped.
 */
export class Metrics {
  readonly registry = new Registry();
  /** Every response sent, by status code and route pattern. */
  readonly responses: Counter<'route' | 'status'>;
  /** 503 error.media.uploadBusy: the admission gate's waiting room was full. */
  readonly uploadBusy: Counter;
  /** 429 error.tooManyRequests. */
  readonly rateLimited: Counter;
  /** Request body bytes read by the upload routes (multipart or JSON framing included). */
  readonly uploadBytes: Counter<'route'>;
  /** From admission to the answer, by upload route and outcome. */
  readonly uploadDuration: Histogram<'route' | 'outcome'>;
  /** A created upload's time per stage (queue, receive, store, commit). */
  readonly uploadStages: Histogram<'stage'>;
  /** Thumbnails of image uploads, by outcome (src/previews/thumbnailer.ts). */
  readonly thumbnails: Counter<'outcome'>;
  /** Requests for resized images, by result (src/previews/image-transformer.ts). */
  readonly transforms: Counter<'result'>;
  /** StorageError failures of uploads (opening, writing or finishing the object), by StorageError code. */
  readonly storageWriterErrors: Counter<'code'>;
  /** Requests the s3 driver sent, retries included, by operation: what S3 bills per request. */
  readonly s3Requests: Counter<'operation'>;
  /** API key prefixes looked up in the database (cache misses), by whether a usable key was found. */
  readonly apiKeyLookups: Counter<'result'>;
  /** Upload URLs made (POST /upload-urls answered 201). */
  readonly uploadUrlsCreated: Counter;
  /** Upload URLs used: their upload was committed. */
  readonly uploadUrlsUsed: Counter;
  /** Uses of upload URLs refused, by reason (UploadUrlRefusalReason). */
  readonly uploadUrlsRefused: Counter<'reason'>;
  /** Requests with an Idempotency-Key answered with the first request's answer (Idempotent-Replayed), by route pattern. */
  readonly idempotentReplays: Counter<'route'>;
  /** Requests with an Idempotency-Key refused: 409 in_flight, 422 key_reused, by route pattern. */
  readonly idempotencyConflicts: Counter<'route' | 'reason'>;
  /** tus PATCH requests receiving bytes on this instance now. */
  readonly tusUploadsInProgress: Gauge;
  /** Bytes stored by tus PATCHes that started at a non-zero offset (uploads resumed after a break, or sent in several requests). */
  readonly tusResumedBytes: Counter;
  /** tus uploads completed (became media files). */
  readonly tusCompleted: Counter;

  private peers: PeerMetrics | null = null;
  private gate: UploadGateView | null = null;
  private pool: WorkerPoolView | null = null;
  private readonly eventLoop: IntervalHistogram;

  constructor() {
    const registers = [this.registry];
    this.responses = new Counter({
      name: 'media_http_responses_total',
      help: 'HTTP responses sent, by status code and route pattern',
      labelNames: ['route', 'status'] as const,
      registers,
    });
    this.uploadBusy = new Counter({
      name: 'media_upload_busy_total',
      help: 'Uploads refused with 503 error.media.uploadBusy (admission gate and waiting room full)',
      registers,
    });
    this.rateLimited = new Counter({
      name: 'media_rate_limited_total',
      help: 'Requests refused with 429 error.tooManyRequests',
      registers,
    });
    this.uploadUrlsCreated = new Counter({
      name: 'media_upload_urls_created_total',
      help: 'Upload URLs created',
      registers,
    });
    this.uploadUrlsUsed = new Counter({
      name: 'media_upload_urls_used_total',
      help: 'Upload URLs used: an upload through them was committed',
      registers,
    });
    this.uploadUrlsRefused = new Counter({
      name: 'media_upload_urls_refused_total',
      help: 'Uses of upload URLs refused or failed, by reason',
      labelNames: ['reason'] as const,
      registers,
    });
    this.uploadBytes = new Counter({
      name: 'media_upload_received_bytes_total',
      help: 'Request body bytes received by the upload routes',
      labelNames: ['route'] as const,
      registers,
    });
    this.uploadDuration = new Histogram({
      name: 'media_upload_duration_seconds',
      help: 'Upload time from admission to the answer, by route (multipart, json) and outcome (created, refused, failed, aborted)',
      labelNames: ['route', 'outcome'] as const,
      buckets: UPLOAD_DURATION_BUCKETS,
      registers,
    });
    this.uploadStages = new Histogram({
      name: 'media_upload_stage_seconds',
      help: 'Where a created upload spent its time, by stage: queue (waiting for an admission place), receive (the body, from admission until the whole file is in), store (the bytes made durable), commit (the database commit)',
      labelNames: ['stage'] as const,
      buckets: UPLOAD_STAGE_BUCKETS,
      registers,
    });
    this.thumbnails = new Counter({
      name: 'media_thumbnails_total',
      help: 'Thumbnails of image uploads, by outcome (made; failed: the image cannot be decoded or is too large, never retried; retried: a transient failure)',
      labelNames: ['outcome'] as const,
      registers,
    });
    this.transforms = new Counter({
      name: 'media_transforms_total',
      help: 'Requests for resized images, by result (hit: from the cache; miss: resized now; shared: resized for a request of the same variant at the same time; refused: 400; busy: 503)',
      labelNames: ['result'] as const,
      registers,
    });
    this.storageWriterErrors = new Counter({
      name: 'media_storage_writer_errors_total',
      help: 'Uploads that failed on a storage error, by StorageError code',
      labelNames: ['code'] as const,
      registers,
    });
    this.s3Requests = new Counter({
      name: 'media_s3_requests_total',
      help: 'Requests the s3 driver sent to S3, each retry included, by operation (PutObject, CreateMultipartUpload, UploadPart, GetObject, ...)',
      labelNames: ['operation'] as const,
      registers,
    });
    this.apiKeyLookups = new Counter({
      name: 'media_api_key_lookups_total',
      help: 'API key prefixes looked up in the database (not in the key cache nor the cache of unknown prefixes), by result (found, missing)',
      labelNames: ['result'] as const,
      registers,
    });
    this.idempotentReplays = new Counter({
      name: 'media_idempotent_replays_total',
      help: 'Requests with an Idempotency-Key answered with the first request\'s answer (Idempotent-Replayed: true), by route pattern',
      labelNames: ['route'] as const,
      registers,
    });
    this.idempotencyConflicts = new Counter({
      name: 'media_idempotency_conflicts_total',
      help: 'Requests with an Idempotency-Key refused, by route pattern and reason (in_flight: 409, the first still runs; key_reused: 422, another request)',
      labelNames: ['route', 'reason'] as const,
      registers,
    });
    this.tusUploadsInProgress = new Gauge({
      name: 'media_tus_uploads_in_progress',
      help: 'Resumable (tus) uploads receiving bytes on this instance now (PATCH requests in progress)',
      registers,
    });
    this.tusResumedBytes = new Counter({
      name: 'media_tus_resumed_bytes_total',
      help: 'Bytes stored by tus PATCH requests that started at a non-zero offset (resumed uploads)',
      registers,
    });
    this.tusCompleted = new Counter({
      name: 'media_tus_uploads_completed_total',
      help: 'Resumable (tus) uploads completed and committed as media files',
      registers,
    });
    const metrics = this;
    new Gauge({
      name: 'media_uploads_in_flight',
      help: 'Uploads holding an admission slot',
      registers,
      collect() {
        this.set(metrics.gate?.running ?? 0);
      },
    });
    new Gauge({
      name: 'media_uploads_queued',
      help: 'Uploads waiting for an admission slot',
      registers,
      collect() {
        this.set(metrics.gate?.waiting ?? 0);
      },
    });
    new Gauge({
      name: 'media_worker_pool_utilization',
      help: 'Share of the worker pool thread time spent running tasks, 0 to 1 (the mean over the service processes)',
      registers,
      aggregator: 'average',
      collect() {
        this.set(metrics.pool?.utilization ?? 0);
      },
    });

    this.eventLoop = monitorEventLoopDelay({ resolution: 10 });
    this.eventLoop.enable();
    // Each scrape reads the delays since the previous one, then starts a fresh window.
    const eventLoopGauge = (name: string, help: string, read: (histogram: IntervalHistogram) => number) =>
      new Gauge({ name, help, registers, aggregator: 'max', collect() {
        this.set(metrics.eventLoop.count > 0 ? read(metrics.eventLoop) / NS_PER_SECOND : 0);
      } });
    eventLoopGauge('media_event_loop_delay_p50_seconds', 'Median event-loop delay since the previous scrape (the worst service process)', (h) => h.percentile(50));
    eventLoopGauge('media_event_loop_delay_p99_seconds', '99th percentile event-loop delay since the previous scrape (the worst service process)', (h) => h.percentile(99));
    eventLoopGauge('media_event_loop_delay_max_seconds', 'Largest event-loop delay since the previous scrape (the worst service process)', (h) => h.max);
    // Summed over the processes a scrape gathered: fewer than HTTP_PROCESSES when one did not answer in time.
    new Gauge({
      name: 'media_metrics_processes',
      help: 'Service processes whose metrics this scrape includes',
      registers,
      collect() {
        this.set(1);
      },
    });
  }

  /**
   * With HTTP_PROCESSES > 1 a scrape reaches one process; from then on render() answers for all
   * of them: counters, histograms and upload gauges summed, event-loop delays the worst process's.
   */
  includePeers(peers: PeerMetrics): void {
    this.peers = peers;
  }

  /** This process's metrics as data (for the process a scrape reached); resets the event-loop window. */
  async snapshot(): Promise<MetricsSnapshot> {
    const snapshot = await this.registry.getMetricsAsJSON();
    this.eventLoop.reset();
    return snapshot;
  }

  /** Binds the gauges to the backend's admission gate and worker pool once they exist. */
  observe(sources: { gate: UploadGateView; pool: WorkerPoolView }): void {
    this.gate = sources.gate;
    this.pool = sources.pool;
  }

  /** Counts a response as it is sent. */
  recordResponse(route: string, status: number, messageKey: string | null): void {
    this.responses.inc({ route, status: String(status) });
    if (status === 429) this.rateLimited.inc();
    else if (status === 503 && messageKey === 'error.media.uploadBusy') this.uploadBusy.inc();
    else if (messageKey === 'error.media.idempotencyInFlight') this.idempotencyConflicts.inc({ route, reason: 'in_flight' });
    else if (messageKey === 'error.media.idempotencyKeyReused') this.idempotencyConflicts.inc({ route, reason: 'key_reused' });
  }

  /** The Prometheus text exposition (of every service process once includePeers() was called); resets the event-loop window. */
  async render(): Promise<string> {
    if (this.peers) {
      const [own, peers] = await Promise.all([this.snapshot(), this.peers()]);
      return AggregatorRegistry.aggregate([own, ...peers]).metrics();
    }
    const text = await this.registry.metrics();
    this.eventLoop.reset();
    return text;
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** Stops the event-loop sampler. */
  close(): void {
    this.eventLoop.disable();
  }
}
