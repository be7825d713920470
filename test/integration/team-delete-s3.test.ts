import t from 'tap';
import { teamDeleteFlow } from './team-delete-suite.ts';

// Against the real S3-compatible server (Ceph RGW).
await teamDeleteFlow(t, 's3');
