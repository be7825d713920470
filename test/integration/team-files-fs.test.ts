import t from 'tap';
import { teamFilesSuite } from './team-files-suite.ts';

await teamFilesSuite(t, 'fs');
