/** What BackgroundJobs needs of a job's owner: the timer of its JobRunner started and stopped. */
export interface BackgroundJob {
  start(): void;
  /** Stops the timer and waits for a run in progress. */
  stop(): Promise<void>;
}

/** The owners of the server's jobs (JOBS in ./jobs.ts), as Backend's services name them. */
export interface BackgroundJobOwners {
  folderSweeper: BackgroundJob;
  subscriptionJob: BackgroundJob;
  crashSweeper: BackgroundJob;
  expiredRows: BackgroundJob;
  teamDeletion: BackgroundJob;
  mail: BackgroundJob;
  thumbnailer: BackgroundJob;
}

/**
 * The server's background jobs, started together once the routes are mounted and stopped together at shutdown (the CLI starts
 * none). The served-traffic flush is not here: its counter belongs to the server and starts when it is made.
 */
export class BackgroundJobs {
  private readonly jobs: BackgroundJob[];

  constructor(owners: BackgroundJobOwners) {
    this.jobs = [owners.folderSweeper, owners.subscriptionJob, owners.crashSweeper, owners.expiredRows, owners.teamDeletion, owners.mail, owners.thumbnailer];
  }

  start(): void {
    for (const job of this.jobs) job.start();
  }

  async stop(): Promise<void> {
    for (const job of this.jobs) await job.stop();
  }
}
