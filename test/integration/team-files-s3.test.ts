import t from 'tap';
import { teamFilesSuite } from './team-files-suite.ts';

// Against the real S3-compatible server (Ceph RGW).
await teamFilesSuite(t, 's3');
