/** The markdown of a bench run: ready to paste into docs/performance.md. */
import type { BenchReport, TargetSummary } from '../run.ts';

const KiB = 1024;
const MiB = 1024 * KiB;

function num(value: number | null | undefined, digits = 0): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function ratio(a: number | null | undefined, b: number | null | undefined): number | null {
  if (a === null || a === undefined || b === null || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0) return null;
  return a / b;
}

function times(value: number | null): string {
  return value === null ? '—' : `${value.toFixed(2)}x`;
}

function percent(value: number | null | undefined): string {
  return value === null || value === undefined || !Number.isFinite(value) ? '—' : `${(value * 100).toFixed(1)} %`;
}

function errors(summary: TargetSummary['summary']): string {
  if (!summary) return '—';
  const entries = Object.entries(summary.errors);
  return entries.length === 0 ? '0' : entries.map(([status, count]) => `${status}: ${count}`).join(', ');
}

function check(ok: boolean | null): string {
  return ok === null ? 'not measured' : ok ? 'met' : 'NOT met';
}

/** "31 vs 15 ms (target ≤ 2x the peer's): NOT met" for a target on the service's p99 against the peer's. */
function p99Against(service: TargetSummary, peer: TargetSummary | null, factor: number): string {
  const ok = peer?.summary ? service.summary!.p99 <= factor * peer.summary.p99 : null;
  return `${num(service.summary!.p99)} vs ${num(peer?.summary?.p99)} ms (target ≤ ${factor}x the peer's): ${check(ok)}`;
}

function sizeLabel(bytes: number): string {
  return bytes >= MiB ? `${bytes / MiB} MiB` : `${bytes / KiB} KiB`;
}

const SCENARIO_TITLES: Record<string, string> = {
  screenshot: 'screenshot burst (256 KiB multipart, 64 in flight)',
  'screenshot-2mib': '2 MiB multipart, 16 in flight',
  log: 'log stream (8 KiB JSON base64, 32 in flight)',
  mixed: 'mixed fleet (90% 256 KiB-2 MiB, 10% 32 MiB, 32 in flight)',
  'large-multipart': 'large multipart (100 MiB, 4 in flight)',
  'large-json': 'large JSON data URI (100 MiB, 4 in flight)',
  'screenshot-image': 'screenshot burst of real PNGs (1280x720, 256 KiB multipart, 64 in flight)',
};

export function renderMarkdown(report: BenchReport): string {
  const m = report.machine;
  const lines: string[] = [];
  const out = (line = '') => lines.push(line);
  const find = (scenario: string, driver: string, target: string) =>
    report.throughput.find((row) => row.scenario === scenario && row.driver === driver && row.target === target && row.summary) ?? null;

  out(`#### Results of ${report.startedAt.slice(0, 16).replace('T', ' ')} UTC`);
  out();
  out(
    `Machine: ${m.cpu}, ${m.cores} cores, ${m.ramGiB.toFixed(1)} GiB RAM, Node ${m.node}, ${m.kernel}; ` +
      `load average ${m.loadAverageStart.map((v) => v.toFixed(2)).join(' / ')} at the start, ${m.loadAverageEnd.map((v) => v.toFixed(2)).join(' / ')} at the end. ` +
      `Commit ${m.commit}.`,
  );
  out(
    `Run: \`npm run bench${report.argv.length ? ` -- ${report.argv.join(' ')}` : ''}\`, ${report.settings.rounds} round(s) of alternation, ` +
      `${report.settings.phaseSeconds} s timed phases, ${report.settings.largeCount.fs} (fs) / ${report.settings.largeCount.s3} (s3) uploads per large phase; ` +
      `took ${Math.round(report.seconds)} s. Service settings: defaults, except the per-key rate limit (raised so it never answers 429).`,
  );
  for (const note of report.notes) out(`Note: ${note}`);
  out();

  if (report.throughput.length > 0) {
    out('**Throughput.** MB/s counts file bytes (10^6 bytes), not wire bytes. Latency is from sending the request to the whole answer, successful uploads only. CPU s/GB and peak RSS are of the process under test (the server; for "direct to S3", the uploading client); PostgreSQL and RGW are not counted.');
    out();
    out('| scenario | driver | target | uploads/s | MB/s | p50 ms | p95 ms | p99 ms | errors | CPU s/GB | peak RSS MB |');
    out('|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|');
    for (const row of report.throughput) {
      const s = row.summary;
      if (!s) {
        out(`| ${row.scenario} | ${row.driver} | ${row.label} | ${row.skipped ?? 'no result'} | | | | | | | |`);
        continue;
      }
      out(
        `| ${row.scenario} | ${row.driver} | ${row.label} | ${num(s.uploadsPerSecond, s.uploadsPerSecond < 10 ? 2 : 0)} | ${num(s.mbPerSecond, 1)} | ` +
          `${num(s.p50)} | ${num(s.p95)} | ${num(s.p99)} | ${errors(s)} | ${num(row.cpuSecondsPerGB, 1)} | ${num(row.peakRssMB)} |`,
      );
    }
    out();

    out('**Service / reference** (same run, phases alternating service and references in rounds, the order turned around every round). Storage reference: the file sink on fs, lib-storage straight to S3 on s3.');
    out();
    out('| scenario | driver | MB/s ÷ HTTP sink | MB/s ÷ storage reference | uploads/s ÷ Fastify peer | p99: service / peer |');
    out('|---|---|---:|---:|---:|---|');
    const scenarios = [...new Set(report.throughput.map((row) => row.scenario))];
    for (const driver of report.settings.drivers) {
      for (const scenario of scenarios) {
        const service = find(scenario, driver, 'service');
        if (!service) continue;
        // The HTTP sink does not depend on the driver; it is measured once (in the fs group when fs runs).
        const sink = find(scenario, driver, 'sink') ?? report.throughput.find((row) => row.scenario === scenario && row.target === 'sink' && row.summary) ?? null;
        const storage = find(scenario, driver, driver === 'fs' ? 'file' : 'direct');
        const peer = find(scenario, driver, 'peer');
        out(
          `| ${scenario} | ${driver} | ${times(ratio(service.summary!.mbPerSecond, sink?.summary?.mbPerSecond))} | ` +
            `${times(ratio(service.summary!.mbPerSecond, storage?.summary?.mbPerSecond))} | ` +
            `${times(ratio(service.summary!.uploadsPerSecond, peer?.summary?.uploadsPerSecond))} | ` +
            `${num(service.summary!.p99)} / ${num(peer?.summary?.p99)} ms |`,
        );
      }
    }
    out();

    const s3Counted = report.phases.filter((phase) => phase.s3Requests !== undefined && phase.result && phase.result.ok > 0);
    if (s3Counted.length > 0) {
      out("**S3 requests per 1,000 uploads** (the service, from its `media_s3_requests_total` around each phase, so thumbnails of an earlier phase's images made meanwhile count too; lib-storage and the peer send at least one PutObject per file).");
      out();
      out('| scenario | requests per 1,000 uploads | uploads |');
      out('|---|---:|---:|');
      for (const scenario of [...new Set(s3Counted.map((phase) => phase.scenario))]) {
        const phases = s3Counted.filter((phase) => phase.scenario === scenario);
        const uploads = phases.reduce((sum, phase) => sum + phase.result!.ok, 0);
        const requests = phases.reduce((sum, phase) => sum + phase.s3Requests!, 0);
        out(`| ${scenario} | ${num((requests / uploads) * 1000)} | ${num(uploads)} |`);
      }
      out();
    }

    out('**Targets** (reported, not asserted):');
    out();
    for (const driver of report.settings.drivers) {
      for (const scenario of ['large-multipart', 'large-json']) {
        const service = find(scenario, driver, 'service');
        const storage = find(scenario, driver, driver === 'fs' ? 'file' : 'direct');
        const r = ratio(service?.summary?.mbPerSecond, storage?.summary?.mbPerSecond);
        if (!service) continue;
        out(`- ${scenario}, ${driver}: ${percent(r)} of the direct-to-storage reference (target ≥ 85 %): ${check(r === null ? null : r >= 0.85)}`);
      }
      const shot = find('screenshot', driver, 'service');
      const shotPeer = find('screenshot', driver, 'peer');
      if (shot) {
        const r = ratio(shot.summary?.uploadsPerSecond, shotPeer?.summary?.uploadsPerSecond);
        out(
          `- screenshot, ${driver}: ${times(r)} the Fastify peer's uploads/s (target ≥ 1.0x, aim 1.5x): ${check(r === null ? null : r >= 1)}; ` +
            `p99 ${p99Against(shot, shotPeer, 1.5)}`,
        );
      }
      const large = find('screenshot-2mib', driver, 'service');
      const largePeer = find('screenshot-2mib', driver, 'peer');
      if (large) {
        const r = ratio(large.summary?.uploadsPerSecond, largePeer?.summary?.uploadsPerSecond);
        out(
          `- 2 MiB multipart, ${driver}: ${times(r)} the Fastify peer's uploads/s (target ≥ 1.0x): ${check(r === null ? null : r >= 1)}; ` +
            `p99 ${p99Against(large, largePeer, 1.5)}`,
        );
      }
      // CPU per GB of the service process, no higher than the peer's, in every multipart row.
      for (const scenario of ['screenshot', 'screenshot-2mib', 'mixed', 'large-multipart']) {
        const service = find(scenario, driver, 'service');
        const peer = find(scenario, driver, 'peer');
        if (!service || !peer) continue;
        const ok = service.cpuSecondsPerGB === null || peer.cpuSecondsPerGB === null ? null : service.cpuSecondsPerGB <= peer.cpuSecondsPerGB;
        out(`- CPU s/GB, ${scenario}, ${driver}: ${num(service.cpuSecondsPerGB, 1)} vs the peer's ${num(peer.cpuSecondsPerGB, 1)} (target no higher): ${check(ok)}`);
      }
    }
    const log = find('log', 'fs', 'service');
    const logPeer = find('log', 'fs', 'peer');
    if (log) {
      const r = ratio(log.summary?.uploadsPerSecond, logPeer?.summary?.uploadsPerSecond);
      const sink = ratio(log.summary?.uploadsPerSecond, find('log', 'fs', 'file')?.summary?.uploadsPerSecond);
      out(
        `- log stream, fs: ${num(log.summary!.uploadsPerSecond)} uploads/s (target ≥ 2,000/s): ${check(log.summary!.uploadsPerSecond >= 2000)}; ` +
          `${times(r)} the Fastify peer on the same JSON bodies (target ≥ 0.8x): ${check(r === null ? null : r >= 0.8)}; ` +
          `${times(sink)} the file sink, an fsync per file (target ≥ 1.0x): ${check(sink === null ? null : sink >= 1)}; p99 ${p99Against(log, logPeer, 2)}`,
      );
    }
    const logS3 = find('log', 's3', 'service');
    if (logS3) {
      const r = ratio(logS3.summary?.uploadsPerSecond, find('log', 's3', 'direct')?.summary?.uploadsPerSecond);
      out(`- log stream, s3: ${times(r)} lib-storage's PutObject per file (target ≥ 1.0x): ${check(r === null ? null : r >= 1)}`);
    }
    out();
    const partial = report.throughput.filter((row) => row.note || (row.skipped && row.summary));
    if (partial.length > 0) {
      out('Partial rows:');
      out();
      for (const row of partial) out(`- ${row.scenario} ${row.driver} ${row.label}: ${[row.note, row.skipped].filter(Boolean).join('; ')}`);
      out();
    }
    const samples = report.throughput.filter((row) => row.errorSamples.length > 0);
    if (samples.length > 0) {
      out('Error samples:');
      out();
      for (const row of samples) out(`- ${row.scenario} ${row.driver} ${row.label}: \`${row.errorSamples[0]!.replace(/`/g, "'").replace(/\s+/g, ' ').slice(0, 200)}\``);
      out();
    }
  }

  if (report.memory.length > 0) {
    out('**Memory.** Each row on a freshly started process: idle RSS is the median over 1.5 s before the upload, peak RSS sampled every 50 ms.');
    out();
    out('| row | driver | process | idle RSS MB | peak RSS MB | rise MB | uploads | errors | target |');
    out('|---|---|---|---:|---:|---:|---:|---|---|');
    for (const row of report.memory) {
      const isService = row.target === 'service';
      const target = row.skipped
        ? row.skipped
        : row.scenario === 'memory-250mb'
          ? `rise < 64 MB: ${isService ? check(row.riseMB < 64) : '(reference)'}`
          : `peak < 400 MB: ${isService ? check(row.peakRssMB < 400) : '(reference)'}`;
      const label = row.scenario === 'memory-250mb' ? 'one 250 MB multipart upload' : '64 in flight × 2 MiB';
      out(
        `| ${label} | ${row.driver} | ${isService ? 'service' : 'Fastify peer'} | ${num(row.idleRssMB)} | ${num(row.peakRssMB)} | ${num(row.riseMB)} | ` +
          `${row.summary ? num(row.summary.uploads) : '—'} | ${errors(row.summary)} | ${target} |`,
      );
    }
    out();
  }

  if (report.admission.length > 0) {
    out('**Admission** (UPLOAD_CONCURRENCY and UPLOAD_QUEUE_LIMIT, defaults unless the run line says otherwise): 256 clients in flight with 2 MiB multipart uploads; a client answered 503 waits its Retry-After, then sends again. The peer has no admission control.');
    out();
    out('| driver | process | uploads/s | MB/s | 503 share | 503 without Retry-After | p50 / p99 of admitted, ms | other errors | peak RSS MB |');
    out('|---|---|---:|---:|---:|---:|---|---|---:|');
    for (const row of report.admission) {
      const s = row.summary;
      if (!s) {
        out(`| ${row.driver} | ${row.target} | ${row.skipped ?? 'no result'} | | | | | | |`);
        continue;
      }
      const other = Object.entries(s.errors).filter(([status]) => status !== '503');
      out(
        `| ${row.driver} | ${row.target === 'service' ? 'service' : 'Fastify peer'} | ${num(s.uploadsPerSecond, 1)} | ${num(s.mbPerSecond, 1)} | ${percent(s.busyShare)} | ` +
          `${s.busyWithoutRetryAfter} | ${num(s.p50)} / ${num(s.p99)} | ${other.length ? other.map(([k, v]) => `${k}: ${v}`).join(', ') : '0'} | ${num(row.peakRssMB)} |`,
      );
    }
    out();
  }

  if (report.sweep.length > 0) {
    out('**Concurrency sweep** (256 KiB multipart, service with default admission gate; 503 answers honour Retry-After):');
    out();
    out('| driver | in flight | uploads/s | MB/s | p50 ms | p99 ms | 503 share | peak RSS MB |');
    out('|---|---:|---:|---:|---:|---:|---:|---:|');
    for (const row of report.sweep) {
      const s = row.summary;
      if (!s) {
        out(`| ${row.driver} | ${row.concurrency} | ${row.skipped ?? 'no result'} | | | | | |`);
        continue;
      }
      out(`| ${row.driver} | ${row.concurrency} | ${num(s.uploadsPerSecond)} | ${num(s.mbPerSecond, 1)} | ${num(s.p50)} | ${num(s.p99)} | ${percent(s.busyShare)} | ${num(row.peakRssMB)} |`);
    }
    out();
  }

  const scaling = (report.scaling ?? []).map((row) => ({ ...row, setting: row.setting ?? 'HTTP_PROCESSES', value: row.value ?? String(row.processes) }));
  for (const setting of [...new Set(scaling.map((row) => row.setting))]) {
    const rows = scaling.filter((row) => row.setting === setting);
    const baseline = rows[0]!.value;
    out(`**${setting}** (the same workloads against services started side by side with ${setting} = ${[...new Set(rows.map((row) => row.value))].join(', ')}, phases alternating; ${m.cores} cores shared by the services, PostgreSQL and the load client; CPU and RSS of each service's whole process tree):`);
    out();
    out(`| driver | workload | ${setting} | uploads/s | MB/s | vs ${baseline} | p50 / p99 ms | cores busy | errors | peak RSS MB |`);
    out('|---|---|---:|---:|---:|---:|---|---:|---|---:|');
    for (const row of rows) {
      const s = row.summary;
      if (!s) {
        out(`| ${row.driver} | ${SCENARIO_TITLES[row.scenario]} | ${row.value} | ${row.skipped ?? 'no result'} | | | | | | |`);
        continue;
      }
      const first = rows.find((other) => other.driver === row.driver && other.scenario === row.scenario && other.value === baseline)?.summary;
      out(
        `| ${row.driver} | ${SCENARIO_TITLES[row.scenario]} | ${row.value} | ${num(s.uploadsPerSecond)} | ${num(s.mbPerSecond, 1)} | ${times(ratio(s.uploadsPerSecond, first?.uploadsPerSecond))} | ` +
          `${num(s.p50)} / ${num(s.p99)} | ${num(row.coresBusy, 2)} | ${errors(s)} | ${num(row.peakRssMB)} |`,
      );
    }
    out();
  }

  const charts = report.files.charts;
  if (charts.length > 0) {
    for (const chart of charts) out(`![${chart.includes('sweep') ? 'throughput and p99 against concurrency' : 'RSS over time'}](${chart})`);
    out();
  }

  if (report.pool) {
    const p = report.pool;
    out(`**Worker pool vs inline** (hashing + sniffing one body, project modules; ${p.threads} worker threads; ${p.inFlight} bodies in flight; bodies fed in 512 KiB chunks):`);
    out();
    out('| body | mode | one body alone, median µs | bodies/s, 8 in flight | MB/s | main-thread µs per body |');
    out('|---|---|---:|---:|---:|---:|');
    for (const row of p.rows) {
      out(`| ${sizeLabel(row.size)} | ${row.mode} | ${num(row.aloneMedianUs, 1)} | ${num(row.bodiesPerSecond)} | ${num(row.mbPerSecond)} | ${num(row.mainThreadUsPerBody, 1)} |`);
    }
    out();
    out(`Winner: ${p.winners.map((w) => `${sizeLabel(w.size)}: **${w.winner}** (${w.byThroughput})`).join('; ')}.`);
    out();
  }
  if (report.processLogs.length > 0) {
    out('**Logged by the processes under test** (warn and above, or stderr):');
    out();
    for (const entry of report.processLogs) {
      out(`- ${entry.process}: ${entry.count} line(s); first: \`${entry.first[0]!.replace(/`/g, "'").slice(0, 300)}\``);
    }
    out();
  }
  return `${lines.join('\n')}\n`;
}
