import t from 'tap';
import { Metrics } from '../../src/observability/metrics.ts';

// HTTP_PROCESSES > 1: the process a scrape reached answers for all (src/start/service-process.ts feeds it the others' snapshots).

function sample(text: string, name: string): number | null {
  const match = new RegExp(`^${name.replace(/[{}"\\/]/g, '\\$&')} (\\S+)$`, 'm').exec(text);
  return match ? Number(match[1]) : null;
}

t.test('a scrape with peers sums counters, histograms and upload gauges, averages pool use, keeps the worst event-loop delay', async (t) => {
  const here = new Metrics();
  const there = new Metrics();
  t.teardown(() => {
    here.close();
    there.close();
  });
  here.observe({ gate: { running: 2, waiting: 1 }, pool: { utilization: 0.2 } });
  there.observe({ gate: { running: 3, waiting: 0 }, pool: { utilization: 0.6 } });
  here.recordResponse('/healthz', 200, null);
  there.recordResponse('/healthz', 200, null);
  there.recordResponse('/healthz', 200, null);
  here.uploadDuration.observe({ route: 'multipart', outcome: 'created' }, 0.3);
  there.uploadDuration.observe({ route: 'multipart', outcome: 'created' }, 7);
  // A blocked event loop, seen by both samplers; `here` forgets it with the scrape below, `there` keeps it.
  await new Promise((resolve) => setTimeout(resolve, 50)); // the samplers are running
  const blockedUntil = Date.now() + 300;
  while (Date.now() < blockedUntil) { /* spin */ }
  await new Promise((resolve) => setTimeout(resolve, 50));

  const alone = await here.render();
  t.equal(sample(alone, 'media_metrics_processes'), 1, 'without peers: this process alone');

  const theirs = await there.snapshot();
  // A shorter block that only `here` still counts: summing or averaging would differ from the worst.
  const againUntil = Date.now() + 120;
  while (Date.now() < againUntil) { /* spin */ }
  await new Promise((resolve) => setTimeout(resolve, 50));
  here.includePeers(async () => [theirs]);
  const text = await here.render();
  t.equal(sample(text, 'media_metrics_processes'), 2);
  t.equal(sample(text, 'media_http_responses_total{route="/healthz",status="200"}'), 3, 'counters summed');
  t.equal(sample(text, 'media_upload_duration_seconds_count{route="multipart",outcome="created"}'), 2, 'histograms summed');
  t.equal(sample(text, 'media_upload_duration_seconds_bucket{le="0.5",route="multipart",outcome="created"}'), 1, 'bucket by bucket');
  t.equal(sample(text, 'media_uploads_in_flight'), 5, 'uploads in flight summed');
  t.equal(sample(text, 'media_uploads_queued'), 1);
  t.equal(sample(text, 'media_worker_pool_utilization'), 0.4, 'pool use averaged');
  const theirMax = theirs.find((metric) => metric.name === 'media_event_loop_delay_max_seconds')!.values[0]!.value;
  t.ok(theirMax >= 0.25, 'the blocked process saw the delay');
  t.equal(sample(text, 'media_event_loop_delay_max_seconds'), theirMax, 'the worst process\'s event-loop delay, neither summed nor averaged');
});
