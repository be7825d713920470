import t from 'tap';
import { uploadSuite } from './upload-suite.ts';

// Against the real S3-compatible server (Ceph RGW) that .ci/run starts.
await uploadSuite(t, 's3');
