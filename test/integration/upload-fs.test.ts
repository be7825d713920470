import t from 'tap';
import { uploadSuite } from './upload-suite.ts';

await uploadSuite(t, 'fs');
